//! The sending side: recording sent packets (RFC 9002 A.5), the congestion window
//! and pacer gates, and application-limited periods (§7.8).

use super::Space;
use std::time::Instant;

use super::{DeliveryStamp, PathState, Recovery, SendFlags, SentPacket};
use crate::types::SpaceId;

impl<T> Recovery<T> {
    /// Record a sent packet (RFC 9002 A.5), unmarked and not a PMTU probe. Packet
    /// numbers per space increase.
    #[allow(clippy::too_many_arguments)]
    pub fn on_packet_sent(
        &mut self,
        now: Instant,
        space: SpaceId,
        pn: u64,
        size: u16,
        ack_eliciting: bool,
        in_flight: bool,
        data: T,
        path: &PathState,
    ) {
        let flags = SendFlags {
            ack_eliciting,
            in_flight,
            ..SendFlags::default()
        };
        self.on_packet_sent_with(now, space, pn, size, flags, data, path);
    }

    /// Record a sent packet (RFC 9002 A.5) with its ECN codepoint and whether it is
    /// a PMTU probe. Packet numbers per space increase.
    #[allow(clippy::too_many_arguments)]
    pub fn on_packet_sent_with(
        &mut self,
        now: Instant,
        space: SpaceId,
        pn: u64,
        size: u16,
        flags: SendFlags,
        data: T,
        path: &PathState,
    ) {
        let prior_in_flight = self.bytes_in_flight();
        let packet = SentPacket {
            time_sent: now,
            size,
            ack_eliciting: flags.ack_eliciting,
            in_flight: flags.in_flight,
            ecn: flags.ecn,
            mtu_probe: flags.mtu_probe,
            delivery: self.delivery.as_mut().map_or(DeliveryStamp::NONE, |d| {
                d.on_sent(now, prior_in_flight == 0)
            }),
            data,
        };
        let sp = self.spaces.get_mut(space.index(), Space::new);
        let recorded = sp.sent.push(pn, packet);
        debug_assert!(recorded, "packet numbers must increase");
        if !recorded {
            return;
        }
        if flags.ecn.is_some() {
            let pto = self.pto_base(space, path);
            self.ecn.on_sent(now, space.index(), flags.ecn, pto);
        }
        if !flags.in_flight {
            return;
        }
        //= https://www.rfc-editor.org/rfc/rfc9002#appendix-A.5
        //# if (in_flight):
        //#   if (ack_eliciting):
        //#     time_of_last_ack_eliciting_packet[pn_space] = now()
        //#   OnPacketSentCC(sent_bytes)
        //#   SetLossDetectionTimer()
        if flags.ack_eliciting {
            self.spaces
                .get_mut(space.index(), Space::new)
                .time_of_last_ack_eliciting = Some(now);
        }
        self.cc
            .on_packet_sent(now, u64::from(size), prior_in_flight);
        self.note_window();
        if self.pacing {
            self.pacer.on_sent(now, u64::from(size));
        }
        // A send that fills the window ends an app-limited period (§7.8).
        if self.bytes_in_flight() >= self.window() {
            self.app_limited = false;
        }
        self.rearm_after_send(now, space, flags.ack_eliciting, path);
    }

    /// SetLossDetectionTimer() after a send (A.5). In bulk every packet is an
    /// ack-eliciting Data packet with no loss time pending and nothing in flight
    /// in the other spaces; then A.8 comes down to the PTO of this send and the
    /// walk over the spaces (~130 instructions a packet) is skipped. The result
    /// is the same as `set_timer`'s (test `timer_after_sends_equals_eager`).
    fn rearm_after_send(
        &mut self,
        now: Instant,
        space: SpaceId,
        ack_eliciting: bool,
        path: &PathState,
    ) {
        if self.timer_data_only
            && ack_eliciting
            && space == SpaceId::Data
            && self.pto_count == 0
            && path.handshake_confirmed
            && !path.amplification_blocked
        {
            //= https://www.rfc-editor.org/rfc/rfc9002#appendix-A.8
            //# duration += max_ack_delay * (2 ^ pto_count)
            // pto_count is 0: no backoff; the path's offered base counts as
            // in `pto_time_and_space`.
            let duration = self
                .rtt
                .pto_base()
                .max(self.path_pto)
                .saturating_add(path.max_ack_delay);
            self.timer = now.checked_add(duration);
            return;
        }
        self.set_timer(now, path);
        self.timer_data_only = self.spaces.iter().all(|s| s.loss_time.is_none())
            && [SpaceId::Initial, SpaceId::Handshake].into_iter().all(|s| {
                self.spaces
                    .get(s.index())
                    .is_none_or(|sp| sp.sent.ack_eliciting_in_flight() == 0)
            });
    }

    /// The datagram size changed (path MTU discovery): windows and pacing follow.
    pub fn set_max_datagram_size(&mut self, mtu: u64) {
        self.cc.set_max_datagram_size(mtu);
        self.note_window();
        self.pacer.set_mtu(mtu);
    }

    /// Bytes the congestion controller allows to be sent now (window minus in flight).
    pub fn send_allowance(&self) -> u64 {
        self.window().saturating_sub(self.bytes_in_flight())
    }

    /// When the pacer allows the next packet of `bytes` (None: now). The rate is the
    /// controller's own when it has one (BBR), else 5/4 × cwnd / smoothed RTT
    /// (2 × in slow start).
    pub fn pacing_delay(&mut self, now: Instant, bytes: u64) -> Option<Instant> {
        if !self.pacing {
            return None;
        }
        let cwnd = self.window();
        match self.cc.pacing_rate() {
            Some(rate) => self.pacer.delay_at_rate(now, bytes, rate, cwnd),
            None => {
                let slow_start = cwnd < self.cc.ssthresh();
                self.pacer
                    .delay(now, bytes, cwnd, self.rtt.smoothed(), slow_start)
            }
        }
    }

    /// The application had nothing more to send while the window was open (RFC 9002
    /// §7.8): the window must not grow on the ACKs of what was sent, and delivery
    /// rate samples until then measure the application, not the path.
    pub fn on_app_limited(&mut self) {
        //= https://www.rfc-editor.org/rfc/rfc9002#section-7.8
        //# When bytes in flight is smaller than the congestion window and
        //# sending is not pacing limited, the congestion window is
        //# underutilized.
        let in_flight = self.bytes_in_flight();
        if in_flight < self.window() {
            self.app_limited = true;
            if let Some(d) = self.delivery.as_mut() {
                d.on_app_limited(in_flight);
            }
        }
    }

    /// The application had more to send, but the transport refused its writes
    /// (the peer's flow-control credit, the send budget) while the window was
    /// open. The window must not grow (RFC 9002 §7.8 counts flow control
    /// too), but the delivery-rate samples stay valid: as Linux does for a
    /// full receive window or send buffer. Marking them app-limited hid every
    /// round of a lossy Startup overshoot, whose holes pin the peer's window
    /// and our buffers, from BBR's full-pipe check, and Startup went on
    /// overfilling the queue, often to the end of a download.
    pub fn on_transport_limited(&mut self) {
        if self.bytes_in_flight() < self.window() {
            self.app_limited = true;
        }
    }
}
