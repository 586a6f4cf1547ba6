//! Frames from the peer: dispatch to streams, crypto, connection IDs and close
//! handling; ACK frames into loss detection; what happens to the contents of
//! packets acknowledged or lost.

use std::time::{Duration, Instant};

use super::Connection;
use super::scratch;
use super::sent::{Control, SentFrames};
use crate::cid::ConnectionId;
use crate::error::TransportError;
use crate::frame::{Ack, AckFrequency, Frame};
use crate::types::SpaceId;

/// Consecutive PTOs after which a larger-than-base MTU is suspected of black-holing.
const BLACK_HOLE_PTOS: u32 = 3;
/// Most PATH_RESPONSEs we owe at once; a newer challenge displaces the oldest.
pub(crate) const MAX_PATH_RESPONSES: usize = 4;

impl Connection {
    /// Process one frame from the peer. An error names the frame's type unless
    /// it already names one.
    pub(crate) fn on_frame(
        &mut self,
        now: Instant,
        space: SpaceId,
        dcid: &ConnectionId,
        frame: Frame<'_>,
    ) -> Result<(), TransportError> {
        // By reference, so the type is worked out on the error path only.
        self.dispatch_frame(now, space, dcid, &frame).map_err(|e| {
            //= https://www.rfc-editor.org/rfc/rfc9000#section-19.19
            //# Frame Type:  A variable-length integer encoding the type of frame
            //#    that triggered the error.
            if e.frame_type.is_some() {
                e
            } else {
                e.with_frame(frame.ty().0)
            }
        })
    }

    fn dispatch_frame(
        &mut self,
        now: Instant,
        space: SpaceId,
        dcid: &ConnectionId,
        frame: &Frame<'_>,
    ) -> Result<(), TransportError> {
        match frame {
            Frame::Ping if space == SpaceId::Initial => self.client_lacks_our_initial(),
            Frame::Padding { .. } | Frame::Ping => {}
            // An earlier frame of the packet may have ended its space (a
            // client's Finished before its ACK ends the server's Handshake
            // space): nothing of that space is in flight any more, and its
            // recovery state is gone.
            Frame::Ack(_) | Frame::Crypto(_)
                if space != SpaceId::Data && self.spaces[space.index()].discarded => {}
            Frame::Ack(ack) => {
                crate::cpu::measure(crate::cpu::Work::Ack, || self.on_ack_frame(now, space, ack))?
            }
            Frame::Crypto(c) => self.on_crypto_frame(now, space, c.offset, c.data)?,
            Frame::Stream(s) => self
                .streams
                .on_stream_frame(s.id, s.offset, s.data, s.fin)?,
            Frame::ResetStream(f) => self.streams.on_reset_stream(f)?,
            Frame::StopSending(f) => self.streams.on_stop_sending(f)?,
            Frame::MaxData(max) => self.streams.on_max_data(*max),
            Frame::MaxStreamData { id, max } => self.streams.on_max_stream_data(*id, *max)?,
            Frame::MaxStreams { dir, max } => self.streams.on_max_streams(*dir, *max),
            // Credit follows the application's reads; nothing to do.
            Frame::DataBlocked { .. } | Frame::StreamsBlocked { .. } => {}
            Frame::StreamDataBlocked { id, .. } => self.streams.on_stream_data_blocked(*id)?,
            Frame::NewToken { .. } => {
                //= https://www.rfc-editor.org/rfc/rfc9000#section-19.7
                //# A server MUST treat receipt of a NEW_TOKEN frame as a connection
                //# error of type PROTOCOL_VIOLATION.
                if self.side.is_server() {
                    return Err(TransportError::protocol_violation(
                        "NEW_TOKEN sent by a client",
                    ));
                }
            }
            Frame::NewConnectionId(f) => self.peer_cids.on_new(f, &mut self.cid_events)?,
            Frame::RetireConnectionId { seq } => {
                self.local_cids
                    .on_retire(*seq, dcid, &mut self.cid_events)?;
                self.top_up_cids();
            }
            Frame::PathChallenge(data) => {
                //= https://www.rfc-editor.org/rfc/rfc9000#section-8.2.2
                //# On receiving a PATH_CHALLENGE frame, an endpoint MUST respond by
                //# echoing the data contained in the PATH_CHALLENGE frame in a
                //# PATH_RESPONSE frame.
                if self.migration.off_path_rx {
                    // Answered where it came from, once the batch is done.
                    self.migration.rx_challenge = Some(*data);
                    return Ok(());
                }
                // A peer challenging faster than we send gets answers to its
                // latest few challenges, the ones it still waits for.
                if self.path_responses.len() >= MAX_PATH_RESPONSES {
                    self.path_responses.pop_front();
                }
                self.path_responses.push_back(*data);
            }
            Frame::PathResponse(data) => self.on_path_response(now, *data),
            Frame::Close(c) => self.on_peer_close(now, c),
            Frame::HandshakeDone => {
                //= https://www.rfc-editor.org/rfc/rfc9000#section-19.20
                //# A server MUST treat receipt of a HANDSHAKE_DONE frame as a
                //# connection error of type PROTOCOL_VIOLATION.
                if self.side.is_server() {
                    return Err(TransportError::protocol_violation(
                        "HANDSHAKE_DONE sent by a client",
                    ));
                }
                self.confirm_handshake(now);
            }
            Frame::Datagram { data } => self.on_datagram_frame(data)?,
            Frame::AckFrequency(f) => self.on_ack_frequency(f)?,
            Frame::ImmediateAck => self.spaces[space.index()].ack.immediate = true,
        }
        Ok(())
    }

    /// Testing only: the length of every queue the peer's frames can add to,
    /// as `(name, entries)`, to check that each stays bounded.
    #[cfg(feature = "testing")]
    #[doc(hidden)]
    pub fn queue_lengths(&self) -> Vec<(&'static str, usize)> {
        let mut out = vec![
            ("events", self.events.len()),
            ("cid_events", self.cid_events.len()),
            ("path_responses", self.path_responses.len()),
            ("retirements_owed", self.peer_cids.retirements_owed()),
            ("peer_cid_seen_runs", self.peer_cids.seen_runs()),
            ("datagrams_in", self.datagrams.incoming_len()),
        ];
        self.streams.queue_lengths(&mut out);
        out
    }

    /// Testing only: whether frames given to `inject_raw_frames` still wait to
    /// be sent.
    #[cfg(feature = "testing")]
    #[doc(hidden)]
    pub fn has_raw_frames(&self) -> bool {
        !self.raw_frames.is_empty()
    }

    fn on_ack_frame(
        &mut self,
        now: Instant,
        space: SpaceId,
        ack: &Ack<'_>,
    ) -> Result<(), TransportError> {
        self.stats.acks_in += 1;
        if space == SpaceId::Data && self.skipped.covered(ack.iter()) {
            return Err(TransportError::protocol_violation(
                "acknowledged a packet number never sent",
            ));
        }
        //= https://www.rfc-editor.org/rfc/rfc9002#section-5.3
        //# an endpoint ... MAY ignore the acknowledgment delay for Initial packets
        let delay = match space {
            SpaceId::Data => {
                let exponent = self
                    .peer_params
                    .as_ref()
                    .map_or(3, |p| p.ack_delay_exponent);
                Duration::from_micros(
                    ack.delay
                        .checked_shl(u32::from(exponent))
                        .unwrap_or(u64::MAX >> 1),
                )
            }
            _ => Duration::ZERO,
        };
        let path = self.path_state();
        let (mut acked, mut lost) = scratch::take_ack();
        let result = self.recovery.on_ack_received(
            now,
            space,
            ack.iter(),
            delay,
            ack.ecn,
            &path,
            &mut acked,
            &mut lost,
        );
        // By reference, then cleared: draining moved every record (then 208
        // bytes) once more (1.8 % of a bulk sender's perf samples at MTU 1 500).
        for (pn, pkt) in &acked {
            self.on_packet_acked(space, *pn, &pkt.data);
        }
        for (pn, pkt) in &lost {
            self.qlog_lost(now, space, *pn);
            self.on_packet_lost(space, *pn, &pkt.data);
        }
        scratch::put_ack(acked, lost);
        self.qlog_metrics(now);
        let summary = result?;
        if space == SpaceId::Data && summary.rtt_sample && self.config.shared_path_rtt {
            self.rtt_news = Some(now);
        }
        if space == SpaceId::Data {
            if let Some(keys) = self.one_rtt.as_mut() {
                keys.on_ack(ack.largest);
            }
        }
        Ok(())
    }

    fn on_packet_acked(&mut self, space: SpaceId, pn: u64, frames: &SentFrames) {
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
                if let Control::RetireConnectionId(seq) = ctl {
                    self.peer_cids.on_retire_acked(seq);
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
        for ctl in frames.controls() {
            match ctl {
                Control::NewConnectionId(seq) => self.local_cids.on_announcement_lost(seq),
                Control::RetireConnectionId(seq) => self.peer_cids.on_retire_lost(seq),
                Control::AckFrequency(seq) => self.ack_freq.on_lost(seq),
                _ => {}
            }
        }
        if frames.has_stream_or_control() {
            self.streams.on_lost(frames);
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
        if let crate::recovery::TimeoutAction::Probe { space, mut count } = action {
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
            let s = &mut self.spaces[space.index()];
            s.probes = count;
            if space == SpaceId::Data {
                self.requeue_oldest_data(count);
            }
            if space == SpaceId::Data && self.handshake_done_unacked {
                // The client holds back its own 1-RTT probes until it has
                // HANDSHAKE_DONE (RFC 9002 §6.2.1) and its Handshake probes
                // find our keys gone: a bare PING, with its ACK lost too,
                // left both sides waiting out backed-off PTOs.
                self.handshake_done_pending = true;
            }
            if space != SpaceId::Data {
                // Carry the handshake data again rather than a bare PING.
                let ranges: Vec<(u64, u32)> = self
                    .recovery
                    .in_flight(space)
                    .filter_map(|(_, p)| p.data.crypto())
                    .collect();
                if let Some(c) = self.spaces[space.index()].crypto.as_mut() {
                    for (offset, len) in ranges {
                        c.send.on_lost(offset, len as usize, false);
                    }
                }
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
    }

    /// A 1-RTT probe with no new data to carry takes the stream data and
    /// control frames of the oldest packets in flight again (RFC 9002
    /// §6.2.4), up to `count` packets' worth, rather than a bare PING: a
    /// response whose packets and the ACKs of the PINGs after it were lost
    /// otherwise waited a round trip more per probe (an aioquic client in
    /// the interop runner's handshakeloss case timed out so). The packets
    /// stay in flight; an ACK for either copy settles the data.
    fn requeue_oldest_data(&mut self, count: u8) {
        if self.streams.has_stream_data() {
            return; // new data makes as good a probe, and costs no resend
        }
        let mut taken = 0;
        for (_, p) in self.recovery.in_flight(SpaceId::Data) {
            if taken == count {
                break;
            }
            if p.data.has_stream_or_control() {
                self.streams.on_lost(&p.data);
                taken += 1;
            }
        }
    }

    fn on_ack_frequency(&mut self, f: &AckFrequency) -> Result<(), TransportError> {
        let Some(min_ack_delay) = self.local_params.min_ack_delay else {
            return Err(TransportError::protocol_violation(
                "ACK_FREQUENCY not negotiated",
            ));
        };
        if f.request_max_ack_delay < min_ack_delay {
            return Err(TransportError::protocol_violation(
                "requested ACK delay below min_ack_delay",
            ));
        }
        if self.ack_frequency_seq.is_some_and(|seen| f.seq <= seen) {
            return Ok(()); // stale or repeated
        }
        self.ack_frequency_seq = Some(f.seq);
        self.ack_policy.threshold = f.ack_eliciting_threshold.saturating_add(1);
        self.ack_policy.max_delay = Duration::from_micros(f.request_max_ack_delay);
        self.ack_policy.reordering_threshold = f.reordering_threshold;
        Ok(())
    }
}
