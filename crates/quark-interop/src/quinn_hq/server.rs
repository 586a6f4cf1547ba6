//! The quinn hq-interop file server.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, bail};

use super::request::{self, MAX_REQUEST};
use super::tls::{self, Cipher};

/// Application error code on streams whose request was refused.
const REFUSED: u32 = 0x10;

/// What `quinn-hq server` needs.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// UDP address to listen on.
    pub listen: SocketAddr,
    /// Directory to serve.
    pub root: PathBuf,
    /// Certificate chain (PEM).
    pub cert: PathBuf,
    /// Private key (PEM).
    pub key: PathBuf,
    /// TLS 1.3 suites to accept; all when empty.
    pub ciphers: Vec<Cipher>,
    /// Validate client addresses with a Retry first.
    pub retry: bool,
    /// Accept 0-RTT from resuming clients, and answer their early requests.
    pub zero_rtt: bool,
}

/// Serves until the process is killed.
pub async fn run(opts: ServerOptions) -> anyhow::Result<()> {
    if !opts.root.is_dir() {
        bail!("--root {}: not a directory", opts.root.display());
    }
    let root: Arc<Path> = opts.root.canonicalize()?.into();
    let config = tls::server_config(&opts.cert, &opts.key, &opts.ciphers, opts.zero_rtt)?;
    let endpoint = quinn::Endpoint::server(config, opts.listen)
        .with_context(|| format!("cannot listen on {}", opts.listen))?;
    eprintln!(
        "quinn-hq listening on {} (hq-interop)",
        endpoint.local_addr()?
    );
    while let Some(incoming) = endpoint.accept().await {
        if opts.retry && !incoming.remote_address_validated() {
            if let Err(e) = incoming.retry() {
                eprintln!("retry: {e}");
            }
            continue;
        }
        let root = root.clone();
        let zero_rtt = opts.zero_rtt;
        tokio::spawn(async move {
            let connecting = match incoming.accept() {
                Ok(c) => c,
                Err(e) => return eprintln!("handshake failed: {e}"),
            };
            // With 0-RTT, serve from the ClientHello on: early requests are
            // answered before the handshake completes.
            let connecting = match zero_rtt {
                true => match connecting.into_0rtt() {
                    Ok((conn, _)) => return serve_connection(conn, root).await,
                    Err(c) => c,
                },
                false => connecting,
            };
            match connecting.await {
                Ok(conn) => serve_connection(conn, root).await,
                Err(e) => eprintln!("handshake failed: {e}"),
            }
        });
    }
    Ok(())
}

async fn serve_connection(conn: quinn::Connection, root: Arc<Path>) {
    loop {
        match conn.accept_bi().await {
            Ok((send, recv)) => {
                tokio::spawn(serve_stream(send, recv, root.clone()));
            }
            Err(
                quinn::ConnectionError::ApplicationClosed(_)
                | quinn::ConnectionError::LocallyClosed,
            ) => return,
            Err(e) => {
                eprintln!("{}: {e}", conn.remote_address());
                return;
            }
        }
    }
}

async fn serve_stream(mut send: quinn::SendStream, mut recv: quinn::RecvStream, root: Arc<Path>) {
    let id = send.id();
    let file = match open(&mut recv, &root).await {
        Ok(file) => file,
        Err(e) => {
            eprintln!("{id}: {e:#}");
            let _ = recv.stop(REFUSED.into());
            let _ = send.reset(REFUSED.into());
            return;
        }
    };
    let mut file = tokio::io::BufReader::with_capacity(256 * 1024, file);
    match tokio::io::copy_buf(&mut file, &mut send).await {
        Ok(_) => {
            let _ = send.finish();
            // Keep the stream (and so the task) until the peer has it all.
            let _ = send.stopped().await;
        }
        Err(e) => {
            eprintln!("{id}: {e}");
            let _ = send.reset(REFUSED.into());
        }
    }
}

async fn open(recv: &mut quinn::RecvStream, root: &Path) -> anyhow::Result<tokio::fs::File> {
    let req = recv
        .read_to_end(MAX_REQUEST)
        .await
        .context("reading the request")?;
    let rel = request::parse(&req)?;
    let full = request::resolve(root, &rel).with_context(|| format!("/{}", rel.display()))?;
    Ok(tokio::fs::File::open(full).await?)
}
