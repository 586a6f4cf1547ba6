//! What happens to the contents of packets acknowledged or declared lost,
//! and the loss-detection timer: which probes a PTO sends and what they carry
//! (RFC 9002 §6.2.4). Loss detection itself is in `crate::recovery`.

use std::time::Instant;

use super::Connection;
use super::ack_frequency::AckFrequencyState;
use super::cids::{LocalCids, PeerCids};
use super::new_token::{NewTokenState, on_new_token_lost};
use super::scratch;
use super::sent::{Control, SentFrames};
use super::streams::Streams;
use crate::types::SpaceId;

/// Consecutive PTOs after which a larger-than-base MTU is suspected of black-holing.
const BLACK_HOLE_PTOS: u32 = 3;

impl Connection {
    pub(super) fn on_packet_acked(&mut self, space: SpaceId, pn: u64, frames: &SentFrames) {
        if frames.handshake_done {
            self.handshake_done_unacked = false;
        }
        if frames.mtu_probe {
            if self.mtu.on_probe_acked(pn) {
                self.apply_mtu();
                tracing::debug!(mtu = self.path.mtu, "path MTU raised");
            }
        } else if space == SpaceId::Data {
            self.mtu.on_acked(pn);
        }
        let s = &mut self.spaces[space.index()];
        if let Some(largest) = frames.ack_largest() {
            s.ack.on_ack_acked(largest);
        }
        if let (Some((offset, len)), Some(c)) = (frames.crypto(), s.crypto.as_mut()) {
            c.send.on_ack(offset, len as usize, false);
            if space == SpaceId::Data && self.handshake_confirmed {
                self.shed_handshake_leftovers();
            }
        }
        if frames.has_stream_or_control() {
            for ctl in frames.controls() {
                match ctl {
                    Control::RetireConnectionId(seq) => self.peer_cids.on_retire_acked(seq),
                    Control::NewToken(seq) => self.on_new_token_acked(seq),
                    _ => {}
                }
            }
            self.streams.on_acked(frames);
        }
    }

    pub(crate) fn on_packet_lost(&mut self, space: SpaceId, pn: u64, frames: &SentFrames) {
        if frames.mtu_probe {
            self.mtu.on_probe_failed(pn);
        }
        if let (Some((offset, len)), Some(c)) =
            (frames.crypto(), self.spaces[space.index()].crypto.as_mut())
        {
            c.send.on_lost(offset, len as usize, false);
        }
        if frames.handshake_done {
            self.handshake_done_pending = true;
        }
        //= https://www.rfc-editor.org/rfc/rfc9221#section-5.2
        //# DATAGRAM frames MUST NOT be retransmitted
        if frames.datagrams > 0 {
            self.rare_stats().datagram_frames_lost += u64::from(frames.datagrams);
        }
        if frames.has_stream_or_control() {
            requeue(
                frames,
                &mut self.streams,
                &mut self.local_cids,
                &mut self.peer_cids,
                &mut self.ack_freq,
                (&mut self.new_token, self.migration.tokens_renewed),
            );
        }
    }

    /// The loss-detection timer fired.
    pub(crate) fn on_loss_timer(&mut self, now: Instant) {
        let path = self.path_state();
        let (acked, mut lost) = scratch::take_ack();
        let action = self.recovery.on_timeout(now, &path, &mut lost);
        for (pn, pkt) in lost.drain(..) {
            self.qlog_lost(now, pkt.data.space, pn);
            self.on_packet_lost(pkt.data.space, pn, &pkt.data);
        }
        scratch::put_ack(acked, lost);
        self.qlog_metrics(now);
        if self.recovery.pto_count() >= BLACK_HOLE_PTOS && self.mtu.on_black_hole() {
            // Full-size packets keep vanishing: maybe the path MTU shrank.
            self.apply_mtu();
            tracing::debug!(mtu = self.path.mtu, "suspected PMTU black hole");
        }
        if let crate::recovery::TimeoutAction::Probe { space, count } = action {
            self.arm_probes(space, count);
        }
    }

    /// A PTO fired for `space`: `count` probes go out there, carrying what
    /// is most likely lost (RFC 9002 §6.2.4), and earlier spaces' lost
    /// CRYPTO data goes along.
    fn arm_probes(&mut self, space: SpaceId, mut count: u8) {
        self.mtu.on_pto();
        if space == SpaceId::Data {
            //= https://www.rfc-editor.org/rfc/rfc9002#section-6.2.4
            //# An endpoint MAY send up to two full-sized datagrams containing
            //# ack-eliciting packets
            // Two stay for the handshake spaces, where a lost probe stalls
            // the handshake. For application data most PTOs are a busy
            // peer's queueing (5 000 connections bursting at once fired
            // 5-7 each, issue #33), and each probe costs that peer a
            // packet and an ACK; a lost single probe costs one more PTO.
            count = count.min(self.config.data_pto_probes.max(1));
        }
        self.spaces[space.index()].probes = count;
        if space == SpaceId::Data {
            self.probe_data();
        } else {
            self.probe_handshake(space);
        }
        // The probes carry CRYPTO data of earlier spaces declared lost too:
        // that data is no longer in flight, so no PTO of its own space
        // fires for it, and with the window full only probes go out. A
        // server whose ServerHello was lost sent Handshake probes the
        // client could not decrypt, for ever (RFC 9002 §6.2.4: probes
        // carry the data most likely lost).
        for earlier in [SpaceId::Initial, SpaceId::Handshake] {
            if earlier >= space {
                break;
            }
            // Read first: a mutable index would bring a dropped space back.
            let e = &self.spaces[earlier.index()];
            if e.keys.is_some() && !e.discarded && e.crypto_pending() {
                let e = &mut self.spaces[earlier.index()];
                e.probes = e.probes.max(1);
            }
        }
    }

    /// A 1-RTT PTO: the tail goes again, and a HANDSHAKE_DONE not yet
    /// acknowledged.
    fn probe_data(&mut self) {
        self.resend_tail_on_pto();
        if self.handshake_done_unacked {
            // The client holds back its own 1-RTT probes until it has
            // HANDSHAKE_DONE (RFC 9002 §6.2.1) and its Handshake probes
            // find our keys gone: a bare PING, with its ACK lost too,
            // left both sides waiting out backed-off PTOs.
            self.handshake_done_pending = true;
        }
    }

    /// An Initial or Handshake PTO: the space's handshake data goes again
    /// rather than a bare PING, with what other spaces have in flight.
    fn probe_handshake(&mut self, space: SpaceId) {
        if !self.received_any {
            // Nothing heard yet: a server whose configuration stopped greasing
            // since its token drops Initials with the QUIC bit cleared, so
            // the probes set it (RFC 9287 §3.1 leaves it to the client).
            self.bits.stop_grease();
        }
        self.requeue_crypto_in_flight(space);
        //= https://www.rfc-editor.org/rfc/rfc9002#section-6.2.4
        //# the sender SHOULD send ack-eliciting packets from other packet
        //# number spaces with in-flight data, coalescing packets if possible.
        let h = &self.spaces[SpaceId::Handshake.index()];
        if space == SpaceId::Initial && h.keys.is_some() && !h.discarded && h.crypto_unacked() {
            // A server whose Initial PTO resent only the ServerHello
            // spent its 3x budget on copies of it while the Handshake
            // flight (the client's next need) stayed lost: 15 s more
            // at 30 % loss, waiting for the client's backed-off
            // probes to lift the limit.
            self.requeue_crypto_in_flight(SpaceId::Handshake);
            let h = &mut self.spaces[SpaceId::Handshake.index()];
            h.probes = h.probes.max(1);
        }
        if space == SpaceId::Handshake
            && !self.handshake_confirmed
            && !self.streams.has_stream_data()
        {
            // A client's 1-RTT packets sent beside its Finished (a
            // request) have no PTO of their own before the handshake
            // is confirmed (RFC 9002 §6.2.1).
            self.requeue_data_in_flight();
        }
    }

    /// The CRYPTO data of `space`'s packets in flight goes again.
    fn requeue_crypto_in_flight(&mut self, space: SpaceId) {
        if let Some(c) = self.spaces[space.index()].crypto.as_mut() {
            for (offset, len) in self
                .recovery
                .in_flight(space)
                .filter_map(|(_, p)| p.data.crypto())
            {
                c.send.on_lost(offset, len as usize, false);
            }
        }
    }

    /// A 1-RTT PTO with no new data to send queues the stream data and
    /// control frames of every packet in flight to go again (RFC 9002
    /// §6.2.4), rather than a bare PING: each probe carries the oldest of it,
    /// the next PTO's probe the next, and once an ACK gets through the rest
    /// follows at once. Lost data otherwise goes again only once an ACK
    /// reveals the loss; with the ACKs of the PINGs lost too, it never did
    /// (an aioquic client in the interop runner's handshakeloss case timed
    /// out so). The packets stay in flight; an ACK for either copy settles
    /// the data, and data acknowledged before it is sent again leaves the
    /// queue. Everything in flight was sent at least a PTO ago, so most of
    /// it is lost or its ACK is.
    fn resend_tail_on_pto(&mut self) {
        if self.streams.has_stream_data() {
            return; // new data makes as good a probe, and costs no resend
        }
        // On a connection that has neither lost a packet nor had a PTO
        // before, a first PTO is most often a late ACK (a busy peer's queue:
        // 40 connections bursting at once in `quark`'s `driver::storm_sim`
        // fired twice the server probes, and waited longer, when each
        // resent data): it stays a PING. A second PTO in a row, or any PTO
        // once the connection has known trouble, resends.
        let (r, run) = (self.recovery.stats(), self.recovery.pto_count());
        let troubled = r.lost_packets > r.spurious_losses || r.ptos > u64::from(run);
        if run < 2 && !troubled {
            return;
        }
        self.requeue_data_in_flight();
    }

    /// The stream data and control frames of every 1-RTT packet in flight
    /// go again.
    fn requeue_data_in_flight(&mut self) {
        for (_, p) in self.recovery.in_flight(SpaceId::Data) {
            if p.data.has_stream_or_control() {
                requeue(
                    &p.data,
                    &mut self.streams,
                    &mut self.local_cids,
                    &mut self.peer_cids,
                    &mut self.ack_freq,
                    (&mut self.new_token, self.migration.tokens_renewed),
                );
            }
        }
    }
}

/// Queue the stream data and control frames `frames` carried to go again
/// (CRYPTO, HANDSHAKE_DONE and MTU probes are the callers'). It takes the
/// fields it needs, not the connection, so that a caller can walk the
/// sent-packet record while it requeues.
fn requeue(
    frames: &SentFrames,
    streams: &mut Streams,
    local_cids: &mut LocalCids,
    peer_cids: &mut PeerCids,
    ack_freq: &mut AckFrequencyState,
    new_token: (&mut NewTokenState, u8),
) {
    for ctl in frames.controls() {
        match ctl {
            Control::NewConnectionId(seq) => local_cids.on_announcement_lost(seq),
            Control::RetireConnectionId(seq) => peer_cids.on_retire_lost(seq),
            Control::AckFrequency(seq) => ack_freq.on_lost(seq),
            Control::NewToken(seq) => on_new_token_lost(new_token.0, new_token.1, seq),
            _ => {}
        }
    }
    streams.on_lost(frames);
}
