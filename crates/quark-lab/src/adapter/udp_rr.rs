//! Request/response over plain UDP (the cloud study's `udp` cells).
//!
//! Both directions are messages split into datagrams of at most [`DATAGRAM`]
//! bytes, each starting with a 20-byte header: magic (`QLRQ` request, `QLRS`
//! response), 8-byte request id, 4-byte sequence, 4-byte total (big-endian).
//! A request's datagram 0 holds the lab's header line `GET /<n> <body_len>\r\n`
//! and datagrams 1.. the body; a response's datagrams hold its `n` bytes (an
//! empty response is one empty datagram). Every payload is pattern at the
//! offset its sequence gives, so each datagram is checked on arrival.
//! [`DATAGRAM`] is 1 472 bytes, what an MTU-1500 path carries without IP
//! fragmentation, so loopback, veth and emulated links carry the same packets.
//! Nothing is retransmitted: a response still missing datagrams at [`TIMEOUT`]
//! fails its request with how many were lost.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use anyhow::{Context, bail};
use tokio::net::UdpSocket;

use super::{BoxFuture, Connection, Request};
use crate::wire::{Header, pattern_slice};

pub(crate) const REQUEST_MAGIC: &[u8; 4] = b"QLRQ";
pub(crate) const RESPONSE_MAGIC: &[u8; 4] = b"QLRS";
/// Magic, id, sequence, total.
pub(crate) const DGRAM_HEADER: usize = 20;
/// Largest UDP payload on an MTU-1500 path (1500 - 20 IPv4 - 8 UDP).
pub const DATAGRAM: usize = 1_472;
/// Message bytes per datagram.
pub const CHUNK: usize = DATAGRAM - DGRAM_HEADER;
/// How long a client waits for the rest of a response before counting it lost.
pub const TIMEOUT: Duration = Duration::from_secs(2);
/// Socket buffers asked for, as quark's own sockets (quark-udp).
pub const SOCKET_BUFFER: usize = 32 << 20;
/// The server's receive buffer: a parallel client's 100 requests of 512 KiB
/// arrive at once, unpaced, about 80 MB as the kernel charges them (loopback,
/// 2.3 KB per datagram). Memory is only used while datagrams wait.
pub const SERVER_RECV_BUFFER: usize = 128 << 20;

/// A request whose response did not all arrive within [`TIMEOUT`]: UDP does
/// not retransmit, so the workload counts it as lost and goes on.
#[derive(Debug, thiserror::Error)]
#[error("udp response lost {missing} of {total} datagrams (no retransmission)")]
pub struct Lost {
    /// Datagrams that did not arrive.
    pub missing: usize,
    /// Datagrams in the response.
    pub total: u32,
}

/// Grows a socket's buffers: beyond `rmem_max`/`wmem_max` with
/// `CAP_NET_ADMIN`, else up to them (a smaller limit is not an error).
pub fn grow_buffers(sock: &impl std::os::fd::AsFd, recv: usize) {
    use nix::sys::socket::{setsockopt, sockopt};
    let s = socket2::SockRef::from(sock);
    if setsockopt(sock, sockopt::RcvBufForce, &recv).is_err() {
        let _ = s.set_recv_buffer_size(recv);
    }
    if setsockopt(sock, sockopt::SndBufForce, &SOCKET_BUFFER).is_err() {
        let _ = s.set_send_buffer_size(SOCKET_BUFFER);
    }
}

/// Datagrams carrying `len` message bytes (at least one).
pub(crate) fn datagrams(len: u64) -> u64 {
    len.div_ceil(CHUNK as u64).max(1)
}

/// A datagram's header fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Part {
    pub(crate) id: u64,
    pub(crate) seq: u32,
    pub(crate) total: u32,
}

impl Part {
    /// The header and payload of a datagram with `magic`, or `None`.
    pub(crate) fn parse<'a>(magic: &[u8; 4], d: &'a [u8]) -> Option<(Part, &'a [u8])> {
        if d.len() < DGRAM_HEADER || d[..4] != *magic {
            return None;
        }
        let be = |r: std::ops::Range<usize>| d[r].iter().fold(0u64, |v, &x| v << 8 | u64::from(x));
        let part = Part {
            id: be(4..12),
            seq: be(12..16) as u32,
            total: be(16..20) as u32,
        };
        Some((part, &d[DGRAM_HEADER..]))
    }

    /// Appends this header with `magic` to `out`.
    pub(crate) fn write(&self, magic: &[u8; 4], out: &mut Vec<u8>) {
        out.extend_from_slice(magic);
        out.extend_from_slice(&self.id.to_be_bytes());
        out.extend_from_slice(&self.seq.to_be_bytes());
        out.extend_from_slice(&self.total.to_be_bytes());
    }
}

/// Whether `payload` is chunk `index` of a `len`-byte pattern message.
pub(crate) fn chunk_ok(len: u64, index: u64, payload: &[u8]) -> bool {
    let off = index * CHUNK as u64;
    let want = len.saturating_sub(off).min(CHUNK as u64) as usize;
    (off < len || (len == 0 && index == 0))
        && payload.len() == want
        && *payload == *pattern_slice(off, want)
}

/// Which datagrams of a message arrived. Its size comes from the receiver's
/// own side (the client's request, the server's limit), never grows.
#[derive(Debug)]
pub(crate) struct Seen {
    seen: Vec<bool>,
    received: u32,
}

impl Seen {
    pub(crate) fn new(total: u32) -> Self {
        Seen {
            seen: vec![false; total as usize],
            received: 0,
        }
    }

    /// Marks `seq` (in range); false if it had arrived already.
    pub(crate) fn mark(&mut self, seq: u32) -> bool {
        let new = !std::mem::replace(&mut self.seen[seq as usize], true);
        self.received += u32::from(new);
        new
    }

    pub(crate) fn missing(&self) -> usize {
        self.seen.len() - self.received as usize
    }

    /// Datagrams in the message.
    pub(crate) fn total(&self) -> usize {
        self.seen.len()
    }
}

/// Sends one datagram, waiting while the kernel's queue is full.
pub(crate) async fn send(sock: &UdpSocket, d: &[u8], to: Option<SocketAddr>) -> anyhow::Result<()> {
    loop {
        let r = match to {
            Some(a) => sock.send_to(d, a).await,
            None => sock.send(d).await,
        };
        match r {
            Ok(_) => return Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => tokio::task::yield_now().await,
            Err(e) => return Err(e).context("udp send"),
        }
    }
}

/// Sends `len` bytes of pattern as the datagrams `first..` of message `id`
/// (`total` in all), each prefixed with its header.
pub(crate) async fn send_pattern(
    sock: &UdpSocket,
    to: Option<SocketAddr>,
    magic: &[u8; 4],
    id: u64,
    first: u32,
    total: u32,
    len: u64,
) -> anyhow::Result<()> {
    let mut out = Vec::with_capacity(DATAGRAM);
    for seq in first..total {
        let off = u64::from(seq - first) * CHUNK as u64;
        let n = len.saturating_sub(off).min(CHUNK as u64) as usize;
        out.clear();
        Part { id, seq, total }.write(magic, &mut out);
        out.extend_from_slice(pattern_slice(off, n));
        send(sock, &out, to).await?;
    }
    Ok(())
}

/// A client "connection": sockets connected to the server, one per request in
/// flight (so parallel requests each have a socket and its buffer), reused by
/// later requests. Ephemeral clients open one per request: a new socket each.
pub(crate) struct UdpConn {
    server: SocketAddr,
    idle: std::sync::Mutex<Vec<UdpSocket>>,
    next_id: AtomicU64,
}

impl UdpConn {
    async fn socket(&self) -> anyhow::Result<UdpSocket> {
        let sock = UdpSocket::bind(super::client_bind(self.server)).await?;
        grow_buffers(&sock, SOCKET_BUFFER);
        sock.connect(self.server).await?;
        Ok(sock)
    }

    fn put(&self, sock: UdpSocket) {
        if let Ok(mut idle) = self.idle.lock() {
            idle.push(sock);
        }
    }

    async fn exchange(&self, sock: &UdpSocket, req: Request) -> anyhow::Result<()> {
        let id = self.next_id.fetch_add(1, Relaxed);
        let body_parts = if req.body_len == 0 {
            0
        } else {
            datagrams(req.body_len)
        };
        let total = u32::try_from(1 + body_parts).context("udp request body too large")?;
        let mut d = Vec::with_capacity(DATAGRAM);
        Part { id, seq: 0, total }.write(REQUEST_MAGIC, &mut d);
        Header {
            response_len: req.response_len,
            body_len: Some(req.body_len),
        }
        .encode(&mut d);
        send(sock, &d, None).await?;
        send_pattern(sock, None, REQUEST_MAGIC, id, 1, total, req.body_len).await?;

        let total = u32::try_from(datagrams(req.response_len)).context("udp response too large")?;
        let mut seen = Seen::new(total);
        let mut buf = vec![0u8; DATAGRAM + 1];
        let deadline = tokio::time::Instant::now() + TIMEOUT;
        while seen.missing() > 0 {
            let n = match tokio::time::timeout_at(deadline, sock.recv(&mut buf)).await {
                Ok(n) => n.context("udp recv")?,
                Err(_) => {
                    return Err(Lost {
                        missing: seen.missing(),
                        total,
                    }
                    .into());
                }
            };
            let (p, payload) =
                Part::parse(RESPONSE_MAGIC, &buf[..n]).context("not a udp response datagram")?;
            if p.id != id {
                // A late datagram of an earlier request on this socket.
                continue;
            }
            if p.total != total || p.seq >= total {
                bail!(
                    "udp response datagram {} of {}, expected {total}",
                    p.seq,
                    p.total
                );
            }
            if !chunk_ok(req.response_len, u64::from(p.seq), payload) {
                bail!("udp response datagram {} does not match the pattern", p.seq);
            }
            seen.mark(p.seq);
        }
        Ok(())
    }
}

impl Connection for UdpConn {
    fn request(&self, req: Request) -> BoxFuture<'_, anyhow::Result<()>> {
        Box::pin(async move {
            let idle = self.idle.lock().ok().and_then(|mut i| i.pop());
            let sock = match idle {
                Some(s) => s,
                None => self.socket().await?,
            };
            self.exchange(&sock, req).await?;
            // A failed exchange drops its socket: late datagrams die with it.
            self.put(sock);
            Ok(())
        })
    }

    fn close(&self) -> BoxFuture<'_, anyhow::Result<()>> {
        Box::pin(async move {
            if let Ok(mut idle) = self.idle.lock() {
                idle.clear();
            }
            Ok(())
        })
    }
}

/// Opens a request/response "connection" to a udp server (one socket ready).
pub(crate) fn connect(
    server: SocketAddr,
) -> BoxFuture<'static, anyhow::Result<Arc<dyn Connection>>> {
    Box::pin(async move {
        let conn = UdpConn {
            server,
            idle: std::sync::Mutex::new(Vec::new()),
            next_id: AtomicU64::new(0),
        };
        let sock = conn.socket().await?;
        conn.put(sock);
        Ok(Arc::new(conn) as Arc<dyn Connection>)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_round_trip_and_chunks_are_checked() {
        let mut d = Vec::new();
        let p = Part {
            id: 9,
            seq: 3,
            total: 4,
        };
        p.write(RESPONSE_MAGIC, &mut d);
        d.extend_from_slice(b"xy");
        assert_eq!(Part::parse(RESPONSE_MAGIC, &d), Some((p, &b"xy"[..])));
        assert_eq!(Part::parse(REQUEST_MAGIC, &d), None);
        assert_eq!(Part::parse(RESPONSE_MAGIC, &d[..19]), None);

        let len = CHUNK as u64 + 10;
        assert_eq!(datagrams(len), 2);
        assert!(chunk_ok(len, 0, pattern_slice(0, CHUNK)));
        assert!(chunk_ok(len, 1, pattern_slice(CHUNK as u64, 10)));
        assert!(!chunk_ok(len, 1, pattern_slice(0, 10)));
        assert!(!chunk_ok(len, 1, pattern_slice(CHUNK as u64, 9)));
        assert!(!chunk_ok(len, 2, &[]));
        assert!(!chunk_ok(len, 0, &[0; CHUNK]));
        assert!(chunk_ok(0, 0, &[]));

        let mut s = Seen::new(2);
        assert!(s.mark(1));
        assert!(!s.mark(1));
        assert_eq!(s.missing(), 1);
        assert!(s.mark(0));
        assert_eq!(s.missing(), 0);
    }
}
