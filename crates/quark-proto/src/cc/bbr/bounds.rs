//! BBRv3's loss- and ECN-driven bounds (draft-ietf-ccwg-bbr §5.5.10, §5.6.4.2,
//! §5.3.1.3) on top of the v1 model: a per-round loss rate, `inflight_hi` (the
//! most in flight that did not lose more than 2 % in a round) and `inflight_lo`
//! (the short-term cut after a round over that threshold).
//!
//! Deviations, and why: the loss rate is counted per round trip (bytes lost /
//! bytes lost + delivered in the round) rather than per packet from
//! `tx_in_flight`, since quark's rate samples do not carry it; the 2 %
//! threshold is counted above the path's random loss (an average over about
//! eight rounds), not from zero; `inflight_lo` is only cut by rounds over the
//! threshold (the draft cuts it on any loss outside probing); and no bound
//! goes below the modelled BDP plus v3's ACK-aggregation allowance
//! (`extra_acked`), so random loss costs little throughput, which is the
//! property the lab's lossy grid measures; there is no `bw_lo` (the pacing
//! rate follows the max filter).

use std::time::Instant;

use super::{Bbr, BbrState};

//= https://datatracker.ietf.org/doc/html/draft-ietf-ccwg-bbr#section-2.7
//# BBR.loss_thresh: The maximum tolerated per-round-trip packet loss rate
//# when probing for bandwidth (the default is 2%).
/// In parts per million.
pub(super) const LOSS_THRESH_PPM: u64 = 20_000;

/// The most random loss (parts per million) the threshold rides on: loss the
/// path shows whatever the flow keeps in flight, judged over about eight
/// rounds (see [`Bbr::update_loss_baseline`]).
pub(super) const LOSS_BASELINE_MAX_PPM: u64 = 30_000;

//= https://datatracker.ietf.org/doc/html/draft-ietf-ccwg-bbr#section-2.7
//# BBR.beta: The default multiplicative decrease to make upon each round
//# trip during which the connection detects packet loss (the value is 0.7).
pub(super) const BETA: f64 = 0.7;

//= https://datatracker.ietf.org/doc/html/draft-ietf-ccwg-bbr#section-2.7
//# BBR.headroom: The multiplicative factor to apply to BBR.inflight_hi
//# when calculating a volume of free headroom to try to leave unused in
//# the path
pub(super) const HEADROOM: f64 = 0.15;

/// Loss events in one Startup round that, with the loss rate over the
/// threshold, end Startup (BBRStartupFullLossCnt).
pub(super) const STARTUP_FULL_LOSS_COUNT: u32 = 6;

/// Unset bound.
pub(super) const NO_BOUND: u64 = u64::MAX;

/// What one round trip saw, for the bounds.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct RoundSignals {
    pub(super) lost: u64,
    pub(super) delivered: u64,
    /// Packets declared lost (the draft counts discontiguous lost ranges;
    /// quark's controllers see bytes per ACK frame, and one frame under ACK
    /// frequency reports many ranges: counting frames let a Startup that
    /// dropped a third of a round go on).
    pub(super) loss_events: u32,
    /// An ECN-CE increase (a congestion event without loss).
    pub(super) ce: bool,
    /// The most bytes in flight seen in the round.
    pub(super) max_in_flight: u64,
}

impl RoundSignals {
    /// The round's loss rate in parts per million (0 for an empty round).
    fn loss_ppm(&self) -> u64 {
        let total = u128::from(self.lost) + u128::from(self.delivered);
        if total == 0 {
            return 0;
        }
        (u128::from(self.lost) * 1_000_000 / total) as u64
    }

    /// More than 2 % of the round's bytes lost beyond `baseline_ppm` (the
    /// path's random loss), or a CE mark.
    pub(super) fn too_high(&self, baseline_ppm: u64) -> bool {
        self.ce || self.loss_ppm() > LOSS_THRESH_PPM + baseline_ppm
    }
}

impl Bbr {
    /// Counts an ACK frame's losses and deliveries in the current round.
    pub(super) fn note_round(&mut self, acked: u64, lost: u64, in_flight: u64) {
        let r = &mut self.round_signals;
        r.delivered = r.delivered.saturating_add(acked);
        r.lost = r.lost.saturating_add(lost);
        let packets = lost.div_ceil(self.mtu.max(1));
        r.loss_events = r
            .loss_events
            .saturating_add(u32::try_from(packets).unwrap_or(u32::MAX));
        r.max_in_flight = r.max_in_flight.max(in_flight);
    }

    /// A round ended: adapt the bounds to what it saw, then start counting anew.
    pub(super) fn end_round(&mut self, now: Instant) {
        let r = std::mem::take(&mut self.round_signals);
        if !self.v3 {
            return;
        }
        let too_high = r.too_high(self.loss_baseline_ppm);
        self.update_loss_baseline(&r, too_high);
        match self.state {
            //= https://datatracker.ietf.org/doc/html/draft-ietf-ccwg-bbr#section-5.3.1.3
            //# A second method BBR uses for estimating the bottleneck is full is
            //# by looking at packet losses.
            // quark also asks that the round did not grow the bandwidth by 25 %:
            // random loss around 2 % otherwise ends Startup at a fraction of
            // the link, and ProbeBW's 5/4 probes take many seconds to climb
            // back; a full buffer stops the growth as well as dropping.
            BbrState::Startup
                if !self.filled_pipe
                    && too_high
                    && r.loss_events >= STARTUP_FULL_LOSS_COUNT
                    && self.full_bw_count > 0 =>
            {
                self.inflight_hi = self.inflight(1.0).max(r.max_in_flight);
                self.filled_pipe = true;
            }
            BbrState::ProbeBw if self.pacing_gain > 1.0 => {
                if too_high {
                    //= https://datatracker.ietf.org/doc/html/draft-ietf-ccwg-bbr#section-5.5.10.2
                    //# BBR.inflight_hi = max(rs.tx_in_flight,
                    //#                       BBRTargetInflight() * BBRBeta)
                    self.inflight_hi = r
                        .max_in_flight
                        .max((self.inflight(1.0) as f64 * BETA) as u64);
                    self.probe_up_rounds = 0;
                    //= https://datatracker.ietf.org/doc/html/draft-ietf-ccwg-bbr#section-5.5.10.2
                    //# if (BBR.state == ProbeBW_UP)
                    //#   BBRStartProbeBW_DOWN()
                    self.advance_cycle_phase(now);
                } else {
                    self.raise_inflight_hi(&r);
                }
            }
            _ if too_high => {
                // Not probing: cut the short-term bound (§5.5.10.3's
                // BBRAdaptLowerBoundsFromCongestion, for rounds over the threshold).
                let base = if self.inflight_lo == NO_BOUND {
                    self.cwnd
                } else {
                    self.inflight_lo
                };
                // Never below the modelled BDP: a lower cwnd would slow delivery,
                // and with it the bandwidth samples, so random loss would ratchet
                // the model down; lowering the BDP is the max filter's job.
                self.inflight_lo = r
                    .delivered
                    .max((base as f64 * BETA) as u64)
                    .max(self.bound_floor());
            }
            _ => {}
        }
    }

    /// The loss a round shows whatever the flow keeps in flight (random loss
    /// on the path): a moving average over about eight rounds of the rounds
    /// not judged too lossy. quark's deviation from the draft's fixed 2 % per
    /// round: with 2 % random loss about half the rounds crossed it, so the
    /// probes ended at once and the bounds held the window near one BDP,
    /// although no less in flight would have lost less. Loss that a probe or a
    /// competing flow's queue adds comes as a jump above the average and still
    /// counts in the same round; rounds over the threshold do not feed it.
    fn update_loss_baseline(&mut self, r: &RoundSignals, too_high: bool) {
        if too_high || r.lost + r.delivered == 0 {
            return;
        }
        let avg = (7 * self.loss_baseline_ppm + r.loss_ppm()) / 8;
        self.loss_baseline_ppm = avg.min(LOSS_BASELINE_MAX_PPM);
    }

    /// A probing round without too much loss: inflight_hi may grow, faster each
    /// round (1, 2, 4, ... packets), when the window was the limit.
    //= https://datatracker.ietf.org/doc/html/draft-ietf-ccwg-bbr#section-5.3.3.6
    //# BBRProbeInflightHiUpward():
    fn raise_inflight_hi(&mut self, r: &RoundSignals) {
        if self.inflight_hi == NO_BOUND {
            return;
        }
        if r.max_in_flight > self.inflight_hi {
            self.inflight_hi = r.max_in_flight;
        }
        if r.max_in_flight + self.mtu >= self.inflight_hi {
            let step = self.mtu << self.probe_up_rounds.min(20);
            self.inflight_hi = self.inflight_hi.saturating_add(step);
            self.probe_up_rounds += 1;
        }
    }

    /// The cap the bounds put on the window (§5.6.4.2 BBRBoundCwndForModel).
    pub(super) fn bound_cwnd(&self, cwnd: u64) -> u64 {
        if !self.v3 {
            return cwnd;
        }
        //= https://datatracker.ietf.org/doc/html/draft-ietf-ccwg-bbr#section-5.6.4.2
        //# if (IsInAProbeBWState() and
        //#     BBR.state != ProbeBW_CRUISE)
        //#   cap = BBR.inflight_hi
        //# else if (BBR.state == ProbeRTT or
        //#          BBR.state == ProbeBW_CRUISE)
        //#   cap = BBRInflightWithHeadroom()
        //#
        //# /* apply inflight_lo (possibly infinite): */
        //# cap = min(cap, BBR.inflight_lo)
        //# cap = max(cap, BBR.MinPipeCwnd)
        let cruise = self.state == BbrState::ProbeRtt
            || (self.state == BbrState::ProbeBw && self.pacing_gain == 1.0);
        let hi = if self.inflight_hi == NO_BOUND {
            NO_BOUND
        } else if cruise {
            let headroom = ((self.inflight_hi as f64 * HEADROOM) as u64).max(self.mtu);
            self.inflight_hi.saturating_sub(headroom)
        } else {
            self.inflight_hi
        };
        let cap = match self.state {
            BbrState::ProbeBw => hi.min(self.inflight_lo).max(self.bound_floor()),
            BbrState::ProbeRtt => hi.min(self.inflight_lo),
            _ => NO_BOUND,
        };
        cwnd.min(cap.max(self.min_pipe_cwnd()))
    }

    /// The least the bounds leave outside ProbeRTT (quark's deviation): the
    /// modelled BDP, its send quanta and the ACK-aggregation allowance. In
    /// flight up to the BDP builds no queue, so a lower cap cannot spare a
    /// buffer; it would only slow delivery and drag the bandwidth estimate
    /// down. With aggregated ACKs the pipe stays full only with extra_acked
    /// more (§5.5.9: the window covers the silences between ACKs).
    fn bound_floor(&self) -> u64 {
        self.inflight(1.0) + self.extra_acked()
    }

    /// A new bandwidth probe begins: forget the short-term bound and the
    /// probe's growth (§5.3.3.5: BBRResetLowerBounds when refilling).
    pub(super) fn start_probe(&mut self) {
        self.inflight_lo = NO_BOUND;
        self.probe_up_rounds = 0;
    }
}
