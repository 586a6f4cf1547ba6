//! The server half of [`super::udp_rr`]: puts requests together from their
//! datagrams (checking each) and answers each complete one from a task of its
//! own, so the receive loop keeps draining the socket meanwhile.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{Context, bail};
use tokio::net::UdpSocket;

use super::ServerStats;
use super::udp_rr::{CHUNK, Part, REQUEST_MAGIC, RESPONSE_MAGIC, Seen, chunk_ok, datagrams};
use crate::wire::Header;

/// Requests being put together at once (clients that lost datagrams leave
/// theirs behind: the oldest goes first).
const MAX_PENDING: usize = 1_024;
/// Largest request body taken (the cloud study's largest is 512 KiB).
pub const MAX_BODY: u64 = 4 << 20;

#[derive(Debug)]
struct Pending {
    seen: Seen,
    header: Option<Header>,
    body: u64,
    born: u64,
}

/// Requests in progress, keyed by client address and request id.
#[derive(Debug, Default)]
pub(crate) struct Requests {
    pending: HashMap<(SocketAddr, u64), Pending>,
    born: u64,
}

impl Requests {
    /// Takes one request datagram from `from`; the header of a request it
    /// completes. A datagram that does not check out is an error (the
    /// request it belongs to is dropped).
    pub(crate) fn add(&mut self, from: SocketAddr, d: &[u8]) -> anyhow::Result<Option<Header>> {
        let (p, payload) = Part::parse(REQUEST_MAGIC, d).context("short request datagram")?;
        let max = 1 + datagrams(MAX_BODY);
        if p.total == 0 || u64::from(p.total) > max || p.seq >= p.total {
            bail!("request datagram {} of {}", p.seq, p.total);
        }
        let key = (from, p.id);
        if p.total == 1 {
            return parse_header(payload, 0).map(Some);
        }
        if !self.pending.contains_key(&key) && self.pending.len() >= MAX_PENDING {
            let oldest = self
                .pending
                .iter()
                .min_by_key(|(_, v)| v.born)
                .map(|(k, _)| *k);
            if let Some(k) = oldest {
                self.pending.remove(&k);
            }
        }
        self.born += 1;
        let born = self.born;
        let req = self.pending.entry(key).or_insert_with(|| Pending {
            seen: Seen::new(p.total),
            header: None,
            body: 0,
            born,
        });
        let res = req_add(req, p, payload);
        match res {
            Ok(Some(h)) => {
                self.pending.remove(&key);
                Ok(Some(h))
            }
            Ok(None) => Ok(None),
            Err(e) => {
                self.pending.remove(&key);
                Err(e)
            }
        }
    }

    /// Requests still being put together.
    #[cfg(test)]
    pub(crate) fn pending(&self) -> usize {
        self.pending.len()
    }
}

fn parse_header(payload: &[u8], body_parts: u64) -> anyhow::Result<Header> {
    let (h, used) = Header::parse(payload)?.context("request without a header line")?;
    let body = h.body_len.context("udp requests carry a body length")?;
    let parts = if body == 0 { 0 } else { datagrams(body) };
    if used != payload.len() || body > MAX_BODY || parts != body_parts {
        bail!("bad request header");
    }
    Ok(h)
}

fn req_add(req: &mut Pending, p: Part, payload: &[u8]) -> anyhow::Result<Option<Header>> {
    if p.total as usize != req.seen.total() {
        bail!("request datagrams disagree on their total");
    }
    if p.seq == 0 {
        let h = parse_header(payload, u64::from(p.total) - 1)?;
        if req.seen.mark(0) {
            req.header = Some(h);
        }
    } else {
        // The body's length is not known before datagram 0: check the chunk
        // against the longest body this many datagrams can carry, and the
        // sum against the header at the end.
        let last = p.seq == p.total - 1;
        let ok = match last {
            true => !payload.is_empty() && payload.len() <= CHUNK,
            false => payload.len() == CHUNK,
        };
        let off_len = u64::from(p.seq - 1) * CHUNK as u64 + payload.len() as u64;
        if !ok || !chunk_ok(off_len, u64::from(p.seq - 1), payload) {
            bail!("request datagram {} does not match the pattern", p.seq);
        }
        if req.seen.mark(p.seq) {
            req.body += payload.len() as u64;
        }
    }
    if req.seen.missing() > 0 {
        return Ok(None);
    }
    let h = req.header.context("request without a header line")?;
    if h.body_len != Some(req.body) {
        bail!(
            "request body of {} bytes, header says {:?}",
            req.body,
            h.body_len
        );
    }
    Ok(Some(h))
}

/// Answers a complete request from its own task.
pub(crate) fn respond(
    sock: &Arc<UdpSocket>,
    to: SocketAddr,
    id: u64,
    h: Header,
    stats: &Arc<ServerStats>,
) {
    let (sock, stats) = (sock.clone(), stats.clone());
    tokio::spawn(async move {
        let guard = stats.request();
        let total = u32::try_from(datagrams(h.response_len));
        let sent = match total {
            Ok(t) => {
                super::udp_rr::send_pattern(
                    &sock,
                    Some(to),
                    RESPONSE_MAGIC,
                    id,
                    0,
                    t,
                    h.response_len,
                )
                .await
            }
            Err(_) => Err(anyhow::anyhow!("response too large")),
        };
        if sent.is_ok() {
            guard.finish(h.body_len.unwrap_or(0), h.response_len);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::pattern_slice;

    fn dgram(id: u64, seq: u32, total: u32, payload: &[u8]) -> Vec<u8> {
        let mut d = Vec::new();
        Part { id, seq, total }.write(REQUEST_MAGIC, &mut d);
        d.extend_from_slice(payload);
        d
    }

    #[test]
    fn requests_are_put_together_in_any_order() {
        let a: SocketAddr = "127.0.0.1:9".parse().unwrap();
        let mut r = Requests::default();
        let body = CHUNK as u64 + 5;
        let h = Header {
            response_len: 77,
            body_len: Some(body),
        };
        let mut line = Vec::new();
        h.encode(&mut line);
        assert_eq!(
            r.add(a, &dgram(1, 2, 3, pattern_slice(CHUNK as u64, 5)))
                .unwrap(),
            None
        );
        assert_eq!(r.add(a, &dgram(1, 0, 3, &line)).unwrap(), None);
        // A duplicate changes nothing.
        assert_eq!(r.add(a, &dgram(1, 0, 3, &line)).unwrap(), None);
        assert_eq!(
            r.add(a, &dgram(1, 1, 3, pattern_slice(0, CHUNK))).unwrap(),
            Some(h)
        );
        assert_eq!(r.pending(), 0);

        // Bad bytes, a wrong total, a body longer than the header says.
        assert!(r.add(a, &dgram(2, 1, 3, &[0; CHUNK])).is_err());
        assert!(r.add(a, &dgram(3, 0, 3, &line)).is_ok());
        assert!(r.add(a, &dgram(3, 1, 4, pattern_slice(0, CHUNK))).is_err());
        assert!(r.add(a, &dgram(4, 0, 1, &line)).is_err());
        assert!(r.add(a, &dgram(5, 9, 2, &line)).is_err());
        assert!(r.add(a, &dgram(6, 0, u32::MAX, &line)).is_err());
        assert!(r.add(a, b"QLRQ").is_err());
        assert_eq!(r.pending(), 0);
    }

    #[test]
    fn abandoned_requests_are_bounded() {
        let a: SocketAddr = "127.0.0.1:9".parse().unwrap();
        let mut r = Requests::default();
        for id in 0..(MAX_PENDING as u64 + 50) {
            let _ = r.add(a, &dgram(id, 1, 3, pattern_slice(0, CHUNK)));
        }
        assert_eq!(r.pending(), MAX_PENDING);
    }
}
