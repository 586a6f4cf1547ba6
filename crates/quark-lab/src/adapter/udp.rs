//! `udp`: raw datagrams, no reliability (as in the cloud study). Goodput and
//! streams: the client blasts numbered datagrams at the server as fast as the
//! kernel takes them; the server counts and verifies what arrives, and the
//! orchestrator reports the difference as loss. Datagram: `QLAB` magic, 8-byte
//! big-endian sequence number, then `payload` bytes of pattern. The
//! request/response scenarios (persistent, ephemeral, parallel, rps) run the
//! exchange in [`super::udp_rr`] on the same server socket.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use tokio::net::UdpSocket;

use super::tcp::TaskServer;
use super::{
    Adapter, BlastReport, BoxFuture, Client, ClientConfig, Connection, Kind, ServeConfig, Server,
    udp_rr, udp_rr_serve,
};
use crate::wire::pattern_slice;

pub(crate) const MAGIC: &[u8; 4] = b"QLAB";
pub(crate) const HEADER: usize = 12;
/// Largest payload that fits a UDP datagram with our header.
pub const MAX_PAYLOAD: usize = 65_507 - HEADER;

/// The UDP adapter.
#[derive(Debug)]
pub struct Udp;

/// Whether a datagram has the lab's header and pattern (also `quic-dgram`'s).
pub(crate) fn check(datagram: &[u8]) -> bool {
    datagram.len() >= HEADER
        && &datagram[..4] == MAGIC
        && datagram[HEADER..] == *pattern_slice(0, datagram.len() - HEADER)
}

impl Adapter for Udp {
    fn name(&self) -> &'static str {
        "udp"
    }

    fn about(&self) -> &'static str {
        "raw UDP: datagrams blasted at a counting server, or requests answered in datagrams (loss reported)"
    }

    fn serves_requests(&self) -> bool {
        true
    }

    fn kind(&self) -> Kind {
        Kind::Datagram
    }

    fn serve(&self, cfg: ServeConfig) -> BoxFuture<'static, anyhow::Result<Box<dyn Server>>> {
        Box::pin(async move {
            let sock = UdpSocket::bind(cfg.listen)
                .await
                .with_context(|| format!("cannot listen on udp {}", cfg.listen))?;
            udp_rr::grow_buffers(&sock, udp_rr::SERVER_RECV_BUFFER);
            let sock = Arc::new(sock);
            let addr = sock.local_addr()?;
            let stats = cfg.stats;
            let task = tokio::spawn(async move {
                let mut buf = vec![0u8; 65_536];
                let mut requests = udp_rr_serve::Requests::default();
                loop {
                    let Ok((n, from)) = sock.recv_from(&mut buf).await else {
                        tokio::task::yield_now().await;
                        continue;
                    };
                    let d = &buf[..n];
                    if !d.starts_with(udp_rr::REQUEST_MAGIC) {
                        stats.datagram(n.saturating_sub(HEADER) as u64, check(d));
                        continue;
                    }
                    match (
                        requests.add(from, d),
                        udp_rr::Part::parse(udp_rr::REQUEST_MAGIC, d),
                    ) {
                        (Ok(Some(h)), Some((p, _))) => {
                            // Ids count from 0 per client "connection": its
                            // first request is the server's view of it opening.
                            if p.id == 0 {
                                drop(stats.connection());
                            }
                            udp_rr_serve::respond(&sock, from, p.id, h, &stats)
                        }
                        (Ok(_), _) => {}
                        // A bad request is counted and dropped; the loop goes on.
                        (Err(_), _) => stats.error(),
                    }
                }
            });
            Ok(Box::new(TaskServer { addr, task }) as Box<dyn Server>)
        })
    }

    fn client(&self, cfg: ClientConfig) -> BoxFuture<'static, anyhow::Result<Arc<dyn Client>>> {
        Box::pin(async move { Ok(Arc::new(UdpClient { server: cfg.server }) as Arc<dyn Client>) })
    }
}

struct UdpClient {
    server: SocketAddr,
}

impl Client for UdpClient {
    fn connect(&self) -> BoxFuture<'_, anyhow::Result<Arc<dyn Connection>>> {
        udp_rr::connect(self.server)
    }

    fn blast(&self, blast: super::Blast) -> BoxFuture<'_, anyhow::Result<BlastReport>> {
        Box::pin(async move {
            let payload = blast.payload.clamp(1, MAX_PAYLOAD);
            let bind = super::client_bind(self.server);
            let sock = UdpSocket::bind(bind).await?;
            sock.connect(self.server).await?;
            let mut dgram = Vec::with_capacity(HEADER + payload);
            dgram.extend_from_slice(MAGIC);
            dgram.extend_from_slice(&0u64.to_be_bytes());
            dgram.extend_from_slice(pattern_slice(0, payload));
            let mut sent = BlastReport::default();
            loop {
                if blast.bytes.is_some_and(|b| sent.bytes >= b) {
                    break;
                }
                // Checking the clock every 64 datagrams keeps it off the send path.
                if sent.datagrams % 64 == 0 && blast.until.is_some_and(|t| Instant::now() >= t) {
                    break;
                }
                dgram[4..HEADER].copy_from_slice(&sent.datagrams.to_be_bytes());
                match sock.send(&dgram).await {
                    Ok(_) => {
                        sent.datagrams += 1;
                        sent.bytes += payload as u64;
                    }
                    // The kernel queue is full: let it drain.
                    Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                        tokio::task::yield_now().await
                    }
                    Err(e) => return Err(e).context("udp send"),
                }
            }
            Ok(sent)
        })
    }
}
