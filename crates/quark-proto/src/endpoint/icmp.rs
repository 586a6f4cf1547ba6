//! ICMP reports the driver read from the socket's error queue, each quoting
//! the start of a datagram this endpoint sent: which connection it concerns,
//! and whether it fits that connection (`crate::connection::icmp`).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use super::{ConnectionHandle, Endpoint};
use crate::connection::QuotedDst;

/// Short-header reports searched for a second at most: the search visits
/// every connection, and forged reports must not cost more than that.
const SEARCHES_PER_SECOND: u32 = 16;

/// At most 16 reports a second (the search budget of short-header reports,
/// and the driver's for handing reports between workers): forged reports
/// must not cost more than that.
#[derive(Debug, Default)]
pub struct ReportBudget {
    since: Option<Instant>,
    used: u32,
}

impl ReportBudget {
    /// Whether one more report may be handled at `now` (and counts it).
    pub fn allow(&mut self, now: Instant) -> bool {
        match self.since {
            Some(t) if now.saturating_duration_since(t) < Duration::from_secs(1) => {}
            _ => (self.since, self.used) = (Some(now), 0),
        }
        self.used += 1;
        self.used <= SEARCHES_PER_SECOND
    }
}

impl Endpoint {
    /// An ICMP message (port, host or network unreachable) about a datagram
    /// this endpoint sent to `remote`, whose start it quoted (`quoted`).
    /// The connection the quoted packet's source ID names ends if the report
    /// fits it and it is still in its handshake
    /// ([`ConnectionError::Unreachable`](crate::ConnectionError::Unreachable));
    /// every other report is ignored. Returns the connection ended.
    pub fn handle_unreachable(
        &mut self,
        now: Instant,
        remote: SocketAddr,
        quoted: &[u8],
        port_closed: bool,
    ) -> Option<ConnectionHandle> {
        // Short headers name the peer's ID, which routes nothing here; they
        // belong to established connections, which ignore these reports.
        let (dst, src) = crate::packet::long_header_cids(quoted)?;
        let h = self.lookup(&src)?;
        if !self.conns[h.0].handle_unreachable(now, remote, &dst, port_closed) {
            return None;
        }
        self.sync(h);
        Some(h)
    }

    /// An ICMP Packet Too Big (IPv4: Fragmentation Needed) about a datagram
    /// this endpoint sent to `remote`, whose start it quoted (`quoted`): the
    /// path carries at most `size` bytes of UDP payload. The connection whose
    /// packet it quotes takes it as a hint for its path MTU search, if the
    /// quoted destination ID is the one it uses (RFC 9000 §14.2.1, RFC 8899
    /// §4.6). Returns the connection it applied to.
    pub fn handle_too_big(
        &mut self,
        now: Instant,
        remote: SocketAddr,
        quoted: &[u8],
        size: u16,
    ) -> Option<ConnectionHandle> {
        let long_ids = match quoted.first()? & 0x80 {
            0 => None,
            _ => Some(crate::packet::long_header_cids(quoted)?),
        };
        let (h, named) = match &long_ids {
            Some((dst, src)) => (self.lookup(src)?, QuotedDst::Exact(dst)),
            None => {
                // A short header names only the peer's ID, which no table
                // here maps (its length is the peer's choice): look among the
                // connections on that path.
                if !self.report_searches.allow(now) {
                    return None;
                }
                let named = QuotedDst::Prefix(&quoted[1..]);
                let (i, _) = self
                    .conns
                    .iter()
                    .find(|(_, c)| c.remote_address() == remote && c.is_named_by(named))?;
                (ConnectionHandle(i), named)
            }
        };
        if !self.conns[h.0].handle_too_big(remote, named, size) {
            return None;
        }
        self.sync(h);
        Some(h)
    }

    /// This host's own kernel refused a datagram to `remote` as larger than
    /// the interface carries (`size` bytes of UDP payload): a probe beyond the
    /// interface's MTU, which no network would ever answer. Every connection
    /// to that address (and port, unless it is 0: an unconnected IPv4 socket's
    /// local report gives none) takes it as a too-big report. It quotes no
    /// packet, and needs none: nobody outside this host can make one. Returns
    /// the connections it applied to.
    pub fn handle_local_too_big(
        &mut self,
        now: Instant,
        remote: SocketAddr,
        size: u16,
    ) -> Vec<ConnectionHandle> {
        if !self.report_searches.allow(now) {
            return Vec::new();
        }
        let hits: Vec<ConnectionHandle> = self
            .conns
            .iter_mut()
            .filter(|(_, c)| {
                let to = c.remote_address();
                to.ip() == remote.ip() && (remote.port() == 0 || to.port() == remote.port())
            })
            .filter_map(|(i, c)| c.handle_local_too_big(size).then_some(ConnectionHandle(i)))
            .collect();
        for &h in &hits {
            self.sync(h);
        }
        hits
    }
}
