//! Congestion control behind one trait: NewReno (RFC 9002 §7), CUBIC (RFC 9438)
//! and BBR (the v1 model of draft-cardwell-iccrg-bbr-congestion-control with
//! draft-ietf-ccwg-bbr's loss bounds; see [`bbr`] for why CUBIC stays the default).
//!
//! [`crate::recovery::Recovery`] owns bytes in flight and decides what is a congestion
//! signal; a controller turns acknowledged bytes, congestion events and (for BBR)
//! delivery-rate samples into a window and, optionally, a pacing rate. Every
//! controller keeps the RFC 9002 §7.3.2 recovery period itself, with the same rule
//! (Recovery mirrors it to know when a reduction can be undone).

pub mod bbr;
pub mod cubic;
pub mod new_reno;

use std::fmt;
use std::str::FromStr;
use std::time::Instant;

use crate::recovery::{RateSample, RttEstimator};

/// What one ACK frame did, for controllers that model the path
/// ([`Controller::on_ack_event`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckEvent {
    /// The delivery-rate sample, when in-flight packets were newly acknowledged
    /// and the controller [wants them](Controller::wants_rate_samples).
    pub rate: Option<RateSample>,
    /// In-flight bytes newly acknowledged.
    pub newly_acked: u64,
    /// In-flight bytes newly declared lost.
    pub newly_lost: u64,
    /// Bytes in flight before the ACK was processed.
    pub prior_in_flight: u64,
    /// Bytes in flight after it.
    pub bytes_in_flight: u64,
}

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
    /// The last congestion event that reduced the window turned out spurious (every
    /// loss behind it was acknowledged after all): restore the window, and the
    /// recovery period, from before it. Called at most once per reduction.
    fn on_spurious_congestion(&mut self) {}
    /// The datagram size changed (path MTU discovery).
    //= https://www.rfc-editor.org/rfc/rfc9002#section-7.2
    //# If the maximum datagram size changes during the connection, the
    //# initial congestion window SHOULD be recalculated with the new size.
    fn set_max_datagram_size(&mut self, mtu: u64);
    /// A packet of `bytes` counted in flight was sent; `prior_in_flight` were in
    /// flight before it.
    fn on_packet_sent(&mut self, _now: Instant, _bytes: u64, _prior_in_flight: u64) {}
    /// Once per ACK frame, after its losses ([`Self::on_congestion_event`]) and
    /// acknowledged packets ([`Self::on_ack`]) were reported.
    fn on_ack_event(&mut self, _now: Instant, _event: &AckEvent, _rtt: &RttEstimator) {}
    /// The rate to pace at, in bytes per second; `None`: the pacer's default of
    /// 5/4 × window / smoothed RTT (RFC 9002 §7.7).
    fn pacing_rate(&self) -> Option<u64> {
        None
    }
    /// Whether the controller reads [`AckEvent::rate`]. Sampling the delivery
    /// rate costs every ACK three time differences and a division; a
    /// controller that does not model the path is spared it and gets `None`.
    fn wants_rate_samples(&self) -> bool {
        false
    }
    /// The state-machine phase, for logs and tests (BBR: `startup`, `drain`,
    /// `probe_bw`, `probe_rtt`); `None` for controllers without one.
    fn phase(&self) -> Option<&'static str> {
        None
    }
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
    /// BBR with v3's loss-tolerant probing and inflight bounds: see [`bbr`].
    Bbr,
    /// BBR's v1 model alone (no v3 bounds; a probe ends at the first loss), to
    /// compare against.
    Bbr1,
}

impl CcAlgorithm {
    /// The accepted names, for command-line help.
    pub const HELP: &'static str =
        "newreno, cubic (default), bbr (for lossy paths) or bbr1 (BBR v1 alone, to compare)";

    /// Build a controller for datagrams of `mtu` bytes.
    pub fn build(self, mtu: u64) -> Box<dyn Controller> {
        match self {
            CcAlgorithm::NewReno => Box::new(new_reno::NewReno::new(mtu)),
            CcAlgorithm::Cubic => Box::new(cubic::Cubic::new(mtu)),
            CcAlgorithm::Bbr => Box::new(bbr::Bbr::new(mtu)),
            CcAlgorithm::Bbr1 => Box::new(bbr::Bbr::v1(mtu)),
        }
    }
}

impl fmt::Display for CcAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CcAlgorithm::NewReno => "newreno",
            CcAlgorithm::Cubic => "cubic",
            CcAlgorithm::Bbr => "bbr",
            CcAlgorithm::Bbr1 => "bbr1",
        })
    }
}

impl FromStr for CcAlgorithm {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "newreno" | "new-reno" | "reno" => Ok(CcAlgorithm::NewReno),
            "cubic" => Ok(CcAlgorithm::Cubic),
            "bbr" | "bbr3" | "bbrv3" => Ok(CcAlgorithm::Bbr),
            "bbr1" | "bbrv1" => Ok(CcAlgorithm::Bbr1),
            other => Err(format!(
                "unknown congestion controller '{other}' (expected {})",
                CcAlgorithm::HELP
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
    /// Bytes acknowledged in this period, which did not grow the window.
    withheld: u64,
}

impl RecoveryPeriod {
    /// A recovery period starts at `now`.
    fn begin(&mut self, now: Instant) {
        *self = RecoveryPeriod {
            start: Some(now),
            withheld: 0,
        };
    }

    /// Whether an ACK of `bytes` sent at `sent_time` falls in this period (it
    /// must not grow the window); if so the bytes are counted as withheld.
    fn withholds(&mut self, sent_time: Instant, bytes: u64) -> bool {
        let inside = self.contains(sent_time);
        if inside {
            self.withheld = self.withheld.saturating_add(bytes);
        }
        inside
    }

    /// This period turned out spurious: what to add to the `window` it cut,
    /// which had `ssthresh`. In slow start the growth the period withheld (at
    /// most one doubling, as a round of slow start): the ACK that declares a
    /// reordered packet lost often acknowledges a burst, and without it every
    /// undo left slow start that burst behind. Nothing in congestion avoidance,
    /// whose growth follows the restored state.
    fn undo_credit(&self, window: u64, ssthresh: u64) -> u64 {
        if window < ssthresh {
            self.withheld.min(window)
        } else {
            0
        }
    }

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
        assert_eq!("BBR".parse::<CcAlgorithm>(), Ok(CcAlgorithm::Bbr));
        let err = "vegas".parse::<CcAlgorithm>().unwrap_err();
        assert!(err.contains("bbr (for lossy paths)"), "{err}");
        assert_eq!("bbrv1".parse::<CcAlgorithm>(), Ok(CcAlgorithm::Bbr1));
        for cc in [
            CcAlgorithm::NewReno,
            CcAlgorithm::Cubic,
            CcAlgorithm::Bbr,
            CcAlgorithm::Bbr1,
        ] {
            assert_eq!(cc.build(1200).name(), cc.to_string());
            assert_eq!(cc.to_string().parse::<CcAlgorithm>(), Ok(cc));
        }
    }
}
