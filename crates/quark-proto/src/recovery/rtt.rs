//! RTT estimation (RFC 9002 §5).

use std::time::Duration;

/// Timer granularity (RFC 9002 kGranularity).
//= https://www.rfc-editor.org/rfc/rfc9002#section-6.1.2
//# The RECOMMENDED value of the timer granularity (kGranularity) is 1 millisecond.
pub const GRANULARITY: Duration = Duration::from_millis(1);

/// min_rtt, smoothed_rtt, rttvar and latest_rtt.
#[derive(Clone, Debug)]
pub struct RttEstimator {
    latest: Duration,
    smoothed: Duration,
    var: Duration,
    min: Duration,
    has_sample: bool,
    /// smoothed + max(4·var, kGranularity), worked out when they change: the
    /// timers ask for it several times per packet.
    pto_base: Duration,
}

impl RttEstimator {
    /// Before any sample: smoothed = initial, rttvar = initial / 2.
    pub fn new(initial_rtt: Duration) -> Self {
        //= https://www.rfc-editor.org/rfc/rfc9002#section-5.3
        //# smoothed_rtt = kInitialRtt
        //# rttvar = kInitialRtt / 2
        let mut r = RttEstimator {
            latest: Duration::ZERO,
            smoothed: initial_rtt,
            var: initial_rtt / 2,
            min: initial_rtt,
            has_sample: false,
            pto_base: Duration::ZERO,
        };
        r.note_pto_base();
        r
    }

    fn note_pto_base(&mut self) {
        self.pto_base = self.compute_pto_base();
    }

    fn compute_pto_base(&self) -> Duration {
        //= https://www.rfc-editor.org/rfc/rfc9002#section-6.2.1
        //# PTO = smoothed_rtt + max(4*rttvar, kGranularity) + max_ack_delay
        self.smoothed
            .saturating_add(self.var.saturating_mul(4).max(GRANULARITY))
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
        self.latest = latest_rtt;
        if !self.has_sample {
            //= https://www.rfc-editor.org/rfc/rfc9002#section-5.2
            //# min_rtt MUST be set to the latest_rtt on the first RTT sample.
            //= https://www.rfc-editor.org/rfc/rfc9002#section-5.3
            //# smoothed_rtt = latest_rtt
            //# rttvar = latest_rtt / 2
            self.has_sample = true;
            self.min = latest_rtt;
            self.smoothed = latest_rtt;
            self.var = latest_rtt / 2;
            self.note_pto_base();
            return;
        }
        //= https://www.rfc-editor.org/rfc/rfc9002#section-5.2
        //# min_rtt MUST be set to the lesser of min_rtt and latest_rtt
        //# (Section 5.1) on all other samples.
        self.min = self.min.min(latest_rtt);

        //= https://www.rfc-editor.org/rfc/rfc9002#section-5.3
        //# ack_delay = decoded acknowledgment delay from ACK frame
        //# if (handshake confirmed):
        //#   ack_delay = min(ack_delay, max_ack_delay)
        //# adjusted_rtt = latest_rtt
        //# if (latest_rtt >= min_rtt + ack_delay):
        //#   adjusted_rtt = latest_rtt - ack_delay
        //# smoothed_rtt = 7/8 * smoothed_rtt + 1/8 * adjusted_rtt
        //# rttvar_sample = abs(smoothed_rtt - adjusted_rtt)
        //# rttvar = 3/4 * rttvar + 1/4 * rttvar_sample
        //
        // Appendix A.7 updates rttvar before smoothed_rtt; we follow the normative
        // text of §5.3, which uses the freshly smoothed value.
        let ack_delay = if handshake_confirmed {
            ack_delay.min(max_ack_delay)
        } else {
            ack_delay
        };
        let mut adjusted = latest_rtt;
        if self
            .min
            .checked_add(ack_delay)
            .is_some_and(|m| latest_rtt >= m)
        {
            adjusted = latest_rtt - ack_delay;
        }
        self.smoothed = (self.smoothed * 7 + adjusted) / 8;
        let sample = self.smoothed.abs_diff(adjusted);
        self.var = (self.var * 3 + sample) / 4;
        self.note_pto_base();
    }

    /// Forget min_rtt history after persistent congestion.
    //= https://www.rfc-editor.org/rfc/rfc9002#section-5.2
    //# Endpoints SHOULD set the min_rtt to the newest RTT sample after
    //# persistent congestion is established.
    pub fn reset_min(&mut self) {
        if self.has_sample {
            self.min = self.latest;
        }
    }

    /// smoothed_rtt
    pub fn smoothed(&self) -> Duration {
        self.smoothed
    }
    /// rttvar
    pub fn var(&self) -> Duration {
        self.var
    }
    /// min_rtt (the initial RTT before any sample)
    pub fn min(&self) -> Duration {
        self.min
    }
    /// latest_rtt
    pub fn latest(&self) -> Duration {
        self.latest
    }
    /// Whether any sample was taken.
    pub fn has_sample(&self) -> bool {
        self.has_sample
    }
    /// smoothed_rtt + max(4·rttvar, kGranularity): the PTO without max_ack_delay.
    pub fn pto_base(&self) -> Duration {
        debug_assert_eq!(self.pto_base, self.compute_pto_base(), "PTO base not noted");
        self.pto_base
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn initial_values() {
        let r = RttEstimator::new(333 * MS);
        assert_eq!(
            (r.smoothed(), r.var(), r.min()),
            (333 * MS, 166_500 * MS / 1000, 333 * MS)
        );
        assert!(!r.has_sample());
        // 333 + 4 * 166.5 = 999 ms: "handshakes starting with a PTO of 1 second".
        assert_eq!(r.pto_base(), 999 * MS);
    }

    #[test]
    fn first_sample_resets_estimator_and_ignores_ack_delay() {
        let mut r = RttEstimator::new(333 * MS);
        r.update(100 * MS, 50 * MS, 25 * MS, true);
        assert_eq!(
            (r.smoothed(), r.var(), r.min(), r.latest()),
            (100 * MS, 50 * MS, 100 * MS, 100 * MS)
        );
        assert!(r.has_sample());
    }

    #[test]
    fn later_samples_follow_section_5_3() {
        let mut r = RttEstimator::new(333 * MS);
        r.update(100 * MS, Duration::ZERO, 25 * MS, true);
        // 140 ms with 20 ms ack delay: adjusted = 120 ms.
        r.update(140 * MS, 20 * MS, 25 * MS, true);
        // smoothed = 7/8*100 + 1/8*120 = 102.5; rttvar = 3/4*50 + 1/4*|102.5-120| = 41.875
        assert_eq!(r.smoothed(), Duration::from_micros(102_500));
        assert_eq!(r.var(), Duration::from_micros(41_875));
        assert_eq!(r.min(), 100 * MS);
    }

    #[test]
    fn ack_delay_capped_after_confirmation_only() {
        let mut confirmed = RttEstimator::new(333 * MS);
        let mut unconfirmed = RttEstimator::new(333 * MS);
        for r in [&mut confirmed, &mut unconfirmed] {
            r.update(100 * MS, Duration::ZERO, 10 * MS, false);
        }
        // 200 ms sample with an 80 ms ack delay; max_ack_delay 10 ms.
        confirmed.update(200 * MS, 80 * MS, 10 * MS, true); // adjusted 190
        unconfirmed.update(200 * MS, 80 * MS, 10 * MS, false); // adjusted 120
        assert_eq!(confirmed.smoothed(), Duration::from_micros(111_250));
        assert_eq!(unconfirmed.smoothed(), Duration::from_micros(102_500));
    }

    #[test]
    fn ack_delay_never_takes_sample_below_min_rtt() {
        let mut r = RttEstimator::new(333 * MS);
        r.update(100 * MS, Duration::ZERO, 25 * MS, true);
        //= https://www.rfc-editor.org/rfc/rfc9002#section-5.3
        //# MUST NOT subtract the acknowledgment delay from the RTT sample if
        //# the resulting value is smaller than the min_rtt.
        r.update(110 * MS, 20 * MS, 25 * MS, true); // 110 < 100 + 20: use 110
        assert_eq!(r.smoothed(), Duration::from_micros(101_250));
    }

    #[test]
    fn min_rtt_ignores_ack_delay_and_can_be_reset() {
        let mut r = RttEstimator::new(333 * MS);
        r.update(100 * MS, Duration::ZERO, 25 * MS, true);
        r.update(80 * MS, 30 * MS, 25 * MS, true);
        assert_eq!(r.min(), 80 * MS);
        r.update(200 * MS, Duration::ZERO, 25 * MS, true);
        assert_eq!(r.min(), 80 * MS);
        r.reset_min();
        assert_eq!(r.min(), 200 * MS);
    }

    #[test]
    fn pto_base_has_granularity_floor() {
        let mut r = RttEstimator::new(333 * MS);
        r.update(
            Duration::from_micros(10),
            Duration::ZERO,
            Duration::ZERO,
            true,
        );
        for _ in 0..50 {
            r.update(
                Duration::from_micros(10),
                Duration::ZERO,
                Duration::ZERO,
                true,
            );
        }
        assert!(r.var() < Duration::from_micros(250));
        assert_eq!(r.pto_base(), r.smoothed() + GRANULARITY);
    }
}
