//! Loss detection (RFC 9002 §6.1, A.10) and the congestion reaction to it (§7.6, B.8).

use super::Space;
use std::time::{Duration, Instant};

use super::rtt::GRANULARITY;
use super::spurious::LostRecord;
use super::{PathState, Recovery, SentPacket};
use crate::types::SpaceId;

//= https://www.rfc-editor.org/rfc/rfc9002#section-7.6.1
//# The RECOMMENDED value for kPersistentCongestionThreshold is 3, which
//# results in behavior that is approximately equivalent to a TCP sender
//# declaring an RTO after two TLPs.
const PERSISTENT_CONGESTION_THRESHOLD: u32 = 3;

impl<T> Recovery<T> {
    /// How long after a later packet was acknowledged an earlier one counts as lost.
    pub(super) fn loss_delay(&self) -> Duration {
        //= https://www.rfc-editor.org/rfc/rfc9002#section-6.1.2
        //# The time threshold is:
        //#
        //# max(kTimeThreshold * max(smoothed_rtt, latest_rtt), kGranularity)
        let rtt = self.rtt.smoothed().max(self.rtt.latest());
        // In nanoseconds: the float-to-`Duration` conversion cost ~80
        // instructions per ACK. The cast saturates (and maps NaN to zero).
        let nanos = rtt.as_nanos() as f64 * self.reorder.time();
        Duration::from_nanos(nanos as u64).max(GRANULARITY)
    }

    /// How long a lost packet is remembered: an acknowledgment of it later than
    /// this means nothing (the packet was really lost, or the path reorders beyond
    /// what any threshold could wait for).
    pub(super) fn lost_horizon(&self, path: &PathState) -> Duration {
        self.rtt
            .pto_base()
            .saturating_add(path.max_ack_delay)
            .saturating_mul(2)
    }

    /// Declare lost what the thresholds say is lost in `space` (appending it to
    /// `lost`), then tell the controller once about this ACK's congestion signals:
    /// the losses and, when given, an ECN-CE increase for a packet sent at
    /// `ecn_signal`.
    pub(super) fn detect_and_react(
        &mut self,
        now: Instant,
        space: SpaceId,
        path: &PathState,
        ecn_signal: Option<Instant>,
        lost: &mut Vec<(u64, SentPacket<T>)>,
    ) {
        let loss_delay = self.loss_delay();
        let (packet_threshold, first_sample) = (self.reorder.packet(), self.first_rtt_sample);
        let first_lost = lost.len();
        let sp = self.spaces.get_mut(space.index(), Space::new);
        //= https://www.rfc-editor.org/rfc/rfc9002#appendix-A.10
        //# assert(largest_acked_packet[pn_space] != infinite)
        //# loss_time[pn_space] = 0
        sp.loss_time = None;
        // The resolved slots at the front (most of them this ACK's packets)
        // change nothing in the scan (an acknowledged slot only ends a run of
        // losses, and none has begun before the first unresolved packet): pop
        // them first, so the walk covers only what is still outstanding.
        sp.sent.compact();
        let scan = match sp.largest_acked {
            Some(largest) => sp.sent.detect_lost(
                largest,
                now,
                loss_delay,
                packet_threshold,
                first_sample,
                lost,
            ),
            None => Default::default(),
        };
        sp.loss_time = scan.loss_time;
        if sp.loss_time.is_some() {
            self.timer_data_only = false;
        }
        sp.sent.compact();
        let mut marked_lost = 0;
        let mut congestion_lost = 0u32;
        for (_, p) in &lost[first_lost..] {
            self.stats.lost_packets += 1;
            self.stats.lost_bytes += u64::from(p.size);
            marked_lost += u64::from(p.ecn.is_some());
            congestion_lost += u32::from(p.in_flight && !p.mtu_probe);
        }
        if marked_lost > 0 {
            self.ecn.on_lost(marked_lost);
        }

        let persistent = scan
            .pc_span
            .is_some_and(|span| self.persistent_congestion(space, span, path));
        //= https://www.rfc-editor.org/rfc/rfc9002#appendix-B.8
        //# // Congestion event if in-flight packets were lost
        //# if (sent_time_of_last_loss != 0):
        //#   OnCongestionEvent(sent_time_of_last_loss)
        //
        // One call per ACK: the ECN signal (for the largest acknowledged packet)
        // is never older than a loss, and the controller ignores all but the
        // first signal of a recovery period anyway.
        let pc_end = scan.pc_span.filter(|_| persistent).map(|(_, end)| end);
        let signal = [scan.largest_lost_sent, ecn_signal, pc_end]
            .into_iter()
            .flatten()
            .max();
        let mut episode = 0;
        if let Some(sent_time) = signal {
            self.stats.congestion_events += 1;
            episode = self.episodes.on_signal(
                now,
                sent_time,
                congestion_lost,
                ecn_signal.is_some(),
                persistent,
            );
            self.cc
                .on_congestion_event(now, sent_time, persistent, scan.lost_bytes);
            self.note_window();
        }
        if persistent {
            self.stats.persistent_congestion += 1;
            self.rtt.reset_min();
        }
        // Remember the losses, to recognise them if they are acknowledged later.
        let sp = self.spaces.get_mut(space.index(), Space::new);
        for (pn, p) in &lost[first_lost..] {
            if p.in_flight && !p.mtu_probe {
                sp.lost.push(LostRecord {
                    pn: *pn,
                    time_sent: p.time_sent,
                    lost_at: now,
                    episode,
                });
            }
        }
    }

    /// `records` were declared lost and have now been acknowledged (the ACK raised
    /// the largest acknowledged from `prior_largest`): count them, adapt the
    /// reordering thresholds, and undo the congestion episode they caused if they
    /// were all it had.
    pub(super) fn on_spurious_losses(
        &mut self,
        now: Instant,
        prior_largest: Option<u64>,
        records: &[LostRecord],
    ) {
        let rtt = self.rtt.smoothed().max(self.rtt.latest()).as_secs_f64();
        for r in records {
            self.stats.spurious_losses += 1;
            // How far behind the largest acknowledged it came: a threshold above
            // that would have waited for it.
            let distance = prior_largest.map_or(0, |l| l.saturating_sub(r.pn));
            let age = now.saturating_duration_since(r.time_sent).as_secs_f64() / rtt;
            self.reorder.on_spurious(distance, age);
            if self.episodes.on_spurious(r.episode) {
                // Every loss behind the cut was spurious: undo it (RFC 9438 §4.9
                // describes this for CUBIC; NewReno and BBR restore their windows
                // the same way).
                self.stats.spurious_congestion_events += 1;
                self.cc.on_spurious_congestion();
                self.note_window();
            }
        }
    }

    /// Whether ack-eliciting packets lost between `first` and `last` (sent after the
    /// first RTT sample, none acknowledged between them in `space`) establish
    /// persistent congestion.
    fn persistent_congestion(
        &self,
        space: SpaceId,
        (first, last): (Instant, Instant),
        path: &PathState,
    ) -> bool {
        //= https://www.rfc-editor.org/rfc/rfc9002#section-7.6.1
        //# (smoothed_rtt + max(4*rttvar, kGranularity) + max_ack_delay) *
        //# kPersistentCongestionThreshold
        //
        //= https://www.rfc-editor.org/rfc/rfc9002#section-7.6.1
        //# Unlike the PTO computation in Section 6.2, this duration includes the
        //# max_ack_delay irrespective of the packet number spaces in which
        //# losses are established.
        let duration = self
            .rtt
            .pto_base()
            .saturating_add(path.max_ack_delay)
            .saturating_mul(PERSISTENT_CONGESTION_THRESHOLD);
        //= https://www.rfc-editor.org/rfc/rfc9002#section-7.6.2
        //# the duration between the send times of these two packets exceeds
        //# the persistent congestion duration (Section 7.6.1); and
        if last.saturating_duration_since(first) <= duration {
            return false;
        }
        // The packets' own space was checked slot by slot. For the others we only
        // know the latest acknowledged send time: if it falls between the two, an
        // acknowledgment interrupts the period. An earlier one hidden behind a later
        // one goes unseen, which the RFC allows:
        //= https://www.rfc-editor.org/rfc/rfc9002#section-7.6.2
        //# A sender that does not have state for all packet number spaces or an
        //# implementation that cannot compare send times across packet number
        //# spaces MAY use state for just the packet number space that was
        //# acknowledged.
        !SpaceId::ALL
            .into_iter()
            .filter(|&s| s != space)
            .filter_map(|s| self.spaces.get(s.index())?.latest_acked_sent)
            .any(|t| t > first && t < last)
    }
}
