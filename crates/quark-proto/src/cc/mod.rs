//! Congestion control behind one trait: NewReno (RFC 9002 §7) and CUBIC (RFC 9438).
//!
//! [`crate::recovery::Recovery`] owns bytes in flight and decides what is a congestion
//! signal; a controller only turns acknowledged bytes and congestion events into a
//! window. Both controllers keep the RFC 9002 §7.3.2 recovery period themselves.

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
    /// The datagram size changed (path MTU discovery).
    //= https://www.rfc-editor.org/rfc/rfc9002#section-7.2
    //# If the maximum datagram size changes during the connection, the
    //# initial congestion window SHOULD be recalculated with the new size.
    fn set_max_datagram_size(&mut self, mtu: u64);
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
//= https://www.rfc-editor.org/rfc/rfc9002#section-7.2
//# Endpoints SHOULD use an initial congestion window of ten times the
//# maximum datagram size (max_datagram_size), while limiting the window
//# to the larger of 14,720 bytes or twice the maximum datagram size.
pub fn initial_window(mtu: u64) -> u64 {
    (10 * mtu).min(14720.max(2 * mtu))
}

/// Minimum window: 2 × mtu.
//= https://www.rfc-editor.org/rfc/rfc9002#section-7.2
//# The RECOMMENDED value is 2 * max_datagram_size.
pub fn minimum_window(mtu: u64) -> u64 {
    2 * mtu
}

/// The recovery period shared by both controllers (RFC 9002 §7.3.2).
//= https://www.rfc-editor.org/rfc/rfc9002#section-7.3.2
//# The recovery period aims to limit congestion window reduction to once
//# per round trip.  Therefore, during a recovery period, the congestion
//# window does not change in response to new losses or increases in the
//# ECN-CE count.
#[derive(Clone, Copy, Debug, Default)]
struct RecoveryPeriod {
    start: Option<Instant>,
}

impl RecoveryPeriod {
    /// A packet sent at `sent_time` belongs to the current recovery period.
    //= https://www.rfc-editor.org/rfc/rfc9002#appendix-B.5
    //# InCongestionRecovery(sent_time):
    //#   return sent_time <= congestion_recovery_start_time
    fn contains(&self, sent_time: Instant) -> bool {
        self.start.is_some_and(|start| sent_time <= start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_follow_section_7_2() {
        assert_eq!(initial_window(1200), 12_000);
        assert_eq!(initial_window(1500), 14_720);
        assert_eq!(initial_window(9000), 18_000);
        assert_eq!(minimum_window(1200), 2400);
    }

    #[test]
    fn names_parse() {
        assert_eq!("Reno".parse::<CcAlgorithm>(), Ok(CcAlgorithm::NewReno));
        assert_eq!("cubic".parse::<CcAlgorithm>(), Ok(CcAlgorithm::Cubic));
        assert!("bbr".parse::<CcAlgorithm>().is_err());
        assert_eq!(CcAlgorithm::NewReno.build(1200).name(), "newreno");
        assert_eq!(CcAlgorithm::Cubic.build(1200).name(), "cubic");
    }
}
