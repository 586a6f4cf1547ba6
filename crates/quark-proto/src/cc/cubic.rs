//! CUBIC (RFC 9438), with the Reno-friendly region and fast convergence.
//!
//! CONTRACT (filled in by the recovery work).

/// CUBIC state.
#[derive(Debug)]
pub struct Cubic {
    // implementer's fields
    _todo: (),
}

impl Cubic {
    /// Start in slow start with the initial window.
    pub fn new(mtu: u64) -> Self {
        let _ = mtu;
        todo!("cubic")
    }
}

impl super::Controller for Cubic {
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
