//! Congestion control behind one trait: NewReno (RFC 9002 §7) and CUBIC (RFC 9438).
//!
//! CONTRACT (filled in by the recovery work).

pub mod cubic;
pub mod new_reno;

use std::fmt;
use std::str::FromStr;
use std::time::Instant;

use crate::recovery::RttEstimator;

/// A congestion controller. Windows are in bytes.
pub trait Controller: Send + fmt::Debug {
    /// Bytes of newly acknowledged packet(s) sent at `sent_time` (not app-limited).
    fn on_ack(&mut self, now: Instant, sent_time: Instant, bytes: u64, rtt: &RttEstimator);
    /// A congestion event (loss or ECN-CE) for packets sent at or before `sent_time`.
    /// At most one reduction per round trip: events for packets sent before the
    /// current recovery period began are ignored.
    fn on_congestion_event(
        &mut self,
        now: Instant,
        sent_time: Instant,
        persistent: bool,
        lost_bytes: u64,
    );
    /// A previous congestion event turned out spurious: restore the window from before it.
    fn on_spurious_congestion(&mut self) {}
    /// Current window.
    fn window(&self) -> u64;
    /// Slow-start threshold (u64::MAX while in the first slow start).
    fn ssthresh(&self) -> u64;
    /// Name, for logs and reports.
    fn name(&self) -> &'static str;
}

/// Which controller to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum CcAlgorithm {
    /// RFC 9002 NewReno.
    NewReno,
    /// RFC 9438 CUBIC.
    #[default]
    Cubic,
}

impl CcAlgorithm {
    /// Build a controller for datagrams of `mtu` bytes.
    pub fn build(self, mtu: u64) -> Box<dyn Controller> {
        match self {
            CcAlgorithm::NewReno => Box::new(new_reno::NewReno::new(mtu)),
            CcAlgorithm::Cubic => Box::new(cubic::Cubic::new(mtu)),
        }
    }
}

impl FromStr for CcAlgorithm {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "newreno" | "new-reno" | "reno" => Ok(CcAlgorithm::NewReno),
            "cubic" => Ok(CcAlgorithm::Cubic),
            other => Err(format!(
                "unknown congestion controller '{other}' (expected newreno or cubic)"
            )),
        }
    }
}

/// Initial window: min(10 × mtu, max(14720, 2 × mtu)) (RFC 9002 §7.2).
pub fn initial_window(mtu: u64) -> u64 {
    (10 * mtu).min(14720.max(2 * mtu))
}

/// Minimum window: 2 × mtu.
pub fn minimum_window(mtu: u64) -> u64 {
    2 * mtu
}
