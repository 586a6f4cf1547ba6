//! Connection-level flow control (RFC 9000 §4.1): MAX_DATA and DATA_BLOCKED.

use crate::error::TransportError;
use crate::varint::VarInt;

/// What the peer may send us, across all streams.
#[derive(Debug)]
pub struct RecvFlow {
    /// Credit kept ahead of what the application consumed.
    window: u64,
    /// The limit we advertised.
    max_data: u64,
    /// Sum over streams of the highest offset received (or final size).
    received: u64,
    /// Bytes read or discarded by the application.
    consumed: u64,
}

impl RecvFlow {
    /// We advertised `window` bytes initially (initial_max_data).
    pub fn new(window: u64) -> Self {
        RecvFlow {
            window,
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

    /// A new MAX_DATA to advertise, when enough was consumed (half a window); it is
    /// considered sent.
    pub fn take_max_data(&mut self) -> Option<u64> {
        //= https://www.rfc-editor.org/rfc/rfc9000#section-4.1
        //# A receiver could determine the maximum data limit to be
        //# advertised based on the sum of bytes consumed on all streams.
        let limit = self
            .consumed
            .saturating_add(self.window)
            .min(VarInt::MAX.into_inner());
        let consumed_since = limit.saturating_sub(self.max_data);
        if consumed_since == 0 || consumed_since < self.window / 2 {
            return None;
        }
        self.max_data = limit;
        Some(limit)
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

    #[test]
    fn recv_limit_is_enforced() {
        let mut f = RecvFlow::new(100);
        f.on_received(60).unwrap();
        f.on_received(40).unwrap();
        let e = f.on_received(1).unwrap_err();
        assert_eq!(e.code, TransportErrorCode::FLOW_CONTROL_ERROR);
        assert_eq!(f.received(), 100);
        let e = RecvFlow::new(10).on_received(u64::MAX).unwrap_err();
        assert_eq!(e.code, TransportErrorCode::FLOW_CONTROL_ERROR);
    }

    #[test]
    fn max_data_follows_consumption_by_half_windows() {
        let mut f = RecvFlow::new(100);
        assert_eq!(f.take_max_data(), None);
        f.on_received(100).unwrap();
        // Received but not consumed: no credit.
        assert_eq!(f.take_max_data(), None);
        f.on_consumed(49);
        assert_eq!(f.take_max_data(), None);
        f.on_consumed(1);
        assert_eq!(f.take_max_data(), Some(150));
        assert_eq!(f.take_max_data(), None);
        assert_eq!(f.max_data(), 150);
        f.on_received(50).unwrap();
        assert!(f.on_received(1).is_err());
        f.on_consumed(100);
        assert_eq!(f.take_max_data(), Some(250));
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
