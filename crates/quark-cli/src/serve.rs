//! `quark serve`: an hq-interop file server.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, bail};
use clap::Args;
use quark::tls::{self, Identity};
use quark::{Endpoint, TransportConfig};

use crate::options::TransportArgs;

/// Serve files over hq-interop (HTTP/0.9 over QUIC).
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
    #[command(flatten)]
    pub(crate) transport: TransportArgs,
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
    let mut config = tls::server_config_with(&identity, &[quark::hq::ALPN], &suites)?;
    let transport: TransportConfig = args.transport.transport_config();
    config.transport = Arc::new(transport);
    config.retry = args.retry;
    let root = args.root.canonicalize()?;
    if args.workers > 1 {
        return serve_workers(config, &args, root).await;
    }
    let endpoint = Endpoint::server(config, args.listen)
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    endpoint.set_busy_poll(args.transport.busy_poll());
    eprintln!(
        "serving {} on {} (hq-interop)",
        args.root.display(),
        endpoint.local_addr()?
    );
    loop {
        tokio::select! {
            conn = endpoint.accept() => {
                let Some(conn) = conn else { break };
                tracing::info!(remote = %conn.remote_address(), "connection");
                tokio::spawn(quark::hq::serve_connection(conn, root.clone()));
            }
            _ = tokio::signal::ctrl_c() => {
                endpoint.close(0, b"server shutting down");
                break;
            }
        }
    }
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), endpoint.wait_idle()).await;
    Ok(())
}

/// `--workers N`: every connection is served on the worker thread that owns it.
async fn serve_workers(
    config: quark::ServerConfig,
    args: &ServeArgs,
    root: PathBuf,
) -> anyhow::Result<()> {
    let group = Endpoint::server_multi(config, args.listen, usize::from(args.workers))
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    group.set_busy_poll(args.transport.busy_poll());
    eprintln!(
        "serving {} on {} (hq-interop, {} workers)",
        args.root.display(),
        group.local_addr(),
        args.workers
    );
    group.serve(move |conn| {
        tracing::info!(remote = %conn.remote_address(), worker = ?conn.worker(), "connection");
        quark::hq::serve_connection(conn, root.clone())
    });
    let _ = tokio::signal::ctrl_c().await;
    let _ = tokio::time::timeout(
        std::time::Duration::from_secs(2),
        group.shutdown(0, b"server shutting down"),
    )
    .await;
    Ok(())
}
