//! `quark serve`: a file server over hq-interop, or HTTP/3 with `--h3`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use quark::tls::{self, Identity};
use quark::{Endpoint, TransportConfig};
use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio::sync::watch;

use crate::options::TransportArgs;

/// Serve files over hq-interop (HTTP/0.9 over QUIC) or HTTP/3.
#[derive(Args, Debug)]
pub(crate) struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:4433")]
    pub(crate) listen: SocketAddr,
    /// Directory to serve files from.
    #[arg(long)]
    pub(crate) root: PathBuf,
    /// Certificate chain (PEM). Without it a self-signed certificate is made.
    #[arg(long, requires = "key")]
    pub(crate) cert: Option<PathBuf>,
    /// Private key (PEM).
    #[arg(long, requires = "cert")]
    pub(crate) key: Option<PathBuf>,
    /// Write the (self-signed) certificate here, for clients' `--ca`.
    #[arg(long)]
    pub(crate) write_cert: Option<PathBuf>,
    /// Require address validation with a Retry before accepting connections.
    #[arg(long)]
    pub(crate) retry: bool,
    /// Worker threads, each with its own socket on the address (SO_REUSEPORT)
    /// serving its own connections; 1 serves from the main runtime.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=255))]
    pub(crate) workers: u16,
    /// Speak HTTP/3 (ALPN h3) instead of hq-interop.
    #[arg(long)]
    pub(crate) h3: bool,
    /// Memory the connections may hold in all (512MiB, 2GiB, ...): past it
    /// new connections are refused and existing ones keep what they have.
    #[arg(long, default_value = "512MiB", value_parser = parse_memory)]
    pub(crate) max_memory: u64,
    /// With --h3: Cache-Control max-age of the files served, in seconds
    /// (0: no-cache, browsers revalidate each time).
    #[arg(long, default_value_t = 300)]
    pub(crate) cache_max_age: u64,
    /// On SIGTERM, how long in-flight HTTP/3 requests may take to finish
    /// after GOAWAY before the server closes anyway, in seconds.
    #[arg(long, default_value_t = 30)]
    pub(crate) drain_timeout: u64,
    #[command(flatten)]
    pub(crate) transport: TransportArgs,
}

/// The ALPN and name of the protocol `--h3` selects.
pub(crate) fn protocol(h3: bool) -> (&'static [u8], &'static str) {
    if h3 {
        (quark_h3::ALPN, "HTTP/3")
    } else {
        (quark::hq::ALPN, "hq-interop")
    }
}

/// A file server receives only requests: receive windows of 64 KiB per
/// stream and 256 KiB per connection (fixed, not grown) bound what a client
/// can make it buffer, where the transport's defaults (up to 16 MiB per
/// stream) suit uploads.
fn file_server_transport(args: &TransportArgs) -> TransportConfig {
    const STREAM: u64 = 64 * 1024;
    const CONNECTION: u64 = 256 * 1024;
    TransportConfig {
        stream_receive_window: STREAM,
        stream_receive_window_max: STREAM,
        receive_window: CONNECTION,
        receive_window_max: CONNECTION,
        ..args.transport_config()
    }
}

fn parse_memory(s: &str) -> Result<u64, String> {
    quark_lab::size::parse_size(s).map_err(|e| e.to_string())
}

/// The code connections close with at shutdown: H3_NO_ERROR for HTTP/3.
fn close_code(h3: bool) -> u64 {
    if h3 { quark_h3::error::H3_NO_ERROR } else { 0 }
}

/// What every connection is served with, and the drain signal (SIGTERM).
#[derive(Clone)]
struct Files {
    root: PathBuf,
    h3: bool,
    options: quark_h3::files::FileOptions,
    /// Turns true on SIGTERM; closed once every HTTP/3 connection has ended
    /// (each holds a receiver).
    drain: Arc<watch::Sender<bool>>,
}

impl Files {
    /// Serves one connection's requests; an HTTP/3 one drains on SIGTERM.
    fn serve(&self, conn: quark::Connection) -> impl Future<Output = ()> + Send + use<> {
        let root = self.root.clone();
        // Subscribed now, not when first polled: the drain waits for this one.
        let h3 = self
            .h3
            .then(|| (self.options.clone(), self.drain.subscribe()));
        async move {
            match h3 {
                Some((options, drain)) => {
                    quark_h3::files::serve_files(conn, root, options, Some(drain)).await
                }
                None => quark::hq::serve_connection(conn, root).await,
            }
        }
    }

    /// SIGTERM: GOAWAY on every HTTP/3 connection, and a wait (at most
    /// `limit`) for them to finish their requests and close.
    async fn drain(&self, limit: Duration) {
        self.drain.send_replace(true);
        if tokio::time::timeout(limit, self.drain.closed())
            .await
            .is_err()
        {
            eprintln!("drain timeout: closing connections with requests in flight");
        }
    }
}

/// Resolves on SIGTERM.
async fn terminated(term: &mut Option<Signal>) {
    match term {
        Some(term) => {
            term.recv().await;
        }
        None => std::future::pending().await,
    }
}

pub(crate) async fn run(args: ServeArgs) -> anyhow::Result<()> {
    if !args.root.is_dir() {
        bail!("--root {}: not a directory", args.root.display());
    }
    let identity = match (&args.cert, &args.key) {
        (Some(cert), Some(key)) => Identity::from_pem_files(cert, key)?,
        _ => Identity::self_signed(&["localhost", "127.0.0.1", "::1"])?,
    };
    eprintln!(
        "certificate SHA-256 fingerprint: {}",
        identity.fingerprint()
    );
    if let Some(path) = &args.write_cert {
        std::fs::write(path, identity.cert_pem())
            .with_context(|| format!("--write-cert {}", path.display()))?;
    }
    let suites = args.transport.cipher_suites()?;
    let (alpn, name) = protocol(args.h3);
    let mut config = tls::server_config_with(&identity, &[alpn], &suites)?;
    config.transport = Arc::new(file_server_transport(&args.transport));
    config.retry = args.retry;
    config.memory = quark::MemoryBudget::new(args.max_memory as usize);
    let files = Files {
        root: args.root.canonicalize()?,
        h3: args.h3,
        options: quark_h3::files::FileOptions {
            cache_max_age: args.cache_max_age,
        },
        drain: Arc::new(watch::channel(false).0),
    };
    let mut term = signal(SignalKind::terminate()).ok();
    tokio::spawn(trim_heap());
    if args.workers > 1 {
        return serve_workers(config, &args, files, &mut term).await;
    }
    let endpoint =
        Endpoint::with_config(args.transport.endpoint_config(), Some(config), args.listen)
            .with_context(|| format!("cannot listen on {}", args.listen))?;
    endpoint.set_busy_poll(args.transport.busy_poll());
    eprintln!(
        "serving {} on {} ({name})",
        args.root.display(),
        endpoint.local_addr()?
    );
    loop {
        tokio::select! {
            conn = endpoint.accept() => {
                let Some(conn) = conn else { break };
                tracing::info!(remote = %conn.remote_address(), "connection");
                tokio::spawn(files.serve(conn));
            }
            _ = tokio::signal::ctrl_c() => {
                endpoint.close(close_code(args.h3), b"server shutting down");
                break;
            }
            () = terminated(&mut term) => {
                files.drain(Duration::from_secs(args.drain_timeout)).await;
                endpoint.close(close_code(args.h3), b"server shutting down");
                break;
            }
        }
    }
    let _ = tokio::time::timeout(Duration::from_secs(2), endpoint.wait_idle()).await;
    Ok(())
}

/// Every few seconds, give the heap's free pages back to the system: after a
/// peak of connections (or an attack) has gone, the RSS falls back instead of
/// staying at the peak. Costs well under a millisecond when little is free.
async fn trim_heap() {
    let mut tick = tokio::time::interval(Duration::from_secs(5));
    loop {
        tick.tick().await;
        quark_udp::heap::release_free_memory();
    }
}

/// `--workers N`: every connection is served on the worker thread that owns it.
async fn serve_workers(
    config: quark::ServerConfig,
    args: &ServeArgs,
    files: Files,
    term: &mut Option<Signal>,
) -> anyhow::Result<()> {
    let workers = usize::from(args.workers);
    let group = quark::WorkerGroup::bind(
        args.transport.endpoint_config(),
        config,
        args.listen,
        workers,
    )
    .with_context(|| format!("cannot listen on {}", args.listen))?;
    group.set_busy_poll(args.transport.busy_poll());
    eprintln!(
        "serving {} on {} ({}, {} workers)",
        args.root.display(),
        group.local_addr(),
        protocol(args.h3).1,
        args.workers
    );
    let h3 = args.h3;
    let served = files.clone();
    group.serve(move |conn| {
        tracing::info!(remote = %conn.remote_address(), worker = ?conn.worker(), "connection");
        served.serve(conn)
    });
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminated(term) => files.drain(Duration::from_secs(args.drain_timeout)).await,
    }
    let _ = tokio::time::timeout(
        Duration::from_secs(2),
        group.shutdown(close_code(h3), b"server shutting down"),
    )
    .await;
    Ok(())
}
