//! The loss-detection timer (RFC 9002 §6.2, A.8, A.9): time-threshold losses first,
//! then the probe timeout with its per-space and handshake rules.

use std::time::Instant;

use super::{PathState, Recovery, SentPacket, TimeoutAction};
use crate::types::SpaceId;

/// The PTO backoff stops doubling after this many consecutive timeouts (the idle
/// timeout ends the connection long before; this only keeps the arithmetic finite).
const MAX_BACKOFF_EXPONENT: u32 = 16;

impl<T> Recovery<T> {
    fn any_ack_eliciting_in_flight(&self) -> bool {
        self.spaces
            .iter()
            .any(|s| s.sent.ack_eliciting_in_flight() > 0)
    }

    /// A.8 GetLossTimeAndSpace: the earliest time-threshold deadline.
    fn earliest_loss_time(&self) -> Option<(Instant, SpaceId)> {
        SpaceId::ALL
            .into_iter()
            .filter_map(|s| self.spaces.get(s.index())?.loss_time.map(|t| (t, s)))
            .min_by_key(|&(t, _)| t)
    }

    /// A.8 GetPtoTimeAndSpace. `None` stands for the RFC's "infinite".
    /// `eliciting_in_flight`: [`Self::any_ack_eliciting_in_flight`].
    fn pto_time_and_space(
        &self,
        now: Instant,
        path: &PathState,
        eliciting_in_flight: bool,
    ) -> Option<(Instant, SpaceId)> {
        //= https://www.rfc-editor.org/rfc/rfc9002#section-6.2.1
        //# When a PTO timer expires, the PTO backoff MUST be increased,
        //# resulting in the PTO period being set to twice its current value.
        let backoff = 1u32 << self.pto_count.min(MAX_BACKOFF_EXPONENT);
        let mut duration = self.rtt.pto_base();
        let mut max_ack_delay = path.max_ack_delay;
        if backoff > 1 {
            duration = duration.saturating_mul(backoff);
            max_ack_delay = max_ack_delay.saturating_mul(backoff);
        }
        //= https://www.rfc-editor.org/rfc/rfc9002#appendix-A.8
        //# // Anti-deadlock PTO starts from the current time
        //# if (no ack-eliciting packets in flight):
        //#   assert(!PeerCompletedAddressValidation())
        //#   if (has handshake keys):
        //#     return (now() + duration), Handshake
        //#   else:
        //#     return (now() + duration), Initial
        if !eliciting_in_flight {
            let space = anti_deadlock_space(path);
            return now.checked_add(duration).map(|t| (t, space));
        }
        let mut best: Option<(Instant, SpaceId)> = None;
        for space in SpaceId::ALL {
            let Some(sp) = self.spaces.get(space.index()) else {
                continue;
            };
            if sp.sent.ack_eliciting_in_flight() == 0 {
                continue;
            }
            if space == SpaceId::Data {
                //= https://www.rfc-editor.org/rfc/rfc9002#section-6.2.1
                //# An endpoint MUST NOT set its PTO timer for the Application Data
                //# packet number space until the handshake is confirmed.
                if !path.handshake_confirmed {
                    break;
                }
                //= https://www.rfc-editor.org/rfc/rfc9002#appendix-A.8
                //# // Include max_ack_delay and backoff for Application Data.
                //# duration += max_ack_delay * (2 ^ pto_count)
                // At least what the path's other connections measure
                // (`Recovery::offer_path_pto`), with the same backoff.
                if !self.path_pto.is_zero() {
                    duration = duration.max(self.path_pto.saturating_mul(backoff));
                }
                duration = duration.saturating_add(max_ack_delay);
            }
            let Some(t) = sp
                .time_of_last_ack_eliciting
                .and_then(|last| last.checked_add(duration))
            else {
                continue;
            };
            //= https://www.rfc-editor.org/rfc/rfc9002#section-6.2.1
            //# When ack-eliciting packets in multiple packet number spaces are in
            //# flight, the timer MUST be set to the earlier value of the Initial
            //# and Handshake packet number spaces.
            if best.is_none_or(|(b, _)| t < b) {
                best = Some((t, space));
            }
        }
        best
    }

    /// A.8 SetLossDetectionTimer.
    pub(super) fn set_timer(&mut self, now: Instant, path: &PathState) {
        //= https://www.rfc-editor.org/rfc/rfc9002#appendix-A.8
        //# earliest_loss_time, _ = GetLossTimeAndSpace()
        //# if (earliest_loss_time != 0):
        //#   // Time threshold loss detection.
        //#   loss_detection_timer.update(earliest_loss_time)
        //#   return
        if let Some((t, _)) = self.earliest_loss_time() {
            self.timer = Some(t);
            return;
        }
        let eliciting_in_flight = self.any_ack_eliciting_in_flight();
        if pto_disarmed(path, eliciting_in_flight) {
            self.timer = None;
            return;
        }
        self.timer = self
            .pto_time_and_space(now, path, eliciting_in_flight)
            .map(|(t, _)| t);
    }

    /// The loss-detection timer fired (A.9). Lost packets are appended to `lost`.
    pub fn on_timeout(
        &mut self,
        now: Instant,
        path: &PathState,
        lost: &mut Vec<(u64, SentPacket<T>)>,
    ) -> TimeoutAction {
        if self.timer.is_none_or(|t| t > now) {
            return TimeoutAction::None;
        }
        //= https://www.rfc-editor.org/rfc/rfc9002#appendix-A.9
        //# earliest_loss_time, pn_space = GetLossTimeAndSpace()
        //# if (earliest_loss_time != 0):
        //#   // Time threshold loss Detection
        //#   lost_packets = DetectAndRemoveLostPackets(pn_space)
        //#   assert(!lost_packets.empty())
        //#   OnPacketsLost(lost_packets)
        //#   SetLossDetectionTimer()
        //#   return
        if let Some((_, space)) = self.earliest_loss_time() {
            self.detect_and_react(now, space, path, None, lost);
            self.set_timer(now, path);
            return TimeoutAction::Lost;
        }
        // The path may have changed since the timer was armed.
        let eliciting_in_flight = self.any_ack_eliciting_in_flight();
        if pto_disarmed(path, eliciting_in_flight) {
            self.timer = None;
            return TimeoutAction::None;
        }
        let action = if !eliciting_in_flight {
            //= https://www.rfc-editor.org/rfc/rfc9002#section-6.2.2.1
            //# When the PTO fires, the client MUST send a Handshake packet if it
            //# has Handshake keys, otherwise it MUST send an Initial packet in a
            //# UDP datagram with a payload of at least 1200 bytes.
            TimeoutAction::Probe {
                space: anti_deadlock_space(path),
                count: 1,
            }
        } else {
            let Some((_, space)) = self.pto_time_and_space(now, path, true) else {
                self.timer = None;
                return TimeoutAction::None;
            };
            //= https://www.rfc-editor.org/rfc/rfc9002#section-6.2.4
            //# An endpoint MAY send up to two full-sized datagrams containing
            //# ack-eliciting packets to avoid an expensive consecutive PTO
            //# expiration due to a single lost datagram or to transmit data from
            //# multiple packet number spaces.
            TimeoutAction::Probe { space, count: 2 }
        };
        //= https://www.rfc-editor.org/rfc/rfc9002#appendix-A.9
        //# pto_count++
        //# SetLossDetectionTimer()
        self.pto_count = self.pto_count.saturating_add(1);
        self.stats.ptos += 1;
        self.set_timer(now, path);
        action
    }
}

/// Where the client's anti-deadlock probe goes.
fn anti_deadlock_space(path: &PathState) -> SpaceId {
    if path.has_handshake_keys {
        SpaceId::Handshake
    } else {
        SpaceId::Initial
    }
}

/// The PTO conditions under which no timer is set.
fn pto_disarmed(path: &PathState, eliciting_in_flight: bool) -> bool {
    //= https://www.rfc-editor.org/rfc/rfc9002#appendix-A.8
    //# if (server is at anti-amplification limit):
    //#   // The server's timer is not set if nothing can be sent.
    //#   loss_detection_timer.cancel()
    //#   return
    //#
    //# if (no ack-eliciting packets in flight &&
    //#     PeerCompletedAddressValidation()):
    //#   // There is nothing to detect lost, so no timer is set.
    //#   // However, the client needs to arm the timer if the
    //#   // server might be blocked by the anti-amplification limit.
    //#   loss_detection_timer.cancel()
    //#   return
    path.amplification_blocked || (!eliciting_in_flight && path.peer_completed_address_validation)
}
