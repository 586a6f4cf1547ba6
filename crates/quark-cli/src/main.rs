//! The `quark` command. `main` only parses and dispatches: each subcommand
//! lives in its own module.

use clap::{Parser, Subcommand};

mod access_log;
mod agent;
mod bench;
mod fleet;
mod get;
mod get_http;
mod impair;
mod lab;
mod link;
mod options;
mod probe;
mod relay;
mod relay_watch;
mod report;
mod serve;
mod serve_tcp;
mod signals;
mod timer;
mod xdp;

/// quark: a QUIC v1 stack and its performance lab.
#[derive(Debug, Parser)]
#[command(name = "quark", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve files over hq-interop (HTTP/0.9 over QUIC).
    Serve(serve::ServeArgs),
    /// Fetch URLs over hq-interop, in parallel on one connection.
    Get(get::GetArgs),
    /// Measure protocols: goodput, latency, requests/s, CPU and memory.
    Bench(Box<bench::Args>),
    /// Run lab servers and clients for `quark bench` on another host (TLS
    /// control channel authenticated with a shared token).
    Agent(agent::Args),
    /// Render a results file again (table, HTML).
    Report(report::Args),
    /// Attack a server class by class and judge whether it stays up (memory,
    /// legitimate fetches, error codes).
    Probe(probe::Args),
    /// Relay UDP through an emulated link (delay, loss, reordering, rate, ...).
    Relay(relay::Args),
    /// An emulated layer-3 link between two network namespaces (`link up`, `link down`).
    Link(link::Args),
    /// The AF_XDP test bed: two namespaces joined by veth, transfers across them.
    Xdp(xdp::XdpArgs),
    /// Internal: a lab server process (driven by `quark bench`).
    #[command(hide = true)]
    LabServer(quark_lab::child::ServerArgs),
    /// Internal: a lab client process (driven by `quark bench`).
    #[command(hide = true)]
    LabClient(quark_lab::child::ClientArgs),
    /// Internal: write a lab certificate and key (DER), for running the lab
    /// processes by hand (e.g. under callgrind: `scripts/instructions.sh`).
    #[command(hide = true)]
    LabCert(lab::CertArgs),
}

/// Run an async subcommand; any error becomes one line on stderr and exit code 1.
fn run_async(fut: impl std::future::Future<Output = anyhow::Result<()>>) -> i32 {
    init_logging();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return 1;
        }
    };
    match runtime.block_on(fut) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("error: {e:#}");
            1
        }
    }
}

/// Logs go to stderr, filtered by `RUST_LOG` (default: warnings).
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

fn main() {
    let cli = Cli::parse();
    let code = match cli.command {
        Command::Serve(args) => run_async(serve::run(args)),
        Command::Get(args) => run_async(get::run(args)),
        // The orchestrator handles SIGINT / SIGTERM itself (keeping partial results).
        Command::Bench(args) => bench::run(*args),
        Command::Agent(args) => {
            signals::exit_on_termination();
            run_async(agent::run(args))
        }
        Command::Report(args) => report::run(args),
        Command::Probe(args) => probe::run(args),
        Command::Relay(args) => relay::run(args),
        Command::Link(args) => link::run(args),
        Command::Xdp(args) => run_async(xdp::run(args)),
        Command::LabServer(args) => lab::server(args),
        Command::LabClient(args) => lab::client(args),
        Command::LabCert(args) => lab::cert(args),
    };
    std::process::exit(code);
}
