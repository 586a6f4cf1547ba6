//! NewReno (RFC 9002 §7.3, Appendix B).

use std::time::Instant;

use super::{RecoveryPeriod, initial_window, minimum_window};
use crate::recovery::RttEstimator;

/// NewReno state.
#[derive(Debug)]
pub struct NewReno {
    mtu: u64,
    window: u64,
    ssthresh: u64,
    /// Bytes acknowledged in congestion avoidance not yet turned into window.
    acked_bytes: u64,
    recovery: RecoveryPeriod,
    /// Window, ssthresh and recovery period before the last reduction, for
    /// `on_spurious_congestion`.
    prior: Option<(u64, u64, RecoveryPeriod)>,
}

impl NewReno {
    /// Start in slow start with the initial window.
    pub fn new(mtu: u64) -> Self {
        //= https://www.rfc-editor.org/rfc/rfc9002#appendix-B.3
        //# congestion_window = kInitialWindow
        //# bytes_in_flight = 0
        //# congestion_recovery_start_time = 0
        //# ssthresh = infinite
        NewReno {
            mtu,
            window: initial_window(mtu),
            ssthresh: u64::MAX,
            acked_bytes: 0,
            recovery: RecoveryPeriod::default(),
            prior: None,
        }
    }
}

impl super::Controller for NewReno {
    fn on_ack(&mut self, _now: Instant, sent_time: Instant, bytes: u64, _rtt: &RttEstimator) {
        //= https://www.rfc-editor.org/rfc/rfc9002#appendix-B.5
        //# // Do not increase congestion window in recovery period.
        //# if (InCongestionRecovery(acked_packet.time_sent)):
        //#   return
        if self.recovery.withholds(sent_time, bytes) {
            return;
        }
        if self.window < self.ssthresh {
            //= https://www.rfc-editor.org/rfc/rfc9002#section-7.3.1
            //# While a sender is in slow start, the congestion window
            //# increases by the number of bytes acknowledged when each
            //# acknowledgment is processed.
            self.window = self.window.saturating_add(bytes);
            return;
        }
        //= https://www.rfc-editor.org/rfc/rfc9002#section-7.3.3
        //# an endpoint in congestion avoidance uses an Additive Increase
        //# Multiplicative Decrease (AIMD) approach that MUST limit the
        //# increase to the congestion window to at most one maximum datagram
        //# size for each congestion window that is acknowledged.
        //
        // Counted in whole bytes (RFC 3465 §2.1, as Appendix B.5 suggests) so integer
        // division never rounds the growth away.
        self.acked_bytes = self.acked_bytes.saturating_add(bytes);
        if self.acked_bytes >= self.window {
            self.acked_bytes -= self.window;
            self.window = self.window.saturating_add(self.mtu);
        }
    }

    fn on_congestion_event(
        &mut self,
        now: Instant,
        sent_time: Instant,
        persistent: bool,
        _lost_bytes: u64,
    ) {
        //= https://www.rfc-editor.org/rfc/rfc9002#appendix-B.6
        //# // No reaction if already in a recovery period.
        //# if (InCongestionRecovery(sent_time)):
        //#   return
        if !self.recovery.contains(sent_time) {
            //= https://www.rfc-editor.org/rfc/rfc9002#section-7.3.2
            //# On entering a recovery period, a sender MUST set the slow start
            //# threshold to half the value of the congestion window when loss is
            //# detected.  The congestion window MUST be set to the reduced value
            //# of the slow start threshold before exiting the recovery period.
            //
            //= https://www.rfc-editor.org/rfc/rfc9002#appendix-B.6
            //# congestion_recovery_start_time = now()
            //# ssthresh = congestion_window * kLossReductionFactor
            //# congestion_window = max(ssthresh, kMinimumWindow)
            self.prior = Some((self.window, self.ssthresh, self.recovery));
            self.recovery.begin(now);
            self.ssthresh = self.window / 2;
            self.window = self.ssthresh.max(minimum_window(self.mtu));
            self.acked_bytes = 0;
        }
        if persistent {
            //= https://www.rfc-editor.org/rfc/rfc9002#appendix-B.8
            //# if (InPersistentCongestion(pc_lost)):
            //#   congestion_window = kMinimumWindow
            //#   congestion_recovery_start_time = 0
            self.window = minimum_window(self.mtu);
            self.recovery.start = None;
            self.acked_bytes = 0;
            self.prior = None;
        }
    }

    /// Restore the window as it was, with the growth the false recovery withheld
    /// in slow start.
    fn on_spurious_congestion(&mut self) {
        if let Some((window, ssthresh, recovery)) = self.prior.take() {
            let credit = self.recovery.undo_credit(window, ssthresh);
            self.window = self.window.max(window.saturating_add(credit));
            self.ssthresh = ssthresh;
            self.recovery = recovery;
        }
    }

    fn window(&self) -> u64 {
        self.window
    }

    fn ssthresh(&self) -> u64 {
        self.ssthresh
    }

    fn set_max_datagram_size(&mut self, mtu: u64) {
        self.mtu = mtu;
        if self.ssthresh == u64::MAX {
            // Still in the first slow start: the initial window follows the size.
            self.window = self.window.max(initial_window(mtu));
        }
        self.window = self.window.max(minimum_window(mtu));
    }

    fn name(&self) -> &'static str {
        "newreno"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::Controller;
    use crate::recovery::test_epoch;
    use std::time::Duration;

    const MTU: u64 = 1200;
    const MS: Duration = Duration::from_millis(1);

    fn rtt() -> RttEstimator {
        RttEstimator::new(100 * MS)
    }

    #[test]
    fn slow_start_grows_by_bytes_acked() {
        let t0 = test_epoch();
        let mut cc = NewReno::new(MTU);
        assert_eq!((cc.window(), cc.ssthresh()), (12_000, u64::MAX));
        for i in 0..10 {
            cc.on_ack(t0 + 100 * MS, t0 + i * MS, MTU, &rtt());
        }
        assert_eq!(cc.window(), 24_000);
    }

    #[test]
    fn loss_halves_and_congestion_avoidance_adds_one_mtu_per_window() {
        let t0 = test_epoch();
        let mut cc = NewReno::new(MTU);
        cc.on_congestion_event(t0 + 100 * MS, t0, false, MTU);
        assert_eq!((cc.window(), cc.ssthresh()), (6000, 6000));
        // Packets sent after the recovery started: congestion avoidance.
        let sent = t0 + 101 * MS;
        for _ in 0..4 {
            cc.on_ack(t0 + 200 * MS, sent, 1500, &rtt());
        }
        assert_eq!(
            cc.window(),
            7200,
            "one full window acknowledged adds one MTU"
        );
        for _ in 0..5 {
            cc.on_ack(t0 + 200 * MS, sent, 1200, &rtt());
        }
        assert_eq!(cc.window(), 7200, "6000 of 7200 bytes: not yet");
        cc.on_ack(t0 + 200 * MS, sent, 1200, &rtt());
        assert_eq!(cc.window(), 8400);
    }

    #[test]
    fn recovery_period_blocks_growth_and_second_reduction() {
        let t0 = test_epoch();
        let mut cc = NewReno::new(MTU);
        let start = t0 + 100 * MS;
        cc.on_congestion_event(start, t0 + 10 * MS, false, MTU);
        assert_eq!(cc.window(), 6000);
        //= https://www.rfc-editor.org/rfc/rfc9002#section-7.3.2
        //# during a recovery period, the congestion window does not change in
        //# response to new losses or increases in the ECN-CE count.
        cc.on_congestion_event(t0 + 150 * MS, t0 + 90 * MS, false, MTU);
        cc.on_congestion_event(t0 + 150 * MS, start, false, MTU);
        assert_eq!(cc.window(), 6000);
        cc.on_ack(t0 + 150 * MS, t0 + 50 * MS, 6000, &rtt());
        assert_eq!(
            cc.window(),
            6000,
            "no growth for packets sent before recovery"
        );
        //= https://www.rfc-editor.org/rfc/rfc9002#section-7.3.2
        //# A recovery period ends and the sender enters congestion avoidance
        //# when a packet sent during the recovery period is acknowledged.
        cc.on_ack(t0 + 250 * MS, start + MS, 6000, &rtt());
        assert_eq!(cc.window(), 7200);
        // A loss of a packet sent after the recovery began is a new event.
        cc.on_congestion_event(t0 + 300 * MS, start + MS, false, MTU);
        assert_eq!(cc.window(), 3600);
    }

    #[test]
    fn window_never_below_minimum() {
        let t0 = test_epoch();
        let mut cc = NewReno::new(MTU);
        for i in 1..10u32 {
            cc.on_congestion_event(t0 + i * 100 * MS, t0 + (i * 100 - 1) * MS, false, MTU);
        }
        assert_eq!(cc.window(), 2 * MTU);
    }

    #[test]
    fn persistent_congestion_collapses_to_minimum() {
        let t0 = test_epoch();
        let mut cc = NewReno::new(MTU);
        cc.on_congestion_event(t0 + 100 * MS, t0, true, 10 * MTU);
        assert_eq!((cc.window(), cc.ssthresh()), (2 * MTU, 6000));
        // The recovery period was cleared: slow start resumes at once.
        cc.on_ack(t0 + 200 * MS, t0 + 50 * MS, MTU, &rtt());
        assert_eq!(cc.window(), 3 * MTU);
    }

    /// The growth the false recovery withheld in slow start comes back with the
    /// undo, at most one doubling of the window.
    #[test]
    fn undo_in_slow_start_credits_the_withheld_growth() {
        let t0 = test_epoch();
        let mut cc = NewReno::new(MTU);
        cc.on_congestion_event(t0 + 100 * MS, t0 + 10 * MS, false, MTU);
        cc.on_ack(t0 + 100 * MS, t0 + 20 * MS, 5 * MTU, &rtt());
        assert_eq!(cc.window(), 6_000);
        cc.on_spurious_congestion();
        assert_eq!(cc.window(), 12_000 + 5 * MTU);
        let mut cc = NewReno::new(MTU);
        cc.on_congestion_event(t0 + 100 * MS, t0 + 10 * MS, false, MTU);
        cc.on_ack(t0 + 100 * MS, t0 + 20 * MS, 50 * MTU, &rtt());
        cc.on_spurious_congestion();
        assert_eq!(cc.window(), 24_000, "one doubling at most");
    }

    #[test]
    fn spurious_congestion_restores_window() {
        let t0 = test_epoch();
        let mut cc = NewReno::new(MTU);
        cc.on_ack(t0 + 10 * MS, t0, 8000, &rtt());
        cc.on_congestion_event(t0 + 100 * MS, t0 + 10 * MS, false, MTU);
        assert_eq!(cc.window(), 10_000);
        cc.on_spurious_congestion();
        assert_eq!((cc.window(), cc.ssthresh()), (20_000, u64::MAX));
        cc.on_spurious_congestion(); // nothing left to undo
        assert_eq!(cc.window(), 20_000);
        // The recovery period is gone with it: slow start resumes for packets sent
        // before the undone event, and a later loss cuts again.
        cc.on_ack(t0 + 120 * MS, t0 + 20 * MS, MTU, &rtt());
        assert_eq!(cc.window(), 21_200);
        cc.on_congestion_event(t0 + 130 * MS, t0 + 30 * MS, false, MTU);
        assert_eq!(cc.window(), 10_600);
    }
}
