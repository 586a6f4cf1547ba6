//! The connection's timers. The loss-detection and delayed-ACK deadlines live in
//! recovery and the packet spaces; the rest are here.

use std::time::{Duration, Instant};

use super::Connection;
use super::close::{CloseFrame, ConnectionError, State};
use crate::error::TransportErrorCode;
use crate::types::SpaceId;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Timer {
    /// The closing or draining period ends.
    Close,
    /// Send a PING to keep the connection alive.
    KeepAlive,
    /// Forget the previous 1-RTT receive keys.
    KeyDiscard,
    /// The pacer lets the next packet go.
    Pacing,
    /// Work put off from the end of the handshake or of a key update, which a
    /// short connection never needs: the spare connection IDs the peer may
    /// hold, and the next 1-RTT keys.
    Prepare,
    /// Give up validating the path in use (RFC 9000 §8.2.4).
    PathValidation,
    /// Send the PATH_CHALLENGE again.
    PathChallenge,
    /// Quiet for `TransportConfig::idle_trim`: give back idle memory.
    Trim,
}

const TIMER_COUNT: usize = 8;

#[derive(Default)]
pub(crate) struct Timers {
    deadlines: [Option<Instant>; TIMER_COUNT],
}

impl Timers {
    pub(crate) fn set(&mut self, t: Timer, at: Instant) {
        self.deadlines[t as usize] = Some(at);
    }
    pub(crate) fn clear(&mut self, t: Timer) {
        self.deadlines[t as usize] = None;
    }
    pub(crate) fn get(&self, t: Timer) -> Option<Instant> {
        self.deadlines[t as usize]
    }
    /// Whether `t` is set and due; if so it is cleared.
    pub(crate) fn expired(&mut self, t: Timer, now: Instant) -> bool {
        match self.deadlines[t as usize] {
            Some(at) if at <= now => {
                self.deadlines[t as usize] = None;
                true
            }
            _ => false,
        }
    }
    fn earliest(&self) -> Option<Instant> {
        self.deadlines.iter().fold(None, |at, &d| earlier(at, d))
    }
}

/// The earlier of two optional deadlines.
#[inline]
fn earlier(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

impl Connection {
    /// The next time [`Connection::handle_timeout`] must be called.
    #[inline]
    pub fn poll_timeout(&self) -> Option<Instant> {
        let (others, loss) = self.poll_timeouts();
        earlier(others, loss)
    }

    /// [`Connection::poll_timeout`] in two: (every timer but loss detection,
    /// the loss-detection timer of RFC 9002 §6.2 / A.8). A driver that still
    /// holds unread datagrams may let a due loss timer wait for the ACK among
    /// them, but not the others (idle, ACK delay, pacing, ...).
    pub fn poll_timeouts(&self) -> (Option<Instant>, Option<Instant>) {
        match self.state {
            State::Drained { .. } => return (None, None),
            State::Closing { .. } | State::Draining { .. } => {
                return (self.timers.get(Timer::Close), None);
            }
            _ => {}
        }
        // Folded by hand, Application's ACK timer alone once Initial and
        // Handshake are gone: the driver asks after every round, and the
        // iterator chain cost ~100 instructions more per request.
        let mut at = earlier(self.timers.earliest(), self.idle_deadline());
        at = earlier(at, self.send_deadline());
        at = earlier(at, self.mtu.timer());
        at = earlier(at, self.stall_deadline());
        let loss = self.recovery.loss_detection_timer();
        if self.spaces.early_dropped() {
            let ack = self.spaces[SpaceId::Data.index()].ack.timer();
            return (earlier(at, ack), loss);
        }
        for s in SpaceId::ALL {
            at = earlier(at, self.spaces[s.index()].ack.timer());
        }
        (at, loss)
    }

    /// Let timers that are due fire.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.timers.expired(Timer::Close, now) {
            self.on_close_timer(now);
            return;
        }
        if self.is_closed() {
            return;
        }
        if self.idle_deadline().is_some_and(|at| at <= now) {
            self.on_idle_timeout(now);
            return;
        }
        if self.send_deadline().is_some_and(|at| at <= now) {
            self.on_send_timeout(now);
            return;
        }
        if self.timers.expired(Timer::KeyDiscard, now) {
            if let Some(keys) = self.one_rtt.as_mut() {
                keys.discard_previous();
            }
        }
        if self.timers.expired(Timer::KeepAlive, now) {
            self.ping_pending = true;
        }
        self.timers.expired(Timer::Pacing, now);
        if self.stall_deadline().is_some_and(|at| at <= now) {
            self.on_stall_timer();
        }
        if self.timers.expired(Timer::PathChallenge, now) {
            self.on_challenge_timer();
        }
        if self.timers.expired(Timer::PathValidation, now) {
            self.on_validation_timeout(now);
        }
        if self.timers.expired(Timer::Prepare, now) {
            self.top_up_cids();
            if let Some(keys) = self
                .one_rtt
                .as_mut()
                .filter(|_| self.config.next_keys_ahead)
            {
                keys.prepare_next();
            }
            self.release_scratch();
            // The IDs drew from the generator: back to a seed (issue #33).
            self.rng.park();
        }
        self.mtu.on_timeout(now);
        if self
            .recovery
            .loss_detection_timer()
            .is_some_and(|t| t <= now)
        {
            self.on_loss_timer(now);
        }
        // Only the spaces still held: indexing a dropped one mutably brings
        // its box back, and with it every per-packet look at Initial and
        // Handshake, for the rest of a busy connection.
        for s in self.spaces.iter_mut() {
            if s.ack.timer().is_some_and(|t| t <= now) {
                s.ack.immediate = true;
            }
        }
        if self.timers.expired(Timer::Trim, now) {
            self.trim_idle(now);
        }
    }

    /// Activity happened: push the idle deadline back (RFC 9000 §10.1). Only
    /// the instant is kept, once per packet; the deadline is worked out when
    /// asked for (`poll_timeout`, `handle_timeout`), once per round.
    pub(crate) fn reset_idle_timer(&mut self, now: Instant) {
        self.idle_since = Some(now);
        self.arm_trim(now);
        if let Some(interval) = self.config.keep_alive {
            self.timers.set(Timer::KeepAlive, now + interval);
        }
    }

    /// Activity: give back idle memory `idle_trim` after the last of it.
    #[inline]
    pub(crate) fn arm_trim(&mut self, now: Instant) {
        if self.handshake_confirmed && !self.config.idle_trim.is_zero() {
            self.timers.set(Timer::Trim, now + self.config.idle_trim);
        }
    }

    /// When the connection times out for lack of activity, or because its
    /// handshake took too long, if it can.
    fn idle_deadline(&self) -> Option<Instant> {
        let handshake = (!self.handshake_complete && !self.config.handshake_timeout.is_zero())
            .then(|| self.started + self.config.handshake_timeout);
        match (self.activity_deadline(), handshake) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// When the connection times out for lack of activity, if it can.
    fn activity_deadline(&self) -> Option<Instant> {
        let since = self.idle_since?;
        let local = self.config.max_idle_timeout;
        let peer = self
            .peer_params
            .as_ref()
            .map_or(std::time::Duration::ZERO, |p| p.max_idle_timeout);
        //= https://www.rfc-editor.org/rfc/rfc9000#section-10.1
        //# Each endpoint advertises a max_idle_timeout, but the effective value
        //# at an endpoint is computed as the minimum of the two advertised values
        let timeout = match (local.is_zero(), peer.is_zero()) {
            (true, true) => return None,
            (false, true) => local,
            (true, false) => peer,
            (false, false) => local.min(peer),
        };
        //# To avoid excessively small idle timeout periods, endpoints MUST
        //# increase the idle timeout period to be at least three times the
        //# current Probe Timeout (PTO).
        Some(since + timeout.max(3 * self.app_pto()))
    }

    /// The Application space's PTO (RFC 9002 §6.2.1), without building the
    /// whole path state: the driver asks for the deadlines built on it
    /// after every round.
    #[inline]
    pub(super) fn app_pto(&self) -> Duration {
        self.recovery
            .rtt()
            .pto_base()
            .saturating_add(self.peer_max_ack_delay())
    }
}

impl Connection {
    /// When the connection is closed for making no progress in sending, if
    /// it has something to send and a send timeout.
    fn send_deadline(&self) -> Option<Instant> {
        self.streams.send_deadline()
    }

    /// The connection had data to send and the peer let none of it progress
    /// for the send timeout: a peer that stops acknowledging or granting
    /// credit, but keeps the connection alive, would otherwise hold its send
    /// buffers, and the application's writers, for good.
    fn on_send_timeout(&mut self, now: Instant) {
        let timeout = self.config.send_timeout.unwrap_or(Duration::ZERO);
        tracing::debug!(side = ?self.side, ?timeout, "closing: no progress in sending");
        // The peer broke no rule (a receiver may withhold credit), and we
        // have no internal error: we close by choice.
        //= https://www.rfc-editor.org/rfc/rfc9000#section-20.1
        //# NO_ERROR (0x00):  An endpoint uses this with CONNECTION_CLOSE to
        //# signal that the connection is being closed abruptly in the absence
        //# of any error.
        let close = CloseFrame {
            code: TransportErrorCode::NO_ERROR.0,
            frame_type: Some(0),
            reason: b"no progress in sending".to_vec(),
        };
        self.enter_closing(now, ConnectionError::SendTimedOut, close);
    }
}
