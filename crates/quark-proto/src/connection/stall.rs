//! A client waiting for a response that hears nothing pings the server.
//!
//! A NAT may give a client a new port mid-download. The server follows only
//! once a packet from the new address arrives. If everything it had in
//! flight went to the old address and the client had acknowledged all it
//! got, neither side sends again. The server's PTO probes go to the old
//! address. Once it has moved, its PATH_CHALLENGE waits for an
//! amplification budget (RFC 9000 §8) that only the client's bytes give.
//! The connection then dies at the idle timeout.
//!
//! So a client that has a request open, nothing ack-eliciting of its own in
//! flight, and no ack-eliciting packet from the server for 3 PTOs sends a
//! PING. If still nothing comes, it pings again after 6 PTOs, then after
//! 12; three at most until the server sends again. A server that merely takes its
//! time to answer costs three PINGs. The PINGs do not keep a hung server's
//! connection open for long: their ACKs are not ack-eliciting, so they do
//! not re-arm anything.

use std::time::Instant;

use super::Connection;
use crate::types::SpaceId;

/// Looks (and so PINGs) for one silence of the server, at most.
const MAX_STALL_PINGS: u8 = 3;

impl Connection {
    /// When to look for a stalled response, if anything is armed. Nothing
    /// is while our own ack-eliciting packets are in flight: their PTO
    /// probes reach the server from wherever we are (and a client waiting
    /// on a request in flight, the common case, returns here cheaply).
    pub(super) fn stall_deadline(&self) -> Option<Instant> {
        if !self.side.is_client()
            || self.streams.stall_looks >= MAX_STALL_PINGS
            || !self.handshake_confirmed
            || self.recovery.has_ack_eliciting_in_flight(SpaceId::Data)
            || !self.config.stall_pings
        {
            return None;
        }
        let since = self.idle_since?;
        Some(since + 3 * self.app_pto() * (1u32 << self.streams.stall_looks))
    }

    /// The stall deadline passed: ping if a request still waits.
    pub(super) fn on_stall_timer(&mut self) {
        if self.streams.awaits_peer() {
            self.ping_pending = true;
            self.rare_stats().stall_pings += 1;
            tracing::debug!(n = self.streams.stall_looks + 1, "response stalled: PING");
        }
        self.streams.stall_looks += 1;
    }

    /// An ack-eliciting packet from the peer: it reaches us, and the count
    /// starts over.
    #[inline]
    pub(super) fn on_peer_eliciting(&mut self) {
        self.streams.stall_looks = 0;
    }
}
