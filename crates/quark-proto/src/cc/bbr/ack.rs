//! BBR's per-ACK steps (draft-cardwell-iccrg-bbr-congestion-control-00 §3.5.2):
//! update the model and the state machine, then the control parameters.
//
//= https://datatracker.ietf.org/doc/html/draft-cardwell-iccrg-bbr-congestion-control-00#section-3.5.2
//# BBRUpdateOnACK():
//#   BBRUpdateModelAndState()
//#   BBRUpdateControlParameters()

use std::time::{Duration, Instant};

use super::{Bbr, BbrState, PROBE_RTT_DURATION, RTPROP_FILTER_LEN, initial_window};
use crate::cc::AckEvent;
use crate::recovery::{RateSample, RttEstimator};

impl Bbr {
    pub(super) fn on_ack_frame(&mut self, now: Instant, event: &AckEvent, rtt: &RttEstimator) {
        self.in_flight = event.bytes_in_flight;
        self.note_round(event.newly_acked, event.newly_lost, event.prior_in_flight);
        let Some(rs) = event.rate else {
            return;
        };
        self.delivered = rs.delivered;
        // RFC 9002's recovery period ends when a packet sent after it began is
        // acknowledged: the losses are repaired.
        if self.in_loss_recovery
            && now
                .checked_sub(rs.rtt)
                .is_some_and(|sent| !self.recovery.contains(sent))
        {
            //= https://datatracker.ietf.org/doc/html/draft-cardwell-iccrg-bbr-congestion-control-00#section-4.2.3.4
            //# BBR.packet_conservation = false
            //# BBRRestoreCwnd()
            self.in_loss_recovery = false;
            self.packet_conservation = false;
            self.restore_cwnd();
        }
        //= https://datatracker.ietf.org/doc/html/draft-cardwell-iccrg-bbr-congestion-control-00#section-3.5.2
        //# BBRUpdateModelAndState():
        //#   BBRUpdateBtlBw()
        //#   BBRCheckCyclePhase()
        //#   BBRCheckFullPipe()
        //#   BBRCheckDrain()
        //#   BBRUpdateRTprop()
        //#   BBRCheckProbeRTT()
        self.update_btl_bw(&rs);
        if self.v3 {
            self.update_ack_aggregation(now, event.newly_acked);
        }
        if self.round_start {
            self.end_round(now);
        }
        self.check_cycle_phase(now, event.prior_in_flight, event.newly_lost);
        self.check_full_pipe(rs.is_app_limited);
        self.check_drain(now, event.bytes_in_flight);
        self.update_rt_prop(now, rs.rtt);
        self.check_probe_rtt(now, event.bytes_in_flight);
        //= https://datatracker.ietf.org/doc/html/draft-cardwell-iccrg-bbr-congestion-control-00#section-3.5.2
        //# BBRUpdateControlParameters()
        //#   BBRSetPacingRate()
        //#   BBRSetSendQuantum()
        //#   BBRSetCwnd()
        self.set_pacing_rate(rtt);
        self.set_cwnd(event);
    }

    fn update_btl_bw(&mut self, rs: &RateSample) {
        //= https://datatracker.ietf.org/doc/html/draft-cardwell-iccrg-bbr-congestion-control-00#section-4.1.1.3
        //# if (packet.delivered >= BBR.next_round_delivered)
        //#   BBR.next_round_delivered = BBR.delivered
        //#   BBR.round_count++
        //#   BBR.round_start = true
        //# else
        //#   BBR.round_start = false
        self.round_start = rs.prior_delivered >= self.next_round_delivered;
        if self.round_start {
            self.next_round_delivered = self.delivered;
            self.round_count += 1;
        }
        //= https://datatracker.ietf.org/doc/html/draft-cardwell-iccrg-bbr-congestion-control-00#section-4.1.1.5
        //# if (rs.delivery_rate >= BBR.BtlBw || ! rs.is_app_limited)
        if let Some(rate) = rs.delivery_rate {
            if rate >= self.btl_bw.get() || !rs.is_app_limited {
                self.btl_bw.update(rate, self.round_count);
            }
        }
    }

    fn check_cycle_phase(&mut self, now: Instant, prior_in_flight: u64, lost: u64) {
        if self.state != BbrState::ProbeBw {
            return;
        }
        //= https://datatracker.ietf.org/doc/html/draft-cardwell-iccrg-bbr-congestion-control-00#section-4.3.4.3
        //# is_full_length = (Now() - BBR.cycle_stamp) > BBR.RTprop
        //# if (BBR.pacing_gain == 1)
        //#   return is_full_length
        //# if (BBR.pacing_gain > 1)
        //#   return is_full_length and
        //#             (packets_lost > 0 or
        //#              prior_inflight >= BBRInflight(BBR.pacing_gain))
        //# else  //  (BBR.pacing_gain < 1)
        //#   return is_full_length or
        //#              prior_inflight <= BBRInflight(1)
        let elapsed = self
            .cycle_stamp
            .map_or(Duration::MAX, |s| now.saturating_duration_since(s));
        let full_length = elapsed > self.rt_prop.unwrap_or(Duration::ZERO);
        let next = if self.pacing_gain == 1.0 {
            full_length
        } else if self.pacing_gain > 1.0 {
            // v3: a loss ends the probe only once the round's loss rate is too
            // high (draft-ietf-ccwg-bbr §5.5.10.2), not at the first loss.
            let lossy = if self.v3 {
                self.round_signals.too_high(self.loss_baseline_ppm)
            } else {
                lost > 0
            };
            full_length && (lossy || prior_in_flight >= self.inflight(self.pacing_gain))
        } else {
            full_length || prior_in_flight <= self.inflight(1.0)
        };
        if next {
            self.advance_cycle_phase(now);
        }
    }

    fn check_full_pipe(&mut self, app_limited: bool) {
        //= https://datatracker.ietf.org/doc/html/draft-cardwell-iccrg-bbr-congestion-control-00#section-4.3.2.2
        //# if BBR.filled_pipe or
        //#    not BBR.round_start or rs.is_app_limited
        //#   return  // no need to check for a full pipe now
        //# if (BBR.BtlBw >= BBR.full_bw * 1.25)  // BBR.BtlBw still growing?
        //#   BBR.full_bw = BBR.BtlBw    // record new baseline level
        //#   BBR.full_bw_count = 0
        //#   return
        //# BBR.full_bw_count++ // another round w/o much growth
        //# if (BBR.full_bw_count >= 3)
        //#   BBR.filled_pipe = true
        if self.filled_pipe || !self.round_start || app_limited {
            return;
        }
        let bw = self.btl_bw.get();
        if bw as f64 >= self.full_bw as f64 * 1.25 {
            self.full_bw = bw;
            self.full_bw_count = 0;
            return;
        }
        self.full_bw_count += 1;
        if self.full_bw_count >= 3 {
            self.filled_pipe = true;
        }
    }

    fn check_drain(&mut self, now: Instant, in_flight: u64) {
        //= https://datatracker.ietf.org/doc/html/draft-cardwell-iccrg-bbr-congestion-control-00#section-4.3.3
        //# if (BBR.state == Startup and BBR.filled_pipe)
        //#   BBREnterDrain()
        //# if (BBR.state == Drain and packets_in_flight <= BBRInflight(1.0))
        //#   BBREnterProbeBW()  // we estimate queue is drained
        if self.state == BbrState::Startup && self.filled_pipe {
            self.enter_drain();
        }
        if self.state == BbrState::Drain && in_flight <= self.inflight(1.0) {
            self.enter_probe_bw(now);
        }
    }

    fn update_rt_prop(&mut self, now: Instant, rtt: Duration) {
        //= https://datatracker.ietf.org/doc/html/draft-cardwell-iccrg-bbr-congestion-control-00#section-4.1.2.3
        //# BBR.rtprop_expired =
        //#   Now() > BBR.rtprop_stamp + RTpropFilterLen
        //# if (packet.rtt >= 0 and
        //#    (packet.rtt <= BBR.RTprop or BBR.rtprop_expired))
        //#   BBR.RTprop = packet.rtt
        //#   BBR.rtprop_stamp = Now()
        self.rt_prop_expired = self
            .rt_prop_stamp
            .and_then(|s| s.checked_add(RTPROP_FILTER_LEN))
            .is_some_and(|end| now > end);
        if self.rt_prop.is_none_or(|p| rtt <= p) || self.rt_prop_expired {
            self.rt_prop = Some(rtt);
            self.rt_prop_stamp = Some(now);
        }
    }

    fn check_probe_rtt(&mut self, now: Instant, in_flight: u64) {
        //= https://datatracker.ietf.org/doc/html/draft-cardwell-iccrg-bbr-congestion-control-00#section-4.3.5
        //# if (BBR.state != ProbeRTT and
        //#     BBR.rtprop_expired and
        //#     not BBR.idle_restart)
        //#   BBREnterProbeRTT()
        //#   BBRSaveCwnd()
        //#   BBR.probe_rtt_done_stamp = 0
        if self.state != BbrState::ProbeRtt && self.rt_prop_expired && !self.idle_restart {
            self.prior_cwnd = self.save_cwnd();
            self.enter_probe_rtt();
            self.probe_rtt_done = None;
        }
        if self.state == BbrState::ProbeRtt {
            self.handle_probe_rtt(now, in_flight);
        }
        self.idle_restart = false;
    }

    fn handle_probe_rtt(&mut self, now: Instant, in_flight: u64) {
        //= https://datatracker.ietf.org/doc/html/draft-cardwell-iccrg-bbr-congestion-control-00#section-4.3.5
        //# if (BBR.probe_rtt_done_stamp == 0 and
        //#     packets_in_flight <= BBRMinPipeCwnd)
        //#   BBR.probe_rtt_done_stamp =
        //#     Now() + ProbeRTTDuration
        //#   BBR.probe_rtt_round_done = false
        //#   BBR.next_round_delivered = BBR.delivered
        //# else if (BBR.probe_rtt_done_stamp != 0)
        //#   if (BBR.round_start)
        //#     BBR.probe_rtt_round_done = true
        //#   if (BBR.probe_rtt_round_done and
        //#       Now() > BBR.probe_rtt_done_stamp)
        //#     BBR.rtprop_stamp = Now()
        //#     BBRRestoreCwnd()
        //#     BBRExitProbeRTT()
        match self.probe_rtt_done {
            None if in_flight <= self.min_pipe_cwnd() => {
                self.probe_rtt_done = Some(now + PROBE_RTT_DURATION);
                self.probe_rtt_round_done = false;
                self.next_round_delivered = self.delivered;
            }
            None => {}
            Some(done) => {
                self.probe_rtt_round_done |= self.round_start;
                if self.probe_rtt_round_done && now > done {
                    self.rt_prop_stamp = Some(now);
                    self.restore_cwnd();
                    //= https://datatracker.ietf.org/doc/html/draft-cardwell-iccrg-bbr-congestion-control-00#section-4.3.5
                    //# if (BBR.filled_pipe)
                    //#   BBREnterProbeBW()
                    //# else
                    //#   BBREnterStartup()
                    if self.filled_pipe {
                        self.enter_probe_bw(now);
                    } else {
                        self.enter_startup();
                    }
                }
            }
        }
    }

    fn set_pacing_rate(&mut self, rtt: &RttEstimator) {
        if !self.pacing_initialized && rtt.has_sample() {
            //= https://datatracker.ietf.org/doc/html/draft-cardwell-iccrg-bbr-congestion-control-00#section-4.2.1
            //# it sets an initial pacing rate based on the transport sender
            //# implementation's initial congestion window ("InitialCwnd", e.g. from
            //# [RFC6298]), the initial SRTT (smoothed round-trip time) after the
            //# first non-zero RTT sample, and the initial pacing_gain
            self.pacing_initialized = true;
            let srtt = rtt.smoothed().max(Duration::from_micros(1));
            let nominal = initial_window(self.mtu) as f64 / srtt.as_secs_f64();
            self.pacing_rate = (self.pacing_gain * nominal) as u64;
        }
        let bw = self.btl_bw.get();
        if bw == 0 {
            return;
        }
        //= https://datatracker.ietf.org/doc/html/draft-cardwell-iccrg-bbr-congestion-control-00#section-4.2.1
        //# rate = pacing_gain * BBR.BtlBw
        //# if (BBR.filled_pipe || rate > BBR.pacing_rate)
        //#   BBR.pacing_rate = rate
        let rate = (self.pacing_gain * bw as f64) as u64;
        if self.filled_pipe || rate > self.pacing_rate {
            self.pacing_rate = rate;
        }
    }

    fn set_cwnd(&mut self, event: &AckEvent) {
        //= https://datatracker.ietf.org/doc/html/draft-cardwell-iccrg-bbr-congestion-control-00#section-4.2.3.6
        //# BBRUpdateTargetCwnd()
        //# BBRModulateCwndForRecovery()
        //# if (not BBR.packet_conservation) {
        //#   if (BBR.filled_pipe)
        //#     cwnd = min(cwnd + packets_delivered, BBR.target_cwnd)
        //#   else if (cwnd < BBR.target_cwnd || BBR.delivered < InitialCwnd)
        //#     cwnd = cwnd + packets_delivered
        //#   cwnd = max(cwnd, BBRMinPipeCwnd)
        //# }
        //# BBRModulateCwndForProbeRTT()
        //
        // The loss part of BBRModulateCwndForRecovery ran in on_congestion_event.
        //
        // v3 adds extra_acked here (§5.6.4.2: inflight_cap += BBR.extra_acked);
        // quark adds it to the least the bounds leave instead (bounds.rs). On
        // top of cwnd_gain 2, which already covers ACKs delayed up to a round
        // trip, it let a flow that got ahead keep a standing queue of 0.7 BDP
        // in a one-BDP buffer: two flows stopped converging in the simulator
        // (Jain 0.67, `two_flows_converge_to_fair_shares`).
        let target = self.inflight(self.cwnd_gain);
        let acked = event.newly_acked;
        if self.packet_conservation {
            //= https://datatracker.ietf.org/doc/html/draft-cardwell-iccrg-bbr-congestion-control-00#section-4.2.3.4
            //# if (BBR.packet_conservation)
            //#   cwnd = max(cwnd, packets_in_flight + packets_delivered)
            self.cwnd = self.cwnd.max(event.bytes_in_flight + acked);
        } else {
            if self.filled_pipe {
                self.cwnd = (self.cwnd + acked).min(target);
            } else if self.cwnd < target || self.delivered < initial_window(self.mtu) {
                self.cwnd += acked;
            }
            self.cwnd = self.cwnd.max(self.min_pipe_cwnd());
        }
        self.cwnd = self.bound_cwnd(self.cwnd);
        //= https://datatracker.ietf.org/doc/html/draft-cardwell-iccrg-bbr-congestion-control-00#section-4.2.3.5
        //# if (BBR.state == ProbeRTT)
        //#   cwnd = min(cwnd, BBRMinPipeCwnd)
        if self.state == BbrState::ProbeRtt {
            self.cwnd = self.cwnd.min(self.min_pipe_cwnd());
        }
    }
}
