//! Connection-level flow control (RFC 9000 §4.1): MAX_DATA and DATA_BLOCKED.
//!
//! CONTRACT (filled in by the streams work).

use crate::error::TransportError;

/// What the peer may send us, across all streams.
pub struct RecvFlow {
    // implementer's fields
    _todo: (),
}

impl RecvFlow {
    /// We advertised `window` bytes initially (initial_max_data).
    pub fn new(window: u64) -> Self {
        let _ = window;
        todo!("recv flow")
    }

    /// New bytes arrived (growth of some stream's highest offset, or of a final size).
    /// Exceeding the advertised limit is FLOW_CONTROL_ERROR.
    pub fn on_received(&mut self, new_bytes: u64) -> Result<(), TransportError> {
        let _ = new_bytes;
        todo!("recv flow")
    }

    /// The application read (or discarded) `n` bytes.
    pub fn on_consumed(&mut self, n: u64) {
        let _ = n;
        todo!("recv flow")
    }

    /// A new MAX_DATA to advertise, when enough was consumed (half a window); it is
    /// considered sent.
    pub fn take_max_data(&mut self) -> Option<u64> {
        todo!("recv flow")
    }

    /// The limit currently advertised.
    pub fn max_data(&self) -> u64 {
        todo!("recv flow")
    }
}

/// What we may send the peer, across all streams.
pub struct SendFlow {
    // implementer's fields
    _todo: (),
}

impl SendFlow {
    /// The peer allowed `max_data` (its initial_max_data).
    pub fn new(max_data: u64) -> Self {
        let _ = max_data;
        todo!("send flow")
    }

    /// Bytes we may still commit to streams.
    pub fn credit(&self) -> u64 {
        todo!("send flow")
    }

    /// `n` bytes were committed (written into stream buffers).
    pub fn consume(&mut self, n: u64) {
        let _ = n;
        todo!("send flow")
    }

    /// The peer raised MAX_DATA. Returns true if credit grew.
    pub fn on_max_data(&mut self, max: u64) -> bool {
        let _ = max;
        todo!("send flow")
    }

    /// Note that a write was limited by connection credit.
    pub fn set_blocked(&mut self) {
        todo!("send flow")
    }

    /// The limit to report in DATA_BLOCKED, once per limit; reporting counts as sending.
    pub fn take_blocked(&mut self) -> Option<u64> {
        todo!("send flow")
    }
}
