//! `quinn-hq`: an hq-interop client and server on quinn, a reference peer for
//! quark's interop tests.
//!
//! ```text
//! quinn-hq server --listen ADDR --root DIR --cert F --key F [--cipher ...] [--retry]
//! quinn-hq client URL... -o DIR (--ca F | --insecure) [--cipher ...]
//! ```
//!
//! `RUST_LOG` (e.g. `quinn_proto=trace`) logs quinn's packets to stderr.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use quark_interop::quinn_hq::tls::Cipher;
use quark_interop::quinn_hq::{client, server};

#[derive(Parser, Debug)]
#[command(name = "quinn-hq", about = "hq-interop client and server on quinn")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Serve the files under a directory until killed.
    Server {
        /// UDP address to listen on.
        #[arg(long, default_value = "127.0.0.1:4433")]
        listen: SocketAddr,
        /// Directory to serve.
        #[arg(long)]
        root: PathBuf,
        /// Certificate chain (PEM).
        #[arg(long)]
        cert: PathBuf,
        /// Private key (PEM).
        #[arg(long)]
        key: PathBuf,
        /// TLS 1.3 cipher suites to accept (default: all).
        #[arg(long, value_enum, value_delimiter = ',')]
        cipher: Vec<Cipher>,
        /// Validate client addresses with a Retry first.
        #[arg(long)]
        retry: bool,
        /// Accept 0-RTT from resuming clients.
        #[arg(long = "0rtt")]
        zero_rtt: bool,
    },
    /// Fetch URLs in parallel on one connection.
    Client {
        /// https://host:port/path URLs, all on the same server.
        #[arg(required = true)]
        urls: Vec<String>,
        /// Output directory.
        #[arg(short, long, default_value = ".")]
        output: PathBuf,
        /// Trust the certificates in this PEM file.
        #[arg(long, required_unless_present = "insecure")]
        ca: Option<PathBuf>,
        /// Do not verify the server certificate.
        #[arg(long, conflicts_with = "ca")]
        insecure: bool,
        /// TLS 1.3 cipher suites to offer (default: all).
        #[arg(long, value_enum, value_delimiter = ',')]
        cipher: Vec<Cipher>,
        /// Give up connecting after this many seconds.
        #[arg(long, default_value_t = 10)]
        connect_timeout: u64,
        /// Fetch the first URL over a connection of its own, the rest over a
        /// second that resumes its session; the summary says whether it did.
        #[arg(long)]
        resume: bool,
        /// With --resume: send the second connection's requests in 0-RTT.
        #[arg(long = "0rtt", requires = "resume")]
        zero_rtt: bool,
        /// Start a 1-RTT key update once the handshake is confirmed (the
        /// interop runner's keyupdate case).
        #[arg(long)]
        key_update: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if std::env::var_os("RUST_LOG").is_some() {
        // quinn's own account of each packet (it writes no qlog): with
        // RUST_LOG=quinn_proto=trace, what a failed interop cell's peer did.
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .init();
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("quinn-hq: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Server {
                listen,
                root,
                cert,
                key,
                cipher,
                retry,
                zero_rtt,
            } => {
                server::run(server::ServerOptions {
                    listen,
                    root,
                    cert,
                    key,
                    ciphers: cipher,
                    retry,
                    zero_rtt,
                })
                .await
            }
            Command::Client {
                urls,
                output,
                ca,
                insecure: _,
                cipher,
                connect_timeout,
                resume,
                zero_rtt,
                key_update,
            } => {
                client::run(client::ClientOptions {
                    urls,
                    out: output,
                    ca,
                    ciphers: cipher,
                    connect_timeout: Duration::from_secs(connect_timeout),
                    resume,
                    zero_rtt,
                    key_update,
                })
                .await
            }
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("quinn-hq: {e:#}");
            ExitCode::FAILURE
        }
    }
}
