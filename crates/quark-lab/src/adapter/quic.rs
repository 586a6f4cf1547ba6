//! `quic`: hq-interop over quark, the stack under test. Same shape as the
//! `quinn` adapter: one endpoint per side, one bidirectional stream per request.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;
use tokio::task::JoinHandle;

use super::hq::{ALPN, RequestReader};
use super::tls::{Cipher, SERVER_NAME, client_config};
use super::{
    Adapter, BoxFuture, Client, ClientConfig, Connection, CpuCounters, Request, ServeConfig,
    Server, ServerStats,
};
use crate::wire::{CHUNK, Header, MAX_HEADER, Verifier, pattern_slice};

/// Concurrent bidirectional streams a peer may open (above `parallel`'s 100).
const MAX_STREAMS: u64 = 1024;

/// The quark adapter.
#[derive(Debug)]
pub struct Quic;

/// Transport settings. `QUARK_TUNE` switches optimisations off for the
/// before/after tables (e.g. `QUARK_TUNE=pmtud=0,ackfreq=0`); GSO and GRO are
/// switched by quark-udp's `QUARK_NO_GSO` / `QUARK_NO_GRO`.
fn transport() -> Arc<quark::TransportConfig> {
    let tune = std::env::var("QUARK_TUNE").unwrap_or_default();
    let off = |name: &str| tune.split(',').any(|t| t.trim() == format!("{name}=0"));
    Arc::new(quark::TransportConfig {
        max_concurrent_bidi_streams: MAX_STREAMS,
        max_concurrent_uni_streams: 0,
        mtu_discovery: !off("pmtud"),
        ack_frequency: !off("ackfreq"),
        ..quark::TransportConfig::default()
    })
}

fn server_config(cfg: &ServeConfig) -> anyhow::Result<quark::ServerConfig> {
    let tls = cfg.identity.server_config(cfg.cipher, &[ALPN])?;
    let mut sc = quark::ServerConfig::new(Arc::new(tls));
    sc.transport = transport();
    Ok(sc)
}

fn quark_client_config(
    cert: &rustls_pki_types::CertificateDer<'static>,
    cipher: Cipher,
) -> anyhow::Result<quark::ClientConfig> {
    let tls = client_config(cert, cipher, &[ALPN])?;
    let mut cc = quark::ClientConfig::new(Arc::new(tls));
    cc.transport = transport();
    Ok(cc)
}

/// The breakdown counters run unless `QUARK_COUNTERS=0` (to measure their cost).
fn counters_wanted() -> bool {
    std::env::var("QUARK_COUNTERS").map_or(true, |v| v != "0")
}

struct QuicServer {
    endpoint: quark::Endpoint,
    task: JoinHandle<()>,
}

impl Server for QuicServer {
    fn local_addr(&self) -> SocketAddr {
        self.endpoint
            .local_addr()
            .unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0)))
    }

    fn cpu_counters(&self) -> Option<CpuCounters> {
        Some(breakdown())
    }
}

/// The thesis' categories from quark's built-in counters; "remaining" is the
/// process's CPU time (getrusage) minus the measured categories.
fn breakdown() -> CpuCounters {
    let b = quark::counters::snapshot();
    let total = crate::metrics::process_cpu_ns();
    let measured = b.crypto_ns + b.send_ns + b.recv_ns + b.ack_ns;
    CpuCounters {
        packets: b.packets,
        ns: vec![
            ("crypto".into(), b.crypto_ns),
            ("sendmsg".into(), b.send_ns),
            ("recvmsg".into(), b.recv_ns),
            ("ack".into(), b.ack_ns),
            ("remaining".into(), total.saturating_sub(measured)),
        ],
    }
}

impl Drop for QuicServer {
    fn drop(&mut self) {
        self.endpoint.close(0, b"server closing");
        self.task.abort();
    }
}

async fn serve_connection(conn: quark::Connection, stats: Arc<ServerStats>) {
    let _open = stats.connection();
    while let Ok((send, recv)) = conn.accept_bi().await {
        let stats = stats.clone();
        tokio::spawn(async move {
            // Failures are counted by the request guard.
            let _ = serve_stream(send, recv, &stats).await;
        });
    }
}

async fn serve_stream(
    mut send: quark::SendStream,
    mut recv: quark::RecvStream,
    stats: &ServerStats,
) -> anyhow::Result<()> {
    let guard = stats.request();
    let mut req = RequestReader::default();
    let mut buf = vec![0u8; 64 * 1024];
    while let Some(n) = recv.read(&mut buf).await? {
        req.push(&buf[..n])?;
    }
    let (h, body) = req.finish()?;
    write_pattern(&mut send, h.response_len).await?;
    send.finish()?;
    guard.finish(body, h.response_len);
    Ok(())
}

async fn write_pattern(send: &mut quark::SendStream, len: u64) -> anyhow::Result<()> {
    let mut off = 0;
    while off < len {
        let n = (len - off).min(CHUNK as u64) as usize;
        send.write_all(pattern_slice(off, n)).await?;
        off += n as u64;
    }
    Ok(())
}

impl Adapter for Quic {
    fn name(&self) -> &'static str {
        "quic"
    }

    fn about(&self) -> &'static str {
        "quark QUIC (this project; rustls/ring), hq-interop"
    }

    fn in_default_suite(&self) -> bool {
        true
    }

    fn serve(&self, cfg: ServeConfig) -> BoxFuture<'static, anyhow::Result<Box<dyn Server>>> {
        Box::pin(async move {
            quark::counters::set_enabled(counters_wanted());
            let endpoint = quark::Endpoint::server(server_config(&cfg)?, cfg.listen)
                .with_context(|| format!("cannot listen on udp {}", cfg.listen))?;
            let ep = endpoint.clone();
            let stats = cfg.stats;
            let task = tokio::spawn(async move {
                while let Some(conn) = ep.accept().await {
                    tokio::spawn(serve_connection(conn, stats.clone()));
                }
            });
            Ok(Box::new(QuicServer { endpoint, task }) as Box<dyn Server>)
        })
    }

    fn client(&self, cfg: ClientConfig) -> BoxFuture<'static, anyhow::Result<Arc<dyn Client>>> {
        Box::pin(async move {
            let bind = super::client_bind(cfg.server);
            quark::counters::set_enabled(counters_wanted());
            let endpoint = quark::Endpoint::client(bind)?;
            let config = quark_client_config(&cfg.cert, cfg.cipher)?;
            Ok(Arc::new(QuicClient {
                endpoint,
                config,
                server: cfg.server,
            }) as Arc<dyn Client>)
        })
    }
}

struct QuicClient {
    endpoint: quark::Endpoint,
    config: quark::ClientConfig,
    server: SocketAddr,
}

impl Client for QuicClient {
    fn connect(&self) -> BoxFuture<'_, anyhow::Result<Arc<dyn Connection>>> {
        Box::pin(async move {
            let conn = self
                .endpoint
                .connect(self.config.clone(), self.server, SERVER_NAME)?
                .await
                .context("QUIC handshake")?;
            Ok(Arc::new(QuicConn(conn)) as Arc<dyn Connection>)
        })
    }

    fn wait_idle(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.endpoint.wait_idle())
    }

    fn cpu_counters(&self) -> Option<CpuCounters> {
        Some(breakdown())
    }
}

struct QuicConn(quark::Connection);

impl Connection for QuicConn {
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
            let mut buf = vec![0u8; 64 * 1024];
            while let Some(n) = recv.read(&mut buf).await? {
                v.update(&buf[..n])?;
            }
            v.finish()?;
            Ok(())
        })
    }

    fn close(&self) -> BoxFuture<'_, anyhow::Result<()>> {
        self.0.close(0, b"done");
        Box::pin(async { Ok(()) })
    }
}
