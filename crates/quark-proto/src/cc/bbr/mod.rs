//! BBR: the v1 model and state machine (draft-cardwell-iccrg-bbr-congestion-control-00)
//! with BBRv3's loss- and ECN-driven bounds (draft-ietf-ccwg-bbr, see `bounds.rs`).
//!
//! BBR models the path instead of reacting to loss: the bottleneck bandwidth is the
//! windowed maximum of delivery-rate samples (`BtlBw`, 10 round trips), the
//! propagation delay the windowed minimum RTT (`RTprop`, 10 s). It paces at
//! `pacing_gain × BtlBw` and caps in-flight data at `cwnd_gain × BtlBw × RTprop`,
//! cycling the gains through Startup, Drain, ProbeBW and ProbeRTT. The pacer uses
//! [`crate::cc::Controller::pacing_rate`]; delivery-rate samples come from
//! [`crate::recovery`], which stamps every packet sent.
//!
//! From v3: a per-round loss rate with the 2 % threshold, counted above the
//! path's random loss (a bandwidth probe ends when a round loses 2 % more than
//! the path loses anyway, not at the first loss), `inflight_hi` (the most in
//! flight a probe held without too much loss; the window keeps 15 % headroom
//! under it when cruising), `inflight_lo` (cut by a lossy or ECN-CE-marked round
//! outside probing, reset by the next probe), and Startup ending on a lossy
//! round, and `extra_acked` (the ACK-aggregation allowance, `aggregation.rs`;
//! in the least the bounds leave rather than in the 2 BDP window). Not from v3:
//! the four-phase ProbeBW with its wall-clock probe timing;
//! `bw_lo` (tried in the simulator: no change under random loss, a little more
//! room for CUBIC in a half-BDP buffer; out until an emulated run measures it);
//! v3's shorter, shallower ProbeRTT (tried: no fairer in the simulated shallow
//! buffer, and CUBIC took more). See docs/results/2026-11-29-bbr/NOTES.md.
//! quark never bounds the window below the modelled BDP (plus `extra_acked`)
//! outside ProbeRTT, so random loss costs little (the lab's lossy grid); the price is fairness in
//! buffers of one BDP or less, where a flow that got ahead stays ahead.
//!
//! Not the default: on the lab's emulated grid (BENCHMARKS.md, "BBR on the lossy
//! grid") it keeps 5–10× CUBIC's goodput under 1–2 % random loss and matches
//! Linux TCP BBR at 1–2 %, but in buffers of a BDP or less it takes most of
//! the link from a competing CUBIC flow.
//!
//! Simplifications: loss recovery follows RFC 9002's recovery period (it ends when
//! a packet sent after it began is acknowledged) rather than TCP's; ProbeRTT does
//! not mark its samples app-limited (they are low and lose in the max filter).

mod ack;
mod aggregation;
mod bounds;
mod filter;
#[cfg(test)]
pub(crate) mod sim;
#[cfg(test)]
mod sim_tests;
#[cfg(test)]
mod tests;

use std::time::{Duration, Instant};

use super::{AckEvent, RecoveryPeriod, initial_window, minimum_window};
use crate::recovery::RttEstimator;
use filter::MaxFilter;

//= https://datatracker.ietf.org/doc/html/draft-cardwell-iccrg-bbr-congestion-control-00#section-4.3.2.1
//# upon entry into Startup state BBR sets BBR.pacing_gain and BBR.cwnd_gain to
//# BBRHighGain = 2/ln(2) ~= 2.89, the minimum gain value that will allow the
//# sending rate to double each round.
const HIGH_GAIN: f64 = 2.0 / std::f64::consts::LN_2;

//= https://datatracker.ietf.org/doc/html/draft-cardwell-iccrg-bbr-congestion-control-00#section-4.3.4.3
//# pacing_gain_cycle = [5/4, 3/4, 1, 1, 1, 1, 1, 1]
const PACING_GAIN_CYCLE: [f64; 8] = [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];

//= https://datatracker.ietf.org/doc/html/draft-cardwell-iccrg-bbr-congestion-control-00#section-4.3.4.1
//# Note that while gain cycling varies the pacing_gain value, during ProbeBW
//# the cwnd_gain stays constant at two
const PROBE_BW_CWND_GAIN: f64 = 2.0;

//= https://datatracker.ietf.org/doc/html/draft-cardwell-iccrg-bbr-congestion-control-00#section-4.1.2.2
//# The length of the RTProp min filter window is RTpropFilterLen = 10 secs.
const RTPROP_FILTER_LEN: Duration = Duration::from_secs(10);

//= https://datatracker.ietf.org/doc/html/draft-cardwell-iccrg-bbr-congestion-control-00#section-4.3.5
//# After maintaining BBRMinPipeCwnd or fewer packets in flight for at least
//# ProbeRTTDuration (200 ms) and one round trip, BBR leaves ProbeRTT
const PROBE_RTT_DURATION: Duration = Duration::from_millis(200);

//= https://datatracker.ietf.org/doc/html/draft-cardwell-iccrg-bbr-congestion-control-00#section-4.2.3.3
//# BBR imposes a floor of BBRMinPipeCwnd (4 packets, i.e. 4 * MSSS).
const MIN_PIPE_PACKETS: u64 = 4;

/// BBR's state machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BbrState {
    /// Doubling the sending rate each round to find the bottleneck.
    Startup,
    /// Draining the queue Startup built.
    Drain,
    /// Cruising at the bottleneck rate, probing up and down in a gain cycle.
    ProbeBw,
    /// Cutting in-flight data to four packets to measure the propagation delay.
    ProbeRtt,
}

/// What a congestion event changed, kept for `on_spurious_congestion`.
#[derive(Clone, Copy, Debug)]
struct Saved {
    cwnd: u64,
    prior_cwnd: u64,
    recovery: RecoveryPeriod,
    in_loss_recovery: bool,
}

/// BBR v1 state (the draft's `BBR.*`).
#[derive(Debug)]
pub struct Bbr {
    mtu: u64,
    state: BbrState,
    pacing_gain: f64,
    cwnd_gain: f64,
    cwnd: u64,
    /// Bytes per second.
    pacing_rate: u64,
    /// The pacing rate was set from the first RTT sample.
    pacing_initialized: bool,
    btl_bw: MaxFilter,
    rt_prop: Option<Duration>,
    rt_prop_stamp: Option<Instant>,
    rt_prop_expired: bool,
    /// Bytes delivered (C.delivered, from the latest rate sample).
    delivered: u64,
    next_round_delivered: u64,
    round_count: u64,
    round_start: bool,
    filled_pipe: bool,
    full_bw: u64,
    full_bw_count: u32,
    cycle_index: usize,
    cycle_stamp: Option<Instant>,
    probe_rtt_done: Option<Instant>,
    probe_rtt_round_done: bool,
    idle_restart: bool,
    /// The last known good cwnd, from before loss recovery or ProbeRTT.
    prior_cwnd: u64,
    recovery: RecoveryPeriod,
    in_loss_recovery: bool,
    packet_conservation: bool,
    saved: Option<Saved>,
    /// Bytes in flight as last reported.
    in_flight: u64,
    /// Loss and ECN signals of the current round (v3).
    round_signals: bounds::RoundSignals,
    /// The most in flight without too much loss (v3; NO_BOUND until a probe lost).
    inflight_hi: u64,
    /// The short-term bound after a lossy round (v3; NO_BOUND when unset).
    inflight_lo: u64,
    /// Rounds inflight_hi grew in the current probe (its step doubles).
    probe_up_rounds: u32,
    /// The path's random loss rate, ppm: the loss threshold is 2 % above it.
    loss_baseline_ppm: u64,
    /// The ACK-aggregation allowance (v3's extra_acked).
    aggregation: aggregation::Aggregation,
    /// v3's bounds are on (`bbr`); off, the v1 model alone (`bbr1`).
    v3: bool,
    /// xorshift state for the ProbeBW start phase (fixed seed: replayable).
    rng: u64,
}

impl Bbr {
    /// Start in Startup with the initial window.
    pub fn new(mtu: u64) -> Self {
        let cwnd = initial_window(mtu);
        //= https://datatracker.ietf.org/doc/html/draft-cardwell-iccrg-bbr-congestion-control-00#section-4.2.1
        //# nominal_bandwidth = InitialCwnd / (SRTT ? SRTT : 1ms)
        //# BBR.pacing_rate =  BBR.pacing_gain * nominal_bandwidth
        let pacing_rate = (HIGH_GAIN * (cwnd * 1000) as f64) as u64;
        Bbr {
            mtu,
            state: BbrState::Startup,
            pacing_gain: HIGH_GAIN,
            cwnd_gain: HIGH_GAIN,
            cwnd,
            pacing_rate,
            pacing_initialized: false,
            btl_bw: MaxFilter::default(),
            rt_prop: None,
            rt_prop_stamp: None,
            rt_prop_expired: false,
            delivered: 0,
            next_round_delivered: 0,
            round_count: 0,
            round_start: false,
            filled_pipe: false,
            full_bw: 0,
            full_bw_count: 0,
            cycle_index: 0,
            cycle_stamp: None,
            probe_rtt_done: None,
            probe_rtt_round_done: false,
            idle_restart: false,
            prior_cwnd: 0,
            recovery: RecoveryPeriod::default(),
            in_loss_recovery: false,
            packet_conservation: false,
            saved: None,
            in_flight: 0,
            round_signals: bounds::RoundSignals::default(),
            inflight_hi: bounds::NO_BOUND,
            inflight_lo: bounds::NO_BOUND,
            probe_up_rounds: 0,
            loss_baseline_ppm: 0,
            aggregation: aggregation::Aggregation::default(),
            v3: true,
            rng: 0x9e37_79b9_7f4a_7c15 ^ mtu,
        }
    }

    /// BBR's v1 model alone, without v3's bounds.
    pub fn v1(mtu: u64) -> Self {
        Bbr {
            v3: false,
            ..Bbr::new(mtu)
        }
    }

    /// The state machine's state.
    pub fn state(&self) -> BbrState {
        self.state
    }

    /// Estimated bottleneck bandwidth in bytes per second (0 before any sample).
    pub fn bandwidth(&self) -> u64 {
        self.btl_bw.get()
    }

    /// Estimated round-trip propagation delay.
    pub fn min_rtt(&self) -> Option<Duration> {
        self.rt_prop
    }

    fn min_pipe_cwnd(&self) -> u64 {
        MIN_PIPE_PACKETS * self.mtu
    }

    /// BBRInflight(gain): `gain` × the estimated BDP, plus room for send quanta.
    fn inflight(&self, gain: f64) -> u64 {
        //= https://datatracker.ietf.org/doc/html/draft-cardwell-iccrg-bbr-congestion-control-00#section-4.2.3.2
        //# if (BBR.RTprop == Inf)
        //#   return InitialCwnd /* no valid RTT samples yet */
        //# quanta = 3*BBR.send_quantum
        //# estimated_bdp = BBR.BtlBw * BBR.RTprop
        //# return gain * estimated_bdp + quanta
        let Some(rt_prop) = self.rt_prop else {
            return initial_window(self.mtu);
        };
        let bdp = self.btl_bw.get() as f64 * rt_prop.as_secs_f64();
        (gain * bdp) as u64 + 3 * self.send_quantum()
    }

    /// The ACK-aggregation allowance: v3's extra_acked, 0 in `bbr1`.
    fn extra_acked(&self) -> u64 {
        if self.v3 { self.aggregation.get() } else { 0 }
    }

    fn send_quantum(&self) -> u64 {
        //= https://datatracker.ietf.org/doc/html/draft-cardwell-iccrg-bbr-congestion-control-00#section-4.2.2
        //# if (BBR.pacing_rate < 1.2 Mbps)
        //#   BBR.send_quantum = 1 * MSS
        //# else if (BBR.pacing_rate < 24 Mbps)
        //#   BBR.send_quantum  = 2 * MSS
        //# else
        //#   BBR.send_quantum  = min(BBR.pacing_rate * 1ms, 64KBytes)
        match self.pacing_rate {
            r if r < 150_000 => self.mtu,
            r if r < 3_000_000 => 2 * self.mtu,
            r => (r / 1000).min(64 * 1024),
        }
    }

    fn save_cwnd(&self) -> u64 {
        //= https://datatracker.ietf.org/doc/html/draft-cardwell-iccrg-bbr-congestion-control-00#section-4.2.3.4
        //# if (not InLossRecovery() and BBR.state != ProbeRTT)
        //#   return cwnd
        //# else
        //#   return max(BBR.prior_cwnd, cwnd)
        if !self.in_loss_recovery && self.state != BbrState::ProbeRtt {
            self.cwnd
        } else {
            self.prior_cwnd.max(self.cwnd)
        }
    }

    fn restore_cwnd(&mut self) {
        self.cwnd = self.cwnd.max(self.prior_cwnd);
    }

    fn random_below(&mut self, n: u64) -> u64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng % n
    }

    fn enter_startup(&mut self) {
        self.state = BbrState::Startup;
        self.pacing_gain = HIGH_GAIN;
        self.cwnd_gain = HIGH_GAIN;
    }

    fn enter_drain(&mut self) {
        //= https://datatracker.ietf.org/doc/html/draft-cardwell-iccrg-bbr-congestion-control-00#section-4.3.3
        //# BBR.pacing_gain = 1/BBRHighGain  // pace slowly
        //# BBR.cwnd_gain = bbr_high_gain    // maintain cwnd
        self.state = BbrState::Drain;
        self.pacing_gain = 1.0 / HIGH_GAIN;
        self.cwnd_gain = HIGH_GAIN;
    }

    fn enter_probe_bw(&mut self, now: Instant) {
        //= https://datatracker.ietf.org/doc/html/draft-cardwell-iccrg-bbr-congestion-control-00#section-4.3.4.3
        //# BBR.cycle_index = BBRGainCycleLen - 1 - random_int_in_range(0..6)
        //# BBRAdvanceCyclePhase()
        self.state = BbrState::ProbeBw;
        self.pacing_gain = 1.0;
        self.cwnd_gain = PROBE_BW_CWND_GAIN;
        let len = PACING_GAIN_CYCLE.len();
        self.cycle_index = len - 1 - self.random_below(7) as usize;
        self.advance_cycle_phase(now);
    }

    fn advance_cycle_phase(&mut self, now: Instant) {
        self.cycle_stamp = Some(now);
        self.cycle_index = (self.cycle_index + 1) % PACING_GAIN_CYCLE.len();
        self.pacing_gain = PACING_GAIN_CYCLE[self.cycle_index];
        if self.cycle_index == 0 {
            self.start_probe();
        }
    }

    fn enter_probe_rtt(&mut self) {
        self.state = BbrState::ProbeRtt;
        self.pacing_gain = 1.0;
        self.cwnd_gain = 1.0;
    }
}

impl super::Controller for Bbr {
    fn set_max_datagram_size(&mut self, mtu: u64) {
        // Windows are derived from the bandwidth-delay product and `mtu` at each
        // use; only the current window's floor (two datagrams) needs to follow.
        self.mtu = mtu;
        self.cwnd = self.cwnd.max(minimum_window(mtu));
    }

    fn on_ack(&mut self, _now: Instant, _sent_time: Instant, _bytes: u64, _rtt: &RttEstimator) {
        // Everything happens once per ACK frame, in on_ack_event.
    }

    fn on_packet_sent(&mut self, _now: Instant, bytes: u64, prior_in_flight: u64) {
        //= https://datatracker.ietf.org/doc/html/draft-cardwell-iccrg-bbr-congestion-control-00#section-4.3.4.4
        //# if (packets_in_flight == 0 and C.app_limited)
        //#   BBR.idle_start = true
        //#   if (BBR.state == ProbeBW)
        //#     BBRSetPacingRateWithGain(1)
        //
        // Nothing in flight means nothing limited the sending but the application.
        if prior_in_flight == 0 {
            self.idle_restart = true;
            if self.state == BbrState::ProbeBw && self.btl_bw.get() > 0 {
                self.pacing_rate = self.btl_bw.get();
            }
        }
        self.in_flight = prior_in_flight.saturating_add(bytes);
    }

    fn on_congestion_event(
        &mut self,
        now: Instant,
        sent_time: Instant,
        persistent: bool,
        lost_bytes: u64,
    ) {
        self.in_flight = self.in_flight.saturating_sub(lost_bytes);
        // Without losses the event is an ECN-CE increase (v3 counts it per round).
        self.round_signals.ce |= lost_bytes == 0 && !persistent;
        if self.v3 && !persistent {
            // v3 answers loss through its per-round bounds (bounds.rs). With
            // RFC 9002's recovery periods, one per round trip under steady
            // random loss, v1's cut to the bytes in flight came every round
            // and held the window at what was in flight: no Startup growth
            // and no probing, far below Linux TCP BBR on the lossy grid.
            return;
        }
        if !self.recovery.contains(sent_time) {
            self.saved = Some(Saved {
                cwnd: self.cwnd,
                prior_cwnd: self.prior_cwnd,
                recovery: self.recovery,
                in_loss_recovery: self.in_loss_recovery,
            });
            //= https://datatracker.ietf.org/doc/html/draft-cardwell-iccrg-bbr-congestion-control-00#section-4.2.3.4
            //# Upon entering Fast Recovery, set cwnd to the number of packets still in
            //# flight (allowing at least one for a fast retransmit):
            //#
            //# BBR.prior_cwnd = BBRSaveCwnd()
            //# cwnd = packets_in_flight + max(packets_delivered, 1)
            //# BBR.packet_conservation = true
            self.prior_cwnd = self.save_cwnd();
            self.recovery.begin(now);
            self.in_loss_recovery = true;
            self.packet_conservation = true;
            self.cwnd = self.in_flight + self.mtu;
        } else if lost_bytes > 0 {
            //= https://datatracker.ietf.org/doc/html/draft-cardwell-iccrg-bbr-congestion-control-00#section-4.2.3.4
            //# if (packets_lost > 0)
            //#   cwnd = max(cwnd - packets_lost, 1)
            self.cwnd = self.cwnd.saturating_sub(lost_bytes).max(self.mtu);
        }
        if persistent {
            //= https://www.rfc-editor.org/rfc/rfc9002#section-7.6.2
            //# When persistent congestion is declared, the sender's congestion
            //# window MUST be reduced to the minimum congestion window
            //# (kMinimumWindow), similar to a TCP sender's response on an RTO
            //# [RFC5681].
            self.cwnd = minimum_window(self.mtu);
            self.recovery.start = None;
            self.in_loss_recovery = false;
            self.packet_conservation = false;
            self.saved = None;
        }
    }

    fn on_spurious_congestion(&mut self) {
        //= https://datatracker.ietf.org/doc/html/draft-cardwell-iccrg-bbr-congestion-control-00#section-4.2.3.4
        //# When BBR exits loss recovery it restores the cwnd to the "last known
        //# good" value that cwnd held before entering recovery.  This applies
        //# equally whether the flow exits loss recovery because it finishes
        //# repairing all losses or because it executes an "undo" event after
        //# inferring that a loss recovery event was spurious.
        if let Some(s) = self.saved.take() {
            self.cwnd = self.cwnd.max(s.cwnd).max(self.prior_cwnd);
            self.prior_cwnd = s.prior_cwnd;
            self.recovery = s.recovery;
            self.in_loss_recovery = s.in_loss_recovery;
            self.packet_conservation = false;
        }
    }

    fn on_ack_event(&mut self, now: Instant, event: &AckEvent, rtt: &RttEstimator) {
        self.on_ack_frame(now, event, rtt);
    }

    fn pacing_rate(&self) -> Option<u64> {
        Some(self.pacing_rate.max(1))
    }

    fn wants_rate_samples(&self) -> bool {
        true
    }

    fn phase(&self) -> Option<&'static str> {
        Some(match self.state {
            BbrState::Startup => "startup",
            BbrState::Drain => "drain",
            BbrState::ProbeBw => "probe_bw",
            BbrState::ProbeRtt => "probe_rtt",
        })
    }

    fn window(&self) -> u64 {
        self.cwnd
    }

    fn ssthresh(&self) -> u64 {
        u64::MAX
    }

    fn name(&self) -> &'static str {
        if self.v3 { "bbr" } else { "bbr1" }
    }
}
