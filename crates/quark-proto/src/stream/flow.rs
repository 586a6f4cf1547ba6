//! Connection-level flow control (RFC 9000 §4.1): MAX_DATA and DATA_BLOCKED,
//! and the receive window that grows to the path (shared with streams).

use std::time::{Duration, Instant};

use crate::error::TransportError;
use crate::varint::VarInt;

/// The time and smoothed RTT the connection last saw: flow control is told
/// them, since reads carry no clock.
#[derive(Clone, Copy, Debug)]
pub struct FlowClock {
    /// The latest time the connection was given.
    pub now: Instant,
    /// Its smoothed RTT then.
    pub rtt: Duration,
}

/// A receive window that grows to the path's bandwidth-delay product. Credit
/// is returned once half a window was read; when the last return was less
/// than two RTTs ago, the reader is keeping up and the window is what limits
/// the sender, so it doubles, up to `max`. Growth follows reads only: a slow
/// reader never enlarges what the peer may make us buffer.
#[derive(Clone, Copy, Debug)]
pub struct AutoWindow {
    size: u64,
    max: u64,
    last_update: Option<Instant>,
}

impl AutoWindow {
    /// Starts at `size`, grows to `max` (at least `size`).
    pub fn new(size: u64, max: u64) -> Self {
        AutoWindow {
            size,
            max: max.max(size),
            last_update: None,
        }
    }

    /// The current size.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Credit is being returned now: grow first if the previous return was
    /// less than two RTTs ago.
    fn on_update(&mut self, clock: Option<FlowClock>) {
        let Some(c) = clock else { return };
        if let Some(prev) = self.last_update {
            if c.now.saturating_duration_since(prev) < 2 * c.rtt {
                self.size = self.size.saturating_mul(2).min(self.max);
            }
        }
        self.last_update = Some(c.now);
    }

    /// At least `size` (up to the maximum): the connection window keeps room
    /// for its largest stream window.
    pub(crate) fn at_least(&mut self, size: u64) {
        self.size = self.size.max(size.min(self.max));
    }

    /// The new limit to advertise, given `read` bytes read and the `current`
    /// limit, when half a window was read since; it counts as sent.
    pub(crate) fn take(
        &mut self,
        read: u64,
        current: u64,
        clock: Option<FlowClock>,
    ) -> Option<u64> {
        let due = |size: u64| {
            let limit = read.saturating_add(size).min(VarInt::MAX.into_inner());
            let since = limit.saturating_sub(current);
            (since > 0 && since >= size / 2).then_some(limit)
        };
        due(self.size)?;
        self.on_update(clock);
        due(self.size)
    }

    /// The new limit to advertise for any credit read since (`read` past
    /// what `current` left), however little; it counts as sent. The window
    /// does not grow.
    pub(crate) fn take_any(&self, read: u64, current: u64) -> Option<u64> {
        let limit = read.saturating_add(self.size).min(VarInt::MAX.into_inner());
        (limit > current).then_some(limit)
    }
}

/// What the peer may send us, across all streams.
#[derive(Debug)]
pub struct RecvFlow {
    /// Credit kept ahead of what the application consumed.
    window: AutoWindow,
    /// The limit we advertised.
    max_data: u64,
    /// Sum over streams of the highest offset received (or final size).
    received: u64,
    /// Bytes read or discarded by the application.
    consumed: u64,
}

impl RecvFlow {
    /// We advertised `window` bytes initially (initial_max_data); it may grow
    /// to `max` ([`AutoWindow`]).
    pub fn new(window: u64, max: u64) -> Self {
        RecvFlow {
            window: AutoWindow::new(window, max),
            max_data: window,
            received: 0,
            consumed: 0,
        }
    }

    /// New bytes arrived (growth of some stream's highest offset, or of a final size).
    /// Exceeding the advertised limit is FLOW_CONTROL_ERROR.
    pub fn on_received(&mut self, new_bytes: u64) -> Result<(), TransportError> {
        //= https://www.rfc-editor.org/rfc/rfc9000#section-4.1
        //# A receiver MUST close the connection with an error of type
        //# FLOW_CONTROL_ERROR if the sender violates the advertised connection
        //# or stream data limits; see Section 11 for details on error handling.
        match self.received.checked_add(new_bytes) {
            Some(total) if total <= self.max_data => {
                self.received = total;
                Ok(())
            }
            _ => Err(TransportError::flow_control(
                "connection data beyond MAX_DATA",
            )),
        }
    }

    /// The application read (or discarded) `n` bytes.
    pub fn on_consumed(&mut self, n: u64) {
        self.consumed = self.consumed.saturating_add(n);
        // Count what arrived (`on_received`) before what the application consumed.
        debug_assert!(
            self.consumed <= self.received,
            "consumed more than received"
        );
    }

    /// A new MAX_DATA to advertise, when enough was consumed (half a window),
    /// or any was while the peer is blocked; it is considered sent. `clock`
    /// lets the window grow ([`AutoWindow`]).
    pub fn take_max_data(&mut self, clock: Option<FlowClock>) -> Option<u64> {
        //= https://www.rfc-editor.org/rfc/rfc9000#section-4.1
        //# A receiver could determine the maximum data limit to be
        //# advertised based on the sum of bytes consumed on all streams.
        let limit = match self.window.take(self.consumed, self.max_data, clock) {
            Some(limit) => limit,
            // The peer has used all its credit. Waiting for half a window
            // to be read could wait forever: streams nobody reads yet may
            // hold the rest of it, while the reader waits on its own
            // stream for bytes the peer cannot send.
            None if self.peer_blocked() => self.window.take_any(self.consumed, self.max_data)?,
            None => return None,
        };
        self.max_data = limit;
        Some(limit)
    }

    /// Whether the peer has sent all it may (it can send nothing more until
    /// MAX_DATA).
    pub fn peer_blocked(&self) -> bool {
        self.received >= self.max_data
    }

    /// Keep the window at least `size` (the largest stream window and a half),
    /// so one fast stream is not held back by the connection's credit.
    pub fn ensure_window(&mut self, size: u64) {
        self.window.at_least(size);
    }

    /// The current window.
    pub fn window(&self) -> u64 {
        self.window.size()
    }

    /// The limit currently advertised.
    pub fn max_data(&self) -> u64 {
        self.max_data
    }

    /// Bytes counted against the limit so far.
    pub fn received(&self) -> u64 {
        self.received
    }
}

/// What we may send the peer, across all streams.
#[derive(Debug)]
pub struct SendFlow {
    /// The peer's MAX_DATA.
    max_data: u64,
    /// Bytes committed to streams.
    used: u64,
    /// A write was limited by connection credit at this limit.
    blocked_at: Option<u64>,
    /// The last limit reported in DATA_BLOCKED.
    blocked_reported: Option<u64>,
}

impl SendFlow {
    /// The peer allowed `max_data` (its initial_max_data).
    pub fn new(max_data: u64) -> Self {
        SendFlow {
            max_data,
            used: 0,
            blocked_at: None,
            blocked_reported: None,
        }
    }

    /// Bytes we may still commit to streams.
    pub fn credit(&self) -> u64 {
        self.max_data.saturating_sub(self.used)
    }

    /// `n` bytes were committed (written into stream buffers).
    pub fn consume(&mut self, n: u64) {
        debug_assert!(n <= self.credit(), "consumed beyond connection credit");
        self.used = self.used.saturating_add(n);
    }

    /// The peer raised MAX_DATA. Returns true if credit grew.
    pub fn on_max_data(&mut self, max: u64) -> bool {
        //= https://www.rfc-editor.org/rfc/rfc9000#section-4.1
        //# A sender MUST ignore any MAX_STREAM_DATA or MAX_DATA frames that do
        //# not increase flow control limits.
        if max <= self.max_data {
            return false;
        }
        self.max_data = max;
        true
    }

    /// Bytes committed to streams so far.
    pub fn used(&self) -> u64 {
        self.used
    }

    /// Replace the limit, even with a lower one (the server's real
    /// initial_max_data after 0-RTT ran on the remembered one). The caller
    /// checked it holds what was committed.
    pub fn replace_max(&mut self, max: u64) {
        self.max_data = max;
    }

    /// Note that a write was limited by connection credit.
    pub fn set_blocked(&mut self) {
        self.blocked_at = Some(self.max_data);
    }

    /// The limit to report in DATA_BLOCKED, once per limit; reporting counts as sending.
    pub fn take_blocked(&mut self) -> Option<u64> {
        let limit = self.blocked_at?;
        // Stale once the limit grew.
        if limit != self.max_data || self.blocked_reported == Some(limit) {
            return None;
        }
        self.blocked_reported = Some(limit);
        Some(limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::TransportErrorCode;

    /// Any instant will do: times are offsets from it.
    fn start() -> Instant {
        #[allow(clippy::disallowed_methods)]
        Instant::now()
    }

    fn at(t0: Instant, ms: u64) -> Option<FlowClock> {
        Some(FlowClock {
            now: t0 + Duration::from_millis(ms),
            rtt: Duration::from_millis(10),
        })
    }

    /// Consumes what arrives, `n` bytes at time `ms`; the limit advertised, if any.
    fn read(f: &mut RecvFlow, t0: Instant, ms: u64, n: u64) -> Option<u64> {
        f.on_received(n).unwrap();
        f.on_consumed(n);
        f.take_max_data(at(t0, ms))
    }

    #[test]
    fn window_doubles_while_credit_returns_within_two_rtts_up_to_the_maximum() {
        let t0 = start();
        let mut f = RecvFlow::new(100, 350);
        // The first return has nothing to compare with.
        assert_eq!(read(&mut f, t0, 0, 50), Some(150));
        // 15 ms later (< 2 RTTs): the window doubles before the limit is set.
        assert_eq!(read(&mut f, t0, 15, 50), Some(100 + 200));
        assert_eq!(f.window(), 200);
        // Half of the new window takes 100 bytes; again fast: 400, capped at 350.
        assert_eq!(read(&mut f, t0, 20, 99), None);
        assert_eq!(read(&mut f, t0, 25, 1), Some(200 + 350));
        assert_eq!(f.window(), 350);
        assert_eq!(read(&mut f, t0, 26, 175), Some(375 + 350));
        assert_eq!(f.window(), 350, "never above the maximum");
    }

    #[test]
    fn window_stays_when_credit_returns_slower_than_two_rtts_or_without_a_clock() {
        let t0 = start();
        let mut f = RecvFlow::new(100, 1000);
        assert_eq!(read(&mut f, t0, 0, 50), Some(150));
        assert_eq!(
            read(&mut f, t0, 20, 50),
            Some(200),
            "exactly 2 RTTs: no growth"
        );
        assert_eq!(read(&mut f, t0, 100, 50), Some(250));
        f.on_received(50).unwrap();
        f.on_consumed(50);
        assert_eq!(f.take_max_data(None), Some(300));
        assert_eq!(f.window(), 100);
        // The connection window makes room for a stream's (up to its maximum).
        f.ensure_window(600);
        assert_eq!(f.window(), 600);
        f.ensure_window(5000);
        assert_eq!(f.window(), 1000);
    }

    #[test]
    fn a_blocked_peer_gets_back_any_credit_read() {
        let mut f = RecvFlow::new(100, 100);
        // Three streams fill the window; the reader reads 10 bytes of one.
        f.on_received(100).unwrap();
        assert!(f.peer_blocked());
        f.on_consumed(10);
        assert_eq!(
            f.take_max_data(None),
            Some(110),
            "less than half a window, but the peer is blocked"
        );
        assert!(!f.peer_blocked());
        assert_eq!(f.take_max_data(None), None, "nothing read since");
        // Not blocked: half a window as before.
        f.on_received(5).unwrap();
        f.on_consumed(5);
        assert_eq!(f.take_max_data(None), None);
        f.on_received(5).unwrap();
        assert!(f.peer_blocked());
        assert_eq!(f.take_max_data(None), Some(115));
    }

    #[test]
    fn recv_limit_is_enforced() {
        let mut f = RecvFlow::new(100, 100);
        f.on_received(60).unwrap();
        f.on_received(40).unwrap();
        let e = f.on_received(1).unwrap_err();
        assert_eq!(e.code, TransportErrorCode::FLOW_CONTROL_ERROR);
        assert_eq!(f.received(), 100);
        let e = RecvFlow::new(10, 10).on_received(u64::MAX).unwrap_err();
        assert_eq!(e.code, TransportErrorCode::FLOW_CONTROL_ERROR);
    }

    #[test]
    fn max_data_follows_consumption_by_half_windows() {
        let mut f = RecvFlow::new(100, 100);
        assert_eq!(f.take_max_data(None), None);
        // The peer is one byte short of blocked (`a_blocked_peer_...` below).
        f.on_received(99).unwrap();
        // Received but not consumed: no credit.
        assert_eq!(f.take_max_data(None), None);
        f.on_consumed(49);
        assert_eq!(f.take_max_data(None), None);
        f.on_consumed(1);
        assert_eq!(f.take_max_data(None), Some(150));
        assert_eq!(f.take_max_data(None), None);
        assert_eq!(f.max_data(), 150);
        f.on_received(51).unwrap();
        assert!(f.on_received(1).is_err());
        f.on_consumed(100);
        assert_eq!(f.take_max_data(None), Some(250));
    }

    #[test]
    fn send_credit_and_max_data() {
        let mut f = SendFlow::new(100);
        assert_eq!(f.credit(), 100);
        f.consume(70);
        assert_eq!(f.credit(), 30);
        assert!(!f.on_max_data(50));
        assert!(!f.on_max_data(100));
        assert_eq!(f.credit(), 30);
        assert!(f.on_max_data(200));
        assert_eq!(f.credit(), 130);
    }

    #[test]
    fn data_blocked_once_per_limit() {
        let mut f = SendFlow::new(10);
        assert_eq!(f.take_blocked(), None);
        f.consume(10);
        f.set_blocked();
        assert_eq!(f.take_blocked(), Some(10));
        assert_eq!(f.take_blocked(), None);
        f.set_blocked();
        assert_eq!(f.take_blocked(), None);
        f.on_max_data(20);
        // The old limit is stale now.
        assert_eq!(f.take_blocked(), None);
        f.consume(10);
        f.set_blocked();
        assert_eq!(f.take_blocked(), Some(20));
    }
}
