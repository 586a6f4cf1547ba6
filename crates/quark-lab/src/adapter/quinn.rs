//! `quinn`: hq-interop over the quinn QUIC stack (rustls, ring).
//!
//! This is the model for QUIC adapters (the `quic` adapter for quark follows
//! the same shape): one endpoint per side, one bidirectional stream per
//! request, ALPN `hq-interop`, zero-copy chunk reads and writes.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{Context, anyhow};
use quinn::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use tokio::task::JoinHandle;

use super::hq::{ALPN, RequestReader};
use super::tls::{Cipher, SERVER_NAME, client_config};
use super::{
    Adapter, BoxFuture, Client, ClientConfig, Connection, Request, ServeConfig, Server, ServerStats,
};
use crate::wire::{Header, MAX_HEADER, Verifier, pattern_chunks};

/// Concurrent bidirectional streams a peer may open: above the `parallel`
/// scenario's 100 in flight and typical `streams` settings.
const MAX_STREAMS: u32 = 1024;

/// The quinn adapter.
#[derive(Debug)]
pub struct Quinn;

/// quinn needs AES-128-GCM for Initial packets whatever suite the handshake picks.
fn initial_suite() -> anyhow::Result<rustls::quic::Suite> {
    rustls::crypto::ring::cipher_suite::TLS13_AES_128_GCM_SHA256
        .tls13()
        .and_then(|s| s.quic_suite())
        .ok_or_else(|| anyhow!("ring lacks AES-128-GCM for QUIC"))
}

/// Transport settings; `uni` unidirectional streams for the peer (HTTP/3
/// needs a few: control and QPACK streams).
fn transport(uni: u32) -> Arc<quinn::TransportConfig> {
    let mut t = quinn::TransportConfig::default();
    t.max_concurrent_bidi_streams(MAX_STREAMS.into());
    t.max_concurrent_uni_streams(uni.into());
    Arc::new(t)
}

/// A server configuration for `alpn`, granting the client `uni` unidirectional streams.
pub(crate) fn server_config(
    cfg: &ServeConfig,
    alpn: &[u8],
    uni: u32,
) -> anyhow::Result<quinn::ServerConfig> {
    let tls = Arc::new(cfg.identity.server_config(cfg.cipher, &[alpn])?);
    let crypto = QuicServerConfig::with_initial(tls, initial_suite()?)?;
    let mut sc = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    sc.transport_config(transport(uni));
    Ok(sc)
}

/// A client configuration for `alpn`, granting the server `uni` unidirectional streams.
pub(crate) fn quinn_client_config(
    cert: &rustls_pki_types::CertificateDer<'static>,
    cipher: Cipher,
    alpn: &[u8],
    uni: u32,
) -> anyhow::Result<quinn::ClientConfig> {
    let tls = Arc::new(client_config(cert, cipher, &[alpn])?);
    let crypto = QuicClientConfig::with_initial(tls, initial_suite()?)?;
    let mut cc = quinn::ClientConfig::new(Arc::new(crypto));
    cc.transport_config(transport(uni));
    Ok(cc)
}

struct QuinnServer {
    endpoint: quinn::Endpoint,
    task: JoinHandle<()>,
}

impl Server for QuinnServer {
    fn local_addr(&self) -> SocketAddr {
        self.endpoint
            .local_addr()
            .unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0)))
    }
}

impl Drop for QuinnServer {
    fn drop(&mut self) {
        self.endpoint.close(0u32.into(), b"server closing");
        self.task.abort();
    }
}

/// Serves every request stream of one connection.
async fn serve_connection(incoming: quinn::Incoming, stats: Arc<ServerStats>) {
    let Ok(conn) = incoming.await else {
        stats.error();
        return;
    };
    let _open = stats.connection();
    let stats = &stats;
    super::serve::serve_streams(
        || async { conn.accept_bi().await.ok() },
        |(send, recv)| async move {
            // Failures are counted by the request guard.
            let _ = serve_stream(send, recv, stats).await;
        },
    )
    .await;
}

async fn serve_stream(
    mut send: quinn::SendStream,
    mut recv: quinn::RecvStream,
    stats: &ServerStats,
) -> anyhow::Result<()> {
    let guard = stats.request();
    let mut req = RequestReader::default();
    while let Some(chunk) = recv.read_chunk(usize::MAX, true).await? {
        req.push(&chunk.bytes)?;
    }
    let (h, body) = req.finish()?;
    write_pattern(&mut send, h.response_len).await?;
    send.finish()?;
    guard.finish(body, h.response_len);
    Ok(())
}

/// Sends `len` bytes of pattern as shared `Bytes` chunks: no copy on our side.
async fn write_pattern(send: &mut quinn::SendStream, len: u64) -> anyhow::Result<()> {
    for chunk in pattern_chunks(len) {
        send.write_chunk(chunk).await?;
    }
    Ok(())
}

impl Adapter for Quinn {
    fn name(&self) -> &'static str {
        "quinn"
    }

    fn about(&self) -> &'static str {
        "quinn 0.11 QUIC (rustls/ring), hq-interop"
    }

    fn in_default_suite(&self) -> bool {
        true
    }

    fn serve(&self, cfg: ServeConfig) -> BoxFuture<'static, anyhow::Result<Box<dyn Server>>> {
        Box::pin(async move {
            let config = server_config(&cfg, ALPN, 0)?;
            serve_quinn(cfg, config, serve_connection)
        })
    }

    fn client(&self, cfg: ClientConfig) -> BoxFuture<'static, anyhow::Result<Arc<dyn Client>>> {
        Box::pin(async move {
            let config = quinn_client_config(&cfg.cert, cfg.cipher, ALPN, 0)?;
            Ok(Arc::new(QuinnClient(QuinnEndpoint::new(&cfg, config)?)) as Arc<dyn Client>)
        })
    }
}

/// Serves `cfg.listen` with quinn and `config`; `serve` runs each connection.
pub(crate) fn serve_quinn<F, Fut>(
    cfg: ServeConfig,
    config: quinn::ServerConfig,
    serve: F,
) -> anyhow::Result<Box<dyn Server>>
where
    F: Fn(quinn::Incoming, Arc<ServerStats>) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let endpoint = quinn::Endpoint::server(config, cfg.listen)
        .with_context(|| format!("cannot listen on udp {}", cfg.listen))?;
    let ep = endpoint.clone();
    let stats = cfg.stats;
    let task = tokio::spawn(async move {
        while let Some(incoming) = ep.accept().await {
            tokio::spawn(serve(incoming, stats.clone()));
        }
    });
    Ok(Box::new(QuinnServer { endpoint, task }))
}

/// A client's quinn endpoint and the server it connects to.
pub(crate) struct QuinnEndpoint {
    endpoint: quinn::Endpoint,
    server: SocketAddr,
}

impl QuinnEndpoint {
    pub(crate) fn new(cfg: &ClientConfig, config: quinn::ClientConfig) -> anyhow::Result<Self> {
        let mut endpoint = quinn::Endpoint::client(super::client_bind(cfg.server))?;
        endpoint.set_default_client_config(config);
        Ok(QuinnEndpoint {
            endpoint,
            server: cfg.server,
        })
    }

    pub(crate) async fn connect(&self) -> anyhow::Result<quinn::Connection> {
        let connecting = self.endpoint.connect(self.server, SERVER_NAME)?;
        connecting.await.context("QUIC handshake")
    }

    pub(crate) async fn wait_idle(&self) {
        self.endpoint.wait_idle().await
    }
}

struct QuinnClient(QuinnEndpoint);

impl Client for QuinnClient {
    fn connect(&self) -> BoxFuture<'_, anyhow::Result<Arc<dyn Connection>>> {
        Box::pin(
            async move { Ok(Arc::new(QuinnConn(self.0.connect().await?)) as Arc<dyn Connection>) },
        )
    }

    fn wait_idle(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.0.wait_idle())
    }
}

struct QuinnConn(quinn::Connection);

impl Connection for QuinnConn {
    fn request(&self, req: Request) -> BoxFuture<'_, anyhow::Result<()>> {
        Box::pin(async move {
            let (mut send, mut recv) = self.0.open_bi().await?;
            let mut head = Vec::with_capacity(MAX_HEADER);
            Header {
                response_len: req.response_len,
                body_len: None,
            }
            .encode(&mut head);
            send.write_all(&head).await?;
            write_pattern(&mut send, req.body_len).await?;
            send.finish()?;
            let mut v = Verifier::new(req.response_len);
            while let Some(chunk) = recv.read_chunk(usize::MAX, true).await? {
                v.update(&chunk.bytes)?;
            }
            v.finish()?;
            Ok(())
        })
    }

    fn close(&self) -> BoxFuture<'_, anyhow::Result<()>> {
        self.0.close(0u32.into(), b"done");
        Box::pin(async { Ok(()) })
    }
}
