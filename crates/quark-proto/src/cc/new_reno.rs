//! NewReno (RFC 9002 §7.3, Appendix B).
//!
//! CONTRACT (filled in by the recovery work).

/// NewReno state.
#[derive(Debug)]
pub struct NewReno {
    // implementer's fields
    _todo: (),
}

impl NewReno {
    /// Start in slow start with the initial window.
    pub fn new(mtu: u64) -> Self {
        let _ = mtu;
        todo!("new reno")
    }
}

impl super::Controller for NewReno {
    fn on_ack(
        &mut self,
        now: std::time::Instant,
        sent_time: std::time::Instant,
        bytes: u64,
        rtt: &crate::recovery::RttEstimator,
    ) {
        let _ = (now, sent_time, bytes, rtt);
        todo!("cc")
    }
    fn on_congestion_event(
        &mut self,
        now: std::time::Instant,
        sent_time: std::time::Instant,
        persistent: bool,
        lost_bytes: u64,
    ) {
        let _ = (now, sent_time, persistent, lost_bytes);
        todo!("cc")
    }
    fn window(&self) -> u64 {
        todo!("cc")
    }
    fn ssthresh(&self) -> u64 {
        todo!("cc")
    }
    fn name(&self) -> &'static str {
        todo!("cc")
    }
}
