//! Processing an ACK frame (RFC 9002 §5.1, §6.1, A.7, B.5, B.7).

use super::Space;
use std::ops::RangeInclusive;
use std::time::{Duration, Instant};

use super::{AckSummary, PathState, Recovery, SentPacket};
use crate::cc::AckEvent;
use crate::error::TransportError;
use crate::frame::EcnCounts;
use crate::types::{EcnCodepoint, SpaceId};

/// What one pass over the newly acknowledged packets collected.
struct Newly {
    /// The largest newly acknowledged packet and its send time.
    newest: (u64, Instant),
    any_eliciting: bool,
    latest_sent: Instant,
    /// Newly acknowledged packets sent ECT(0) / ECT(1).
    marked: [u64; 2],
    in_flight_bytes: u64,
}

impl<T> Recovery<T> {
    /// Process an ACK frame (RFC 9002 A.7): ranges highest first; `ack_delay` already
    /// scaled by the peer's exponent. Newly acknowledged packets are appended to
    /// `acked`, packets now deemed lost to `lost`; the congestion controller is updated.
    /// Acknowledging a packet number never sent is PROTOCOL_VIOLATION.
    #[allow(clippy::too_many_arguments)]
    pub fn on_ack_received(
        &mut self,
        now: Instant,
        space: SpaceId,
        ranges: impl Iterator<Item = RangeInclusive<u64>>,
        ack_delay: Duration,
        ecn: Option<EcnCounts>,
        path: &PathState,
        acked: &mut Vec<(u64, SentPacket<T>)>,
        lost: &mut Vec<(u64, SentPacket<T>)>,
    ) -> Result<AckSummary, TransportError> {
        let first_new = acked.len();
        let mut spurious = std::mem::take(&mut self.spurious_scratch);
        spurious.clear();
        if self
            .spaces
            .get(space.index())
            .is_some_and(|s| !s.lost.is_empty())
        {
            // Losses older than this were real; forget them.
            let horizon = self.lost_horizon(path);
            if let Some(before) = now.checked_sub(horizon) {
                self.spaces
                    .get_mut(space.index(), Space::new)
                    .lost
                    .expire(before);
            }
        }
        let sp = self.spaces.get_mut(space.index(), Space::new);
        let prior_largest = sp.largest_acked;
        let mut largest: Option<u64> = None;
        // Ranges arrive highest first and disjoint; anything else is clipped below
        // the previous range so no packet number is visited twice.
        let mut floor: Option<u64> = None;
        for range in ranges {
            let (lo, hi) = (*range.start(), *range.end());
            if lo > hi {
                self.spurious_scratch = spurious;
                return Err(TransportError::frame_encoding(
                    "ACK range ends below its start",
                ));
            }
            //= https://www.rfc-editor.org/rfc/rfc9000#section-13.1
            //# An endpoint SHOULD treat receipt of an acknowledgment for a packet it
            //# did not send as a connection error of type PROTOCOL_VIOLATION, if it
            //# is able to detect the condition.
            if hi >= sp.sent.next_pn() {
                self.spurious_scratch = spurious;
                return Err(TransportError::protocol_violation(
                    "ACK of a packet number never sent",
                ));
            }
            largest = Some(largest.map_or(hi, |l| l.max(hi)));
            let hi = match floor {
                Some(0) => continue,
                Some(f) => hi.min(f - 1),
                None => hi,
            };
            if lo > hi {
                continue;
            }
            floor = Some(lo);
            if let Err(pn) = sp.sent.ack_range(lo, hi, acked) {
                self.spurious_scratch = spurious;
                return Err(TransportError::protocol_violation(format!(
                    "ACK of skipped packet number {pn}"
                )));
            }
            // Packets declared lost that this range covers arrived after all.
            if !sp.lost.is_empty() {
                sp.lost.take_range(lo, hi, &mut spurious);
            }
        }
        let Some(largest) = largest else {
            self.spurious_scratch = spurious;
            return Ok(AckSummary::default());
        };
        //= https://www.rfc-editor.org/rfc/rfc9002#appendix-A.7
        //# largest_acked_packet[pn_space] =
        //#     max(largest_acked_packet[pn_space], ack.largest_acked)
        sp.largest_acked = Some(prior_largest.map_or(largest, |l| l.max(largest)));
        let mut summary = AckSummary {
            spurious_losses: u32::try_from(spurious.len()).unwrap_or(u32::MAX),
            ..AckSummary::default()
        };
        // Undo and threshold adaptation come first, so that the losses detected
        // below already use the raised thresholds.
        if !spurious.is_empty() {
            self.on_spurious_losses(now, prior_largest, &spurious);
        }
        self.spurious_scratch = spurious;

        //= https://www.rfc-editor.org/rfc/rfc9002#appendix-A.7
        //# // Nothing to do if there are no newly acked packets.
        let Some(newly) = self.newly_acked(now, space, prior_largest, &acked[first_new..]) else {
            return Ok(summary);
        };
        let (newest_pn, newest_sent) = newly.newest;
        summary.largest_newly_acked = Some(newest_pn);
        let sp = self.spaces.get_mut(space.index(), Space::new);
        sp.latest_acked_sent = Some(
            sp.latest_acked_sent
                .map_or(newly.latest_sent, |t| t.max(newly.latest_sent)),
        );

        //= https://www.rfc-editor.org/rfc/rfc9002#section-5.1
        //# An endpoint generates an RTT sample on receiving an ACK frame that
        //# meets the following two conditions:
        //#
        //# *  the largest acknowledged packet number is newly acknowledged, and
        //#
        //# *  at least one of the newly acknowledged packets was ack-eliciting.
        if newest_pn == largest && newly.any_eliciting {
            let latest_rtt = now.saturating_duration_since(newest_sent);
            //= https://www.rfc-editor.org/rfc/rfc9002#section-5.3
            //# MAY ignore the acknowledgment delay for Initial packets, since
            //# these acknowledgments are not delayed by the peer
            let ack_delay = if space == SpaceId::Initial {
                Duration::ZERO
            } else {
                ack_delay
            };
            self.rtt.update(
                latest_rtt,
                ack_delay,
                path.max_ack_delay,
                path.handshake_confirmed,
            );
            self.first_rtt_sample.get_or_insert(now);
            // Its own sample is fresher than the path's offer.
            self.path_pto = Duration::ZERO;
            summary.rtt_sample = true;
        }

        //= https://www.rfc-editor.org/rfc/rfc9002#appendix-B.7
        //# if (ack.ce_counter > ecn_ce_counters[pn_space]):
        //#   ecn_ce_counters[pn_space] = ack.ce_counter
        //#   sent_time = sent_packets[ack.largest_acked].time_sent
        //#   OnCongestionEvent(sent_time)
        //
        // Only from counts that pass validation (RFC 9000 §13.4.2.1).
        let increased = prior_largest.is_none_or(|p| largest > p);
        let outcome = self.ecn.on_ack(space.index(), ecn, newly.marked, increased);
        let ecn_signal = outcome.ce_increase.then_some(newest_sent);
        summary.ecn_ce = outcome.ce_increase;

        // The reordering thresholds decay per Data round trip, only once raised.
        if space == SpaceId::Data && self.reorder.raised() {
            let largest_sent = self
                .spaces
                .get(space.index())
                .map_or(0, |s| s.sent.next_pn().saturating_sub(1));
            self.reorder.on_data_ack(largest, largest_sent);
        }

        //= https://www.rfc-editor.org/rfc/rfc9002#appendix-A.7
        //# lost_packets = DetectAndRemoveLostPackets(pn_space)
        //# if (!lost_packets.empty()):
        //#   OnPacketsLost(lost_packets)
        //# OnPacketsAcked(newly_acked_packets)
        let prior_in_flight = self.bytes_in_flight() + newly.in_flight_bytes;
        let first_lost = lost.len();
        self.detect_and_react(now, space, path, ecn_signal, lost);
        for (_, p) in &acked[first_new..] {
            //= https://www.rfc-editor.org/rfc/rfc9002#section-7.8
            //# When this occurs, the congestion window SHOULD NOT be increased in
            //# either slow start or congestion avoidance.
            if p.in_flight && !self.app_limited {
                self.cc
                    .on_ack(now, p.time_sent, u64::from(p.size), &self.rtt);
            }
        }
        let min_rtt = self.rtt.has_sample().then(|| self.rtt.min());
        let event = AckEvent {
            rate: self.delivery.as_mut().and_then(|d| d.sample(now, min_rtt)),
            newly_acked: newly.in_flight_bytes,
            newly_lost: lost[first_lost..]
                .iter()
                .filter(|(_, p)| p.in_flight)
                .map(|(_, p)| u64::from(p.size))
                .sum(),
            prior_in_flight,
            bytes_in_flight: self.bytes_in_flight(),
        };
        self.cc.on_ack_event(now, &event, &self.rtt);
        self.note_window();

        //= https://www.rfc-editor.org/rfc/rfc9002#appendix-A.7
        //# // Reset pto_count unless the client is unsure if
        //# // the server has validated the client's address.
        //# if (PeerCompletedAddressValidation()):
        //#   pto_count = 0
        //# SetLossDetectionTimer()
        //
        //= https://www.rfc-editor.org/rfc/rfc9002#section-6.2.1
        //# That is, a client does not reset the PTO backoff factor on receiving
        //# acknowledgments in Initial packets.
        if path.peer_completed_address_validation {
            self.pto_count = 0;
        }
        self.set_timer(now, path);
        Ok(summary)
    }

    /// One pass over this ACK's newly acknowledged packets: what the RTT sample,
    /// ECN validation and delivery-rate sampling need, and (while the reordering
    /// thresholds are raised) how far behind the largest acknowledged they came.
    fn newly_acked(
        &mut self,
        now: Instant,
        space: SpaceId,
        prior_largest: Option<u64>,
        acked: &[(u64, SentPacket<T>)],
    ) -> Option<Newly> {
        let (first_pn, first) = acked.first()?;
        let mut n = Newly {
            newest: (*first_pn, first.time_sent),
            any_eliciting: false,
            latest_sent: first.time_sent,
            marked: [0; 2],
            in_flight_bytes: 0,
        };
        // Reordering that did not cause a loss only matters while the thresholds
        // are raised (it holds their decay back): in order, this stays off.
        let reordered_below =
            prior_largest.filter(|_| space == SpaceId::Data && self.reorder.raised());
        let rtt = self.rtt.smoothed().max(self.rtt.latest());
        for (pn, p) in acked {
            if *pn > n.newest.0 {
                n.newest = (*pn, p.time_sent);
            }
            n.any_eliciting |= p.ack_eliciting;
            n.latest_sent = n.latest_sent.max(p.time_sent);
            match p.ecn {
                Some(EcnCodepoint::Ect0) => n.marked[0] += 1,
                Some(EcnCodepoint::Ect1) => n.marked[1] += 1,
                _ => {}
            }
            if p.in_flight {
                n.in_flight_bytes += u64::from(p.size);
                if let (Some(d), Some(stamp)) = (self.delivery.as_mut(), p.delivery.get()) {
                    d.on_acked(now, p.time_sent, u64::from(p.size), stamp);
                }
            }
            if let Some(prior) = reordered_below.filter(|prior| pn < prior) {
                let age = now.saturating_duration_since(p.time_sent);
                self.reorder
                    .on_reordered(prior - pn, age.as_secs_f64() / rtt.as_secs_f64());
            }
        }
        Some(n)
    }
}
