//! `quic-dgram`: RFC 9221 datagrams over quark, beside `udp`. Each blast is
//! one connection: the client sends numbered datagrams (the `udp` adapter's
//! format: `QLAB`, sequence number, pattern) as fast as congestion control
//! lets it (`send_datagram_wait`: nothing is dropped at the sender), the
//! server counts and checks what arrives; the difference is the path's loss.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use bytes::Bytes;

use super::quic::{QuarkEndpoints, quark_client_config, serve_quark, server_config};
use super::udp::{HEADER, MAGIC, check};
use super::{
    Adapter, Blast, BlastReport, BoxFuture, Client, ClientConfig, Connection, Kind, ServeConfig,
    Server, ServerStats,
};
use crate::wire::pattern_slice;

const ALPN: &[u8] = b"qlab-dgram";
/// Received datagrams the server holds unread, in bytes: a burst the
/// counting task has not caught up with yet.
const RECEIVE_BUFFER: usize = 8 << 20;
/// How long a blast waits for its queued datagrams to go out before closing.
const DRAIN: Duration = Duration::from_secs(10);

/// The quark datagram adapter.
#[derive(Debug)]
pub struct QuicDgram;

/// `base` with datagrams accepted.
fn with_datagrams(base: &quark::TransportConfig) -> Arc<quark::TransportConfig> {
    Arc::new(quark::TransportConfig {
        max_datagram_frame_size: Some(u16::MAX),
        datagram_receive_buffer: RECEIVE_BUFFER,
        ..base.clone()
    })
}

async fn serve_connection(conn: quark::Connection, stats: Arc<ServerStats>) {
    let _open = stats.connection();
    while let Ok(d) = conn.read_datagram().await {
        stats.datagram(d.len().saturating_sub(HEADER) as u64, check(&d));
    }
}

impl Adapter for QuicDgram {
    fn name(&self) -> &'static str {
        "quic-dgram"
    }

    fn about(&self) -> &'static str {
        "quark QUIC datagrams (RFC 9221), congestion controlled; the server counts them"
    }

    fn kind(&self) -> Kind {
        Kind::Datagram
    }

    fn serve(&self, cfg: ServeConfig) -> BoxFuture<'static, anyhow::Result<Box<dyn Server>>> {
        Box::pin(async move {
            let mut config = server_config(&cfg, ALPN, 0)?;
            config.transport = with_datagrams(&config.transport);
            serve_quark(cfg, config, serve_connection)
        })
    }

    fn client(&self, cfg: ClientConfig) -> BoxFuture<'static, anyhow::Result<Arc<dyn Client>>> {
        Box::pin(async move {
            let mut config = quark_client_config(&cfg.cert, cfg.cipher, ALPN, 0)?;
            config.transport = with_datagrams(&config.transport);
            let endpoints = QuarkEndpoints::new(&cfg, config)?;
            Ok(Arc::new(DgramClient(endpoints)) as Arc<dyn Client>)
        })
    }
}

struct DgramClient(QuarkEndpoints);

impl Client for DgramClient {
    fn connect(&self) -> BoxFuture<'_, anyhow::Result<Arc<dyn Connection>>> {
        Box::pin(async { anyhow::bail!("quic-dgram only blasts datagrams") })
    }

    fn blast(&self, blast: Blast) -> BoxFuture<'_, anyhow::Result<BlastReport>> {
        Box::pin(async move {
            let conn = self.0.connect().await?;
            let result = send_all(&conn, blast).await;
            conn.close(0, b"done");
            result
        })
    }

    fn wait_idle(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.0.wait_idle())
    }
}

async fn send_all(conn: &quark::Connection, blast: Blast) -> anyhow::Result<BlastReport> {
    let max = conn
        .max_datagram_size()
        .context("the server does not accept datagrams")?;
    // The size the connection takes at its start (the MTU grows later).
    let payload = blast.payload.clamp(1, max.saturating_sub(HEADER).max(1));
    let mut dgram = Vec::with_capacity(HEADER + payload);
    dgram.extend_from_slice(MAGIC);
    dgram.extend_from_slice(&0u64.to_be_bytes());
    dgram.extend_from_slice(pattern_slice(0, payload));
    let mut sent = BlastReport::default();
    loop {
        if blast.bytes.is_some_and(|b| sent.bytes >= b) {
            break;
        }
        if sent.datagrams % 64 == 0 && blast.until.is_some_and(|t| Instant::now() >= t) {
            break;
        }
        dgram[4..HEADER].copy_from_slice(&sent.datagrams.to_be_bytes());
        conn.send_datagram_wait(Bytes::copy_from_slice(&dgram))
            .await
            .context("datagram send")?;
        sent.datagrams += 1;
        sent.bytes += payload as u64;
    }
    // Queued is not sent: closing now would discard the queue's tail.
    let end = Instant::now() + DRAIN;
    while conn.stats().datagram_frames_out < sent.datagrams && Instant::now() < end {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    Ok(sent)
}
