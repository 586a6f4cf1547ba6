//! CUBIC (RFC 9438), with the Reno-friendly region and fast convergence.
//!
//! Windows are kept in bytes as `f64` (per-ACK increments are often fractions of a
//! byte); the RFC's segment formulas are converted with the datagram size.
//!
//! Known simplification: time keeps running through application-limited periods
//! (RFC 9438 §5.8 suggests not growing then). The caller stops feeding ACKs while
//! app-limited, and the target is capped at 1.5 × cwnd per RTT, so an idle period
//! cannot make the window jump by more than that.

use std::time::Instant;

use super::{RecoveryPeriod, initial_window, minimum_window};
use crate::recovery::RttEstimator;

// RFC 9438 §4.2 and §5: C = 0.4, in segments per second cubed.
const C: f64 = 0.4;

//= https://www.rfc-editor.org/rfc/rfc9438#section-4.6
//# Parameter β_cubic SHOULD be set to 0.7
const BETA: f64 = 0.7;

//= https://www.rfc-editor.org/rfc/rfc9438#section-4.3
//# α_cubic = 3 * (1 - β_cubic) / (1 + β_cubic)
const ALPHA: f64 = 3.0 * (1.0 - BETA) / (1.0 + BETA);

/// The current congestion-avoidance stage.
#[derive(Clone, Copy, Debug)]
struct Epoch {
    /// t_epoch: when congestion avoidance began.
    start: Instant,
    /// K in seconds.
    k: f64,
    /// The Reno-friendly estimate, bytes.
    w_est: f64,
}

/// The state a congestion event changes, kept for `on_spurious_congestion`.
#[derive(Clone, Copy, Debug)]
struct Saved {
    cwnd: f64,
    ssthresh: u64,
    w_max: f64,
    cwnd_prior: f64,
    epoch: Option<Epoch>,
    after_timeout: bool,
    recovery: RecoveryPeriod,
}

/// CUBIC state.
#[derive(Debug)]
pub struct Cubic {
    mtu: f64,
    min_window: f64,
    cwnd: f64,
    ssthresh: u64,
    /// W_max in bytes (0 before the first congestion event).
    w_max: f64,
    /// cwnd just before the last reduction.
    cwnd_prior: f64,
    epoch: Option<Epoch>,
    /// The next epoch follows persistent congestion: K = 0, W_max = cwnd_epoch.
    after_timeout: bool,
    recovery: RecoveryPeriod,
    saved: Option<Saved>,
}

impl Cubic {
    /// Start in slow start with the initial window.
    pub fn new(mtu: u64) -> Self {
        Cubic {
            mtu: mtu as f64,
            min_window: minimum_window(mtu) as f64,
            cwnd: initial_window(mtu) as f64,
            ssthresh: u64::MAX,
            w_max: 0.0,
            cwnd_prior: 0.0,
            epoch: None,
            after_timeout: false,
            recovery: RecoveryPeriod::default(),
            saved: None,
        }
    }

    /// W_cubic(t) in bytes, `t` in seconds since the epoch began.
    //= https://www.rfc-editor.org/rfc/rfc9438#section-4.2
    //# W_cubic(t) = C * (t - K)^3 + W_max
    fn w_cubic(&self, k: f64, t: f64) -> f64 {
        C * (t - k).powi(3) * self.mtu + self.w_max
    }

    /// Begin a congestion-avoidance stage at `now` with the current window.
    fn start_epoch(&mut self, now: Instant) -> Epoch {
        let cwnd_epoch = self.cwnd;
        //= https://www.rfc-editor.org/rfc/rfc9438#section-4.8
        //# During the first congestion avoidance stage after a timeout, CUBIC
        //# increases its congestion window size using Figure 1, where t is the
        //# elapsed time since the beginning of the current congestion avoidance
        //# stage, K is set to 0, and W_max is set to the congestion window size
        //# at the beginning of the current congestion avoidance stage.
        if self.after_timeout || self.w_max == 0.0 {
            self.after_timeout = false;
            self.w_max = cwnd_epoch;
        }
        //= https://www.rfc-editor.org/rfc/rfc9438#section-4.2
        //# K = cubic_root((W_max - cwnd_epoch) / C)
        let k = ((self.w_max - cwnd_epoch) / self.mtu / C).cbrt();
        // RFC 9438 §4.3: W_est starts at cwnd_epoch with each congestion-avoidance
        // stage.
        Epoch {
            start: now,
            k,
            w_est: cwnd_epoch,
        }
    }
}

impl super::Controller for Cubic {
    fn on_ack(&mut self, now: Instant, sent_time: Instant, bytes: u64, rtt: &RttEstimator) {
        if self.recovery.withholds(sent_time, bytes) {
            return;
        }
        let bytes = bytes as f64;
        // RFC 9438 §4.10: slow start below ssthresh (standard slow start; no
        // HyStart++ yet). Strictly below, as in RFC 9002 Appendix B.5, so that a
        // window reduced to ssthresh enters congestion avoidance.
        if (self.cwnd as u64) < self.ssthresh {
            self.cwnd += bytes;
            return;
        }
        let mut epoch = match self.epoch {
            Some(e) => e,
            None => self.start_epoch(now),
        };
        let t = now.saturating_duration_since(epoch.start).as_secs_f64();

        //= https://www.rfc-editor.org/rfc/rfc9438#section-4.3
        //# W_est = W_est + α_cubic * segments_acked / cwnd
        //
        //= https://www.rfc-editor.org/rfc/rfc9438#section-4.3
        //# Once W_est has grown to reach the cwnd at the time of most recently
        //# setting ssthresh -- that is, W_est >= cwnd_prior -- the sender SHOULD
        //# set α_cubic to 1 to ensure that it can achieve the same congestion
        //# window increment rate as Reno, which uses AIMD(1, 0.5).
        let alpha = if epoch.w_est >= self.cwnd_prior {
            1.0
        } else {
            ALPHA
        };
        epoch.w_est += alpha * self.mtu * bytes / self.cwnd;

        //= https://www.rfc-editor.org/rfc/rfc9438#section-4.3
        //# If so, CUBIC is in the Reno-friendly region and cwnd SHOULD be set to
        //# W_est at each reception of a new ACK.
        if self.w_cubic(epoch.k, t) < epoch.w_est {
            // Never shrink on an ACK: cwnd may already be above W_est because the
            // cubic target looks one RTT ahead.
            self.cwnd = self.cwnd.max(epoch.w_est);
        } else {
            //= https://www.rfc-editor.org/rfc/rfc9438#section-4.2
            //# Upon receiving a new ACK during congestion avoidance, CUBIC computes
            //# the target congestion window size after the next RTT
            //
            // target = W_cubic(t + RTT), bounded to [cwnd, 1.5 cwnd].
            let next = self.w_cubic(epoch.k, t + rtt.smoothed().as_secs_f64());
            let target = next.clamp(self.cwnd, 1.5 * self.cwnd);
            //= https://www.rfc-editor.org/rfc/rfc9438#section-4.4
            //# cwnd MUST be incremented by (target - cwnd) / cwnd for each received
            //# new ACK
            // In bytes, per `bytes` acknowledged: (target - cwnd) × bytes / cwnd.
            self.cwnd += (target - self.cwnd) * bytes / self.cwnd;
        }
        self.epoch = Some(epoch);
    }

    fn on_congestion_event(
        &mut self,
        now: Instant,
        sent_time: Instant,
        persistent: bool,
        _lost_bytes: u64,
    ) {
        if !self.recovery.contains(sent_time) {
            self.saved = Some(Saved {
                cwnd: self.cwnd,
                ssthresh: self.ssthresh,
                w_max: self.w_max,
                cwnd_prior: self.cwnd_prior,
                epoch: self.epoch,
                after_timeout: self.after_timeout,
                recovery: self.recovery,
            });
            self.recovery.begin(now);
            //= https://www.rfc-editor.org/rfc/rfc9438#section-4.7
            //# if cwnd < W_max and fast convergence enabled, further reduce W_max:
            //#     W_max = cwnd * (1 + β_cubic) / 2
            //# otherwise, remember cwnd before reduction:
            //#     W_max = cwnd
            self.w_max = if self.cwnd < self.w_max {
                self.cwnd * (1.0 + BETA) / 2.0
            } else {
                self.cwnd
            };
            //= https://www.rfc-editor.org/rfc/rfc9438#section-4.6
            //# ssthresh = flight_size * β_cubic
            //# cwnd_prior = cwnd
            // Like most deployed CUBICs (and the RFC allows it), the reduction applies
            // to cwnd rather than flight size, which is robust when app-limited.
            self.cwnd_prior = self.cwnd;
            let reduced = (self.cwnd * BETA).max(self.min_window);
            self.ssthresh = reduced as u64;
            self.cwnd = reduced;
            // Congestion avoidance restarts with the first ACK after recovery.
            self.epoch = None;
        }
        if persistent {
            //= https://www.rfc-editor.org/rfc/rfc9438#section-4.8
            //# In the case of a timeout, CUBIC follows Reno to reduce cwnd [RFC5681]
            //# but sets ssthresh using β_cubic (same as in Section 4.6)
            //
            //= https://www.rfc-editor.org/rfc/rfc9002#section-7.6.2
            //# When persistent congestion is declared, the sender's congestion
            //# window MUST be reduced to the minimum congestion window
            //# (kMinimumWindow)
            self.cwnd = self.min_window;
            self.recovery.start = None;
            self.epoch = None;
            self.after_timeout = true;
            self.saved = None;
        }
    }

    // RFC 9438 §4.9: a spurious congestion event may be undone by restoring cwnd,
    // ssthresh and CUBIC's own state (the recovery period included) as they were
    // before it, with the growth the false recovery withheld in slow start.
    fn on_spurious_congestion(&mut self) {
        if let Some(s) = self.saved.take() {
            let credit = self.recovery.undo_credit(s.cwnd as u64, s.ssthresh);
            self.cwnd = self.cwnd.max(s.cwnd + credit as f64);
            self.ssthresh = s.ssthresh;
            self.w_max = s.w_max;
            self.cwnd_prior = s.cwnd_prior;
            self.epoch = s.epoch;
            self.after_timeout = s.after_timeout;
            self.recovery = s.recovery;
        }
    }

    fn window(&self) -> u64 {
        self.cwnd as u64
    }

    fn ssthresh(&self) -> u64 {
        self.ssthresh
    }

    fn set_max_datagram_size(&mut self, mtu: u64) {
        self.mtu = mtu as f64;
        self.min_window = minimum_window(mtu) as f64;
        if self.ssthresh == u64::MAX {
            // Still in the first slow start: the initial window follows the size.
            self.cwnd = self.cwnd.max(initial_window(mtu) as f64);
        }
        self.cwnd = self.cwnd.max(self.min_window);
    }

    fn name(&self) -> &'static str {
        "cubic"
    }
}

#[cfg(test)]
#[path = "cubic_tests.rs"]
mod tests;
