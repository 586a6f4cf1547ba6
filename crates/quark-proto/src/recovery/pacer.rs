//! Pacing (RFC 9002 §7.7): spread a window's worth of packets over an RTT.
//!
//! CONTRACT (filled in by the recovery work).

use std::time::{Duration, Instant};

/// A token-bucket pacer at N × cwnd / smoothed_rtt (N = 1.25), allowing a small burst.
#[derive(Clone, Debug)]
pub struct Pacer {
    // implementer's fields
    _todo: (),
}

impl Pacer {
    /// A pacer allowing bursts of up to `burst_packets` datagrams of `mtu` bytes.
    pub fn new(mtu: u64, burst_packets: u64) -> Self {
        let _ = (mtu, burst_packets);
        todo!("pacer")
    }

    /// When a packet of `bytes` may be sent, given the window and RTT (None: now).
    pub fn delay(
        &mut self,
        now: Instant,
        bytes: u64,
        cwnd: u64,
        srtt: Duration,
    ) -> Option<Instant> {
        let _ = (now, bytes, cwnd, srtt);
        todo!("pacer")
    }

    /// Account for a packet sent at `now`.
    pub fn on_sent(&mut self, now: Instant, bytes: u64) {
        let _ = (now, bytes);
        todo!("pacer")
    }
}
