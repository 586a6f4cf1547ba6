//! Processing an ACK frame (RFC 9002 §5.1, §6.1, A.7, B.5, B.7).

use std::ops::RangeInclusive;
use std::time::{Duration, Instant};

use super::{AckSummary, PathState, Recovery, SentPacket};
use crate::error::TransportError;
use crate::frame::EcnCounts;
use crate::types::SpaceId;

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
        let sp = &mut self.spaces[space.index()];
        let mut largest: Option<u64> = None;
        // Ranges arrive highest first and disjoint; anything else is clipped below
        // the previous range so no packet number is visited twice.
        let mut floor: Option<u64> = None;
        for range in ranges {
            let (lo, hi) = (*range.start(), *range.end());
            if lo > hi {
                return Err(TransportError::frame_encoding(
                    "ACK range ends below its start",
                ));
            }
            //= https://www.rfc-editor.org/rfc/rfc9000#section-13.1
            //# An endpoint SHOULD treat receipt of an acknowledgment for a packet it
            //# did not send as a connection error of type PROTOCOL_VIOLATION, if it
            //# is able to detect the condition.
            if hi >= sp.sent.next_pn() {
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
                return Err(TransportError::protocol_violation(format!(
                    "ACK of skipped packet number {pn}"
                )));
            }
        }
        let Some(largest) = largest else {
            return Ok(AckSummary::default());
        };
        //= https://www.rfc-editor.org/rfc/rfc9002#appendix-A.7
        //# largest_acked_packet[pn_space] =
        //#     max(largest_acked_packet[pn_space], ack.largest_acked)
        sp.largest_acked = Some(sp.largest_acked.map_or(largest, |l| l.max(largest)));
        //= https://www.rfc-editor.org/rfc/rfc9002#appendix-A.7
        //# // Nothing to do if there are no newly acked packets.
        let Some((first_pn, first)) = acked.get(first_new) else {
            return Ok(AckSummary::default());
        };
        let (mut newest_pn, mut newest_sent) = (*first_pn, first.time_sent);
        let mut any_eliciting = false;
        let mut latest_sent = newest_sent;
        for (pn, p) in &acked[first_new..] {
            if *pn > newest_pn {
                (newest_pn, newest_sent) = (*pn, p.time_sent);
            }
            any_eliciting |= p.ack_eliciting;
            latest_sent = latest_sent.max(p.time_sent);
        }
        sp.latest_acked_sent = Some(
            sp.latest_acked_sent
                .map_or(latest_sent, |t| t.max(latest_sent)),
        );
        let mut summary = AckSummary {
            largest_newly_acked: Some(newest_pn),
            ..AckSummary::default()
        };

        //= https://www.rfc-editor.org/rfc/rfc9002#section-5.1
        //# An endpoint generates an RTT sample on receiving an ACK frame that
        //# meets the following two conditions:
        //#
        //# *  the largest acknowledged packet number is newly acknowledged, and
        //#
        //# *  at least one of the newly acknowledged packets was ack-eliciting.
        if newest_pn == largest && any_eliciting {
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
            summary.rtt_sample = true;
        }

        // ECN: a CE increase is a congestion signal for the largest acknowledged
        // packet. Full ECN validation (RFC 9000 §13.4.2: counts that cover the newly
        // acknowledged packets, no bleaching or remarking) is not done yet; until it
        // is, the caller should only send ECT-marked packets on paths it trusts.
        //= https://www.rfc-editor.org/rfc/rfc9002#appendix-B.7
        //# if (ack.ce_counter > ecn_ce_counters[pn_space]):
        //#   ecn_ce_counters[pn_space] = ack.ce_counter
        //#   sent_time = sent_packets[ack.largest_acked].time_sent
        //#   OnCongestionEvent(sent_time)
        let sp = &mut self.spaces[space.index()];
        let mut ecn_signal = None;
        if let Some(ecn) = ecn {
            if ecn.ce > sp.ecn_ce {
                sp.ecn_ce = ecn.ce;
                ecn_signal = Some(newest_sent);
                summary.ecn_ce = true;
            }
        }

        //= https://www.rfc-editor.org/rfc/rfc9002#appendix-A.7
        //# lost_packets = DetectAndRemoveLostPackets(pn_space)
        //# if (!lost_packets.empty()):
        //#   OnPacketsLost(lost_packets)
        //# OnPacketsAcked(newly_acked_packets)
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
}
