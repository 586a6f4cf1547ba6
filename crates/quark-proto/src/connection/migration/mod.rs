//! Connection migration (RFC 9000 §9): following the peer to a new address,
//! validating paths with PATH_CHALLENGE / PATH_RESPONSE (§8.2), and a client
//! moving on purpose.
//!
//! One path is in use (`Connection::path`); the one before the last change is
//! kept to go back to. A batch of datagrams from any other address is
//! processed with `off_path_rx` set; the path changes after it only if it held
//! the peer's newest non-probing packet (§9.3).

use std::net::{IpAddr, SocketAddr};
use std::time::Instant;

use rand::Rng;

mod client;

use crate::connection::mtu::MtuDiscovery;
use crate::connection::timers::Timer;
use crate::connection::{Connection, Path, Transmit};
use crate::frame::Frame;
use crate::packet::MIN_INITIAL_SIZE;
use crate::types::SpaceId;

/// PATH_CHALLENGE payloads of one validation remembered: a late response to
/// an earlier one still counts.
const CHALLENGES_KEPT: usize = 3;

/// Why [`Connection::migrate`] refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MigrateError {
    /// Only a client moves on purpose.
    NotClient,
    /// The handshake is not confirmed yet (RFC 9000 §9).
    NotConfirmed,
    /// We or the peer disabled active migration.
    Disabled,
    /// The peer gave us no unused connection ID (RFC 9000 §9.5).
    NoConnectionId,
}

impl std::fmt::Display for MigrateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            MigrateError::NotClient => "only a client migrates",
            MigrateError::NotConfirmed => "handshake not confirmed",
            MigrateError::Disabled => "active migration is disabled",
            MigrateError::NoConnectionId => "no spare connection ID of the peer",
        })
    }
}

impl std::error::Error for MigrateError {}

/// A validation of the path in use (RFC 9000 §8.2).
struct Validation {
    sent: [Option<[u8; 8]>; CHALLENGES_KEPT],
    /// A PATH_CHALLENGE goes in the next packet.
    due: bool,
}

/// One datagram for another path than the one in use: the answer to a probe
/// from there, or a challenge of the path we left (§9.3.3).
struct OffPath {
    remote: SocketAddr,
    response: Option<[u8; 8]>,
    challenge: Option<[u8; 8]>,
    /// Bytes we may send there (3× what came from it until validated, §8.1).
    budget: u64,
}

/// Migration state of a connection.
#[derive(Default)]
pub(crate) struct Migration {
    /// The validated path before the last change of address.
    /// Boxed, as `validation` and `off_path`: every idle connection carries
    /// this struct and few ever migrate (issue #30).
    pub(super) prev: Option<Box<Path>>,
    /// Client: the server's preferred address, to move to once the
    /// handshake is confirmed (RFC 9000 §9.6).
    pub(super) preferred: Option<SocketAddr>,
    validation: Option<Box<Validation>>,
    off_path: Option<Box<OffPath>>,
    /// Server: our preferred address (IP) and its connection ID: once the
    /// client sends there with that ID, we answer from there.
    pub(crate) preferred_local: Option<(IpAddr, crate::cid::ConnectionId)>,
    /// Server with a preferred address: the local IP the batch arrived at.
    pub(crate) rx_local_ip: Option<IpAddr>,
    /// A batch from an address other than the path's is being processed.
    pub(crate) off_path_rx: bool,
    /// ... and it held the peer's newest non-probing packet.
    pub(crate) newest_non_probing: bool,
    /// ... and the last PATH_CHALLENGE it carried (answered on its path).
    pub(crate) rx_challenge: Option<[u8; 8]>,
    /// A challenge or response went into the packet being built: the
    /// datagram is padded to 1200 bytes (§8.2.1, §8.2.2).
    pub(crate) pad: bool,
    /// Server: NEW_TOKEN tokens given after the first, for moves to new
    /// addresses (`connection/new_token.rs`); also the newest's number.
    pub(crate) tokens_renewed: u8,
}

impl Migration {
    /// Whether a PATH_CHALLENGE waits for the next packet on the path in use.
    pub(crate) fn challenge_due(&self) -> bool {
        self.validation.as_ref().is_some_and(|v| v.due)
    }

    /// Whether a datagram for another path waits.
    pub(crate) fn has_off_path(&self) -> bool {
        self.off_path.is_some()
    }
}

/// Whether `a` and `b` are the same host as far as congestion goes: the same
/// IPv4 address, or the same IPv6 /64 (RFC 9000 §9.4: a port change alone, as
/// NAT rebinding makes, keeps the congestion state).
pub(super) fn same_host(a: SocketAddr, b: SocketAddr) -> bool {
    match (a.ip(), b.ip()) {
        (IpAddr::V4(x), IpAddr::V4(y)) => x == y,
        (IpAddr::V6(x), IpAddr::V6(y)) => x.octets()[..8] == y.octets()[..8],
        _ => false,
    }
}

impl Connection {
    /// Server: the local IP the next batch arrived at (only kept with a
    /// preferred address; one branch otherwise).
    pub(crate) fn note_local_ip(&mut self, local_ip: Option<IpAddr>) {
        if self.migration.preferred_local.is_some() {
            self.migration.rx_local_ip = local_ip;
        }
    }

    /// Server: an authenticated packet to `dst_cid`. The client moved to our
    /// preferred address when it sends there with that address's ID (only it
    /// knows the ID, so copies cannot fake it): our answers leave from there.
    pub(crate) fn on_preferred_packet(&mut self, dst_cid: &crate::cid::ConnectionId) {
        let Some((ip, cid)) = self.migration.preferred_local else {
            return;
        };
        if cid == *dst_cid && self.migration.rx_local_ip == Some(ip) {
            self.path.local_ip = Some(ip);
        }
    }

    /// Before a batch from `remote`, not the path's address: `None` to drop
    /// it, else whether the path may follow it. Only a server follows the
    /// peer, and only once the handshake is confirmed; a client still takes
    /// packets from the server address it left (for a preferred address).
    pub(crate) fn accept_remote(&mut self, remote: SocketAddr) -> Option<bool> {
        let known = self
            .migration
            .prev
            .as_ref()
            .is_some_and(|p| p.remote == remote);
        //= https://www.rfc-editor.org/rfc/rfc9000#section-9
        //# If a client receives packets from an unknown server address, the
        //# client MUST discard these packets.
        //# An endpoint MUST NOT initiate connection migration before the handshake
        //# is confirmed
        if self.side.is_client() || !self.handshake_confirmed {
            if self.side.is_client() && known {
                return Some(false);
            }
            tracing::trace!(%remote, "datagram from an unknown address dropped");
            return None;
        }
        self.migration.off_path_rx = true;
        self.migration.newest_non_probing = false;
        self.migration.rx_challenge = None;
        Some(true)
    }

    /// After a batch from `remote` (`bytes` long), not the path's address.
    pub(crate) fn after_off_path_batch(&mut self, now: Instant, remote: SocketAddr, bytes: u64) {
        self.migration.off_path_rx = false;
        let challenge = self.migration.rx_challenge.take();
        if self.is_closed() {
            return;
        }
        if self.migration.newest_non_probing {
            //= https://www.rfc-editor.org/rfc/rfc9000#section-9.3
            //# If the recipient permits the migration, it MUST send subsequent
            //# packets to the new peer address and MUST initiate path validation
            //# (Section 8.2) to verify the peer's ownership of the address if
            //# validation is not already underway.
            self.move_to(now, remote, bytes);
            if let Some(data) = challenge {
                if self.path_responses.len() >= crate::connection::frames::MAX_PATH_RESPONSES {
                    self.path_responses.pop_front();
                }
                self.path_responses.push_back(data);
            }
            return;
        }
        //= https://www.rfc-editor.org/rfc/rfc9000#section-8.2.2
        //# An endpoint MUST NOT delay transmission of a packet containing a
        //# PATH_RESPONSE frame ... PATH_RESPONSE frame MUST be sent on the
        //# network path where the PATH_CHALLENGE frame was received.
        if let Some(data) = challenge {
            let known = self
                .migration
                .prev
                .as_ref()
                .is_some_and(|p| p.remote == remote);
            // One answer waits at a time, within 3x what the address sent.
            self.migration.off_path = Some(Box::new(OffPath {
                remote,
                response: Some(data),
                challenge: None,
                budget: if known { u64::MAX } else { 3 * bytes },
            }));
        }
    }

    /// Make `remote` the path in use; `bytes` came from it in this batch.
    fn move_to(&mut self, now: Instant, remote: SocketAddr, bytes: u64) {
        let old = self.path.remote;
        self.rare_stats().migrations += 1;
        let back = self
            .migration
            .prev
            .as_ref()
            .is_some_and(|p| p.remote == remote);
        if back {
            // The peer's newest packets come from the path we left: it was
            // validated, so it needs no new validation (§9.3.3).
            let prev = self.migration.prev.take().expect("previous path");
            let left = std::mem::replace(&mut self.path, *prev);
            if left.validated {
                self.migration.prev = Some(Box::new(left));
            }
            self.migration.validation = None;
            self.path.bytes_received += bytes;
            tracing::debug!(%remote, "back to the previous path");
        } else {
            let new = Path {
                remote,
                local_ip: self.path.local_ip,
                validated: false,
                bytes_received: bytes,
                bytes_sent: 0,
                mtu: self.path.mtu,
            };
            let left = std::mem::replace(&mut self.path, new);
            if left.validated {
                self.migration.prev = Some(Box::new(left));
            }
            tracing::debug!(%old, %remote, "peer moved");
            self.start_validation(now);
            //= https://www.rfc-editor.org/rfc/rfc9000#section-9.3.3
            //# In response to an apparent migration, endpoints MUST validate the
            //# previously active path using a PATH_CHALLENGE frame.
            if let Some(prev) = &self.migration.prev {
                let data: [u8; 8] = self.rng.random();
                self.migration.off_path = Some(Box::new(OffPath {
                    remote: prev.remote,
                    response: None,
                    challenge: Some(data),
                    budget: u64::MAX,
                }));
            }
        }
        if !same_host(old, remote) {
            self.reset_path_state();
        }
        //= https://www.rfc-editor.org/rfc/rfc9000#section-9.5
        //# an endpoint SHOULD use a new connection ID when ... it sends to a new
        //# peer address
        self.peer_cids.rotate(&mut self.cid_events);
        let path = self.path_state();
        self.recovery.update_timer(now, &path);
    }

    /// A new network path: congestion control, RTT and the MTU start over.
    fn reset_path_state(&mut self) {
        self.rare_stats().congestion_resets += 1;
        let config = super::recovery_config(&self.config);
        self.mtu = MtuDiscovery::new(
            self.config.initial_mtu,
            self.config.max_udp_payload_size,
            self.config.mtu_discovery,
        );
        if let Some(p) = &self.peer_params {
            self.mtu.set_peer_max(p.max_udp_payload_size);
        }
        self.path.mtu = self.mtu.current();
        self.recovery.reset_path(&config, u64::from(self.path.mtu));
    }

    /// Start validating the path in use.
    fn start_validation(&mut self, now: Instant) {
        //= https://www.rfc-editor.org/rfc/rfc9000#section-8.2.4
        //# This timeout SHOULD be set to three times the larger of the current PTO
        //# or the PTO for the new path (using kInitialRtt, as defined in
        //# [QUIC-RECOVERY]).
        let pto = self.recovery.pto_base(SpaceId::Data, &self.path_state());
        let initial_pto = 3 * self.config.initial_rtt;
        self.timers
            .set(Timer::PathValidation, now + 3 * pto.max(initial_pto));
        self.migration.validation = Some(Box::new(Validation {
            sent: [None; CHALLENGES_KEPT],
            due: true,
        }));
    }

    /// A PATH_CHALLENGE for the path in use, if one is due: written into the
    /// packet being built, which is then padded.
    pub(crate) fn write_path_challenge(
        &mut self,
        now: Instant,
        buf: &mut Vec<u8>,
        max_end: usize,
    ) -> bool {
        if buf.len() + 9 > max_end {
            return false;
        }
        let data: [u8; 8] = self.rng.random();
        let Some(v) = self.migration.validation.as_mut() else {
            return false;
        };
        v.due = false;
        v.sent.rotate_left(1);
        v.sent[CHALLENGES_KEPT - 1] = Some(data);
        Frame::PathChallenge(data).encode(buf);
        self.migration.pad = true;
        self.rare_stats().path_challenges += 1;
        // Sent again each PTO until answered or given up.
        let pto = self.recovery.pto_base(SpaceId::Data, &self.path_state());
        self.timers.set(Timer::PathChallenge, now + pto);
        true
    }

    /// PATH_RESPONSE from the peer.
    pub(crate) fn on_path_response(&mut self, now: Instant, data: [u8; 8]) {
        //= https://www.rfc-editor.org/rfc/rfc9000#section-8.2.3
        //# Path validation succeeds when a PATH_RESPONSE frame is received that
        //# contains the data that was sent in a previous PATH_CHALLENGE frame.
        let ours = self
            .migration
            .validation
            .as_ref()
            .is_some_and(|v| v.sent.contains(&Some(data)));
        if !ours {
            return;
        }
        self.migration.validation = None;
        self.timers.clear(Timer::PathValidation);
        self.timers.clear(Timer::PathChallenge);
        if self.side.is_client() {
            // The server's address we left is unknown from now on (§9).
            self.migration.prev = None;
        }
        if !self.path.validated {
            self.path.validated = true;
            let path = self.path_state();
            self.recovery.update_timer(now, &path);
            // Tokens are bound to the client's IP address: one from before
            // the move would not spare its next connection from here a Retry.
            let ip = |a: SocketAddr| a.ip().to_canonical();
            let new_ip = self
                .migration
                .prev
                .as_ref()
                .is_some_and(|p| ip(p.remote) != ip(self.path.remote));
            if self.side.is_server() && new_ip {
                self.renew_new_token(now);
            }
        }
        tracing::debug!(remote = %self.path.remote, "path validated");
    }

    /// Time to send the PATH_CHALLENGE again.
    pub(crate) fn on_challenge_timer(&mut self) {
        if let Some(v) = self.migration.validation.as_mut() {
            v.due = true;
        }
    }

    /// Validation timed out: back to the previous path, if there is one (§9.3.2).
    pub(crate) fn on_validation_timeout(&mut self, now: Instant) {
        self.migration.validation = None;
        self.timers.clear(Timer::PathChallenge);
        self.rare_stats().validation_failures += 1;
        //= https://www.rfc-editor.org/rfc/rfc9000#section-9.3.2
        //# If validation of the new path fails, the endpoint MUST revert to
        //# the last validated peer address
        let Some(prev) = self.migration.prev.take() else {
            return;
        };
        let old = self.path.remote;
        tracing::debug!(failed = %old, back = %prev.remote, "path validation failed");
        let remote = prev.remote;
        self.path = *prev;
        if !same_host(old, remote) {
            self.reset_path_state();
        }
        let path = self.path_state();
        self.recovery.update_timer(now, &path);
    }

    /// The datagram for another path, if one waits: alone, padded to 1200
    /// bytes within what that path allows.
    pub(crate) fn transmit_off_path(
        &mut self,
        now: Instant,
        buf: &mut Vec<u8>,
    ) -> Option<Transmit> {
        let op = self.migration.off_path.take()?;
        let size = op.budget.min(MIN_INITIAL_SIZE as u64) as usize;
        if self.one_rtt.is_none() || size < 64 {
            return None;
        }
        let builder = self.begin_packet(SpaceId::Data, buf, size)?;
        if let Some(data) = op.response {
            Frame::PathResponse(data).encode(buf);
        }
        if let Some(data) = op.challenge {
            Frame::PathChallenge(data).encode(buf);
            self.rare_stats().path_challenges += 1;
        }
        // Not the path in use: its amplification count stays as it was.
        let sent = self.path.bytes_sent;
        let frames = super::sent::SentFrames::new(SpaceId::Data);
        self.end_packet(now, SpaceId::Data, builder, buf, size, frames, true, false);
        self.path.bytes_sent = sent;
        self.seal_batch(buf);
        self.stats.datagrams_out += 1;
        self.stats.bytes_out += buf.len() as u64;
        Some(Transmit {
            destination: op.remote,
            size: buf.len(),
            segment_size: None,
            ecn: None,
            src_ip: self.path.local_ip,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::same_host;

    #[test]
    fn same_host_is_the_ipv4_address_or_the_ipv6_prefix() {
        let a = |s: &str| s.parse().unwrap();
        assert!(same_host(a("10.0.0.1:5000"), a("10.0.0.1:6000")));
        assert!(!same_host(a("10.0.0.1:5000"), a("10.0.0.2:5000")));
        assert!(same_host(a("[2001:db8::1]:5000"), a("[2001:db8::2]:7000")));
        assert!(!same_host(
            a("[2001:db8:0:1::1]:5000"),
            a("[2001:db8:0:2::1]:5000")
        ));
        assert!(!same_host(a("10.0.0.1:5000"), a("[::ffff:10.0.0.1]:5000")));
    }
}
