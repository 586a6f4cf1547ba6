//! RTT estimation (RFC 9002 §5).
//!
//! CONTRACT (filled in by the recovery work).

use std::time::Duration;

/// min_rtt, smoothed_rtt, rttvar and latest_rtt.
#[derive(Clone, Debug)]
pub struct RttEstimator {
    // implementer's fields
    _todo: (),
}

impl RttEstimator {
    /// Before any sample: smoothed = initial, rttvar = initial / 2.
    pub fn new(initial_rtt: Duration) -> Self {
        let _ = initial_rtt;
        todo!("rtt")
    }

    /// Take a sample (§5.3). `ack_delay` is ignored before handshake confirmation only
    /// as the RFC says, and capped at `max_ack_delay` after it.
    pub fn update(
        &mut self,
        latest_rtt: Duration,
        ack_delay: Duration,
        max_ack_delay: Duration,
        handshake_confirmed: bool,
    ) {
        let _ = (latest_rtt, ack_delay, max_ack_delay, handshake_confirmed);
        todo!("rtt")
    }

    /// smoothed_rtt
    pub fn smoothed(&self) -> Duration {
        todo!("rtt")
    }
    /// rttvar
    pub fn var(&self) -> Duration {
        todo!("rtt")
    }
    /// min_rtt (the initial RTT before any sample)
    pub fn min(&self) -> Duration {
        todo!("rtt")
    }
    /// latest_rtt
    pub fn latest(&self) -> Duration {
        todo!("rtt")
    }
    /// Whether any sample was taken.
    pub fn has_sample(&self) -> bool {
        todo!("rtt")
    }
    /// smoothed_rtt + max(4·rttvar, kGranularity): the PTO without max_ack_delay.
    pub fn pto_base(&self) -> Duration {
        todo!("rtt")
    }
}
