//! A datagram in: split coalesced packets, remove protection, drop duplicates,
//! dispatch frames, and record what to acknowledge.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use super::Connection;
use super::close::{ConnectionError, State};
use super::sent::{Control, SentFrames};
use crate::cid::{ConnectionId, RESET_TOKEN_LEN};
use crate::crypto::one_rtt::OneRttError;
use crate::error::TransportError;
use crate::frame::{self, Ack, AckFrequency, Frame};
use crate::packet::{self, HeaderType, PartialDecode, Unprotected};
use crate::types::{EcnCodepoint, PacketKind, SpaceId};

/// Most PATH_RESPONSEs we queue; further challenges wait for the next packet.
const MAX_PATH_RESPONSES: usize = 4;

impl Connection {
    /// Process one UDP datagram from the peer. `data` is decrypted in place.
    pub fn handle_datagram(
        &mut self,
        now: Instant,
        remote: SocketAddr,
        ecn: Option<EcnCodepoint>,
        data: &mut [u8],
    ) {
        if matches!(self.state, State::Drained { .. } | State::Draining { .. }) {
            return;
        }
        if remote != self.path.remote {
            // quark advertises disable_active_migration and does not migrate.
            tracing::trace!(%remote, "datagram from an unknown address dropped");
            return;
        }
        self.stats.datagrams_in += 1;
        self.stats.bytes_in += data.len() as u64;
        let was_blocked = self.path.amplification_budget() == 0;
        self.path.bytes_received += data.len() as u64;
        if was_blocked {
            // The server may send again: the PTO must be re-armed (RFC 9002 §6.2.2.1).
            let path = self.path_state();
            self.recovery.update_timer(now, &path);
        }
        let tail = reset_tail(data);
        let mut offset = 0;
        let mut first_dcid = None;
        while offset < data.len() {
            let Ok(pd) = PartialDecode::new(&data[offset..], self.cid_len) else {
                break;
            };
            let end = offset + pd.len;
            //= https://www.rfc-editor.org/rfc/rfc9000#section-12.2
            //# Senders MUST NOT coalesce QUIC packets with different connection IDs
            //# into a single UDP datagram.  Receivers SHOULD ignore any subsequent
            //# packets with a different Destination Connection ID than the first
            //# packet in the datagram.
            if *first_dcid.get_or_insert(pd.dst_cid) == pd.dst_cid {
                self.handle_packet(now, ecn, &mut data[offset..end], &pd, tail);
            }
            offset = end;
            if !matches!(self.state, State::Handshake | State::Established) {
                break;
            }
        }
        if matches!(self.state, State::Closing { .. }) {
            self.on_packet_while_closing();
        }
    }

    fn handle_packet(
        &mut self,
        now: Instant,
        ecn: Option<EcnCodepoint>,
        packet: &mut [u8],
        pd: &PartialDecode,
        tail: Option<[u8; RESET_TOKEN_LEN]>,
    ) {
        match pd.ty {
            HeaderType::VersionNegotiation => self.on_version_negotiation(packet, pd),
            HeaderType::Retry => self.on_retry(now, packet, pd),
            HeaderType::Frames(kind) => self.on_protected(now, ecn, kind, packet, pd, tail),
        }
    }

    fn on_version_negotiation(&mut self, packet: &[u8], pd: &PartialDecode) {
        if self.side.is_server() || self.received_any {
            return;
        }
        let Ok(versions) = packet::version_negotiation_versions(packet, pd) else {
            return;
        };
        //= https://www.rfc-editor.org/rfc/rfc9000#section-6.2
        //# A client MUST discard a Version Negotiation packet that lists the QUIC
        //# version selected by the client.
        if versions.contains(&self.version) || pd.src_cid != self.orig_dst_cid {
            return;
        }
        self.enter_drained(ConnectionError::VersionMismatch);
    }

    fn on_retry(&mut self, now: Instant, packet: &[u8], pd: &PartialDecode) {
        //= https://www.rfc-editor.org/rfc/rfc9000#section-17.2.5.2
        //# A client MUST accept and process at most one Retry packet for each
        //# connection attempt.  After the client has received and processed an
        //# Initial or Retry packet from the server, it MUST discard any
        //# subsequent Retry packets that it receives.
        if self.side.is_server() || self.received_retry || self.got_server_initial {
            return;
        }
        let token = &packet[pd.token.clone()];
        //# A client MUST discard a Retry packet with a zero-length Retry Token field.
        //# Clients MUST discard Retry packets that have a Retry Integrity Tag
        //# that cannot be validated.
        if token.is_empty() || !packet::retry_integrity_ok(&self.orig_dst_cid, packet) {
            return;
        }
        self.received_retry = true;
        self.retry_src_cid = Some(pd.src_cid);
        self.token = token.to_vec();
        self.peer_cids.set_initial(pd.src_cid);
        // New Initial keys from the server's chosen ID; resend everything sent so far
        // in Initials (packet numbers keep increasing, RFC 9000 §17.2.5.3).
        self.spaces[SpaceId::Initial.index()].keys =
            Some(crate::crypto::initial_keys(&pd.src_cid, self.side));
        let path = self.path_state();
        let mut dropped = std::mem::take(&mut self.lost_scratch);
        self.recovery
            .discard_space(SpaceId::Initial, now, &path, &mut dropped);
        for (pn, pkt) in dropped.drain(..) {
            self.on_packet_lost(SpaceId::Initial, pn, &pkt.data);
        }
        self.lost_scratch = dropped;
    }

    fn on_protected(
        &mut self,
        now: Instant,
        ecn: Option<EcnCodepoint>,
        kind: PacketKind,
        packet: &mut [u8],
        pd: &PartialDecode,
        tail: Option<[u8; RESET_TOKEN_LEN]>,
    ) {
        let space = kind.space();
        let Some((hdr, payload)) = self.unprotect(now, kind, packet, pd) else {
            self.stats.packets_dropped += 1;
            //= https://www.rfc-editor.org/rfc/rfc9000#section-10.3.1
            //# An endpoint detects a potential Stateless Reset using the trailing 16
            //# bytes of the UDP datagram.
            if !pd.is_long() && tail.is_some_and(|t| self.peer_cids.is_reset(&t)) {
                self.enter_drained(ConnectionError::Reset);
            }
            return;
        };
        if !hdr.reserved_bits_zero {
            //= https://www.rfc-editor.org/rfc/rfc9000#section-17.2
            //# An endpoint MUST treat receipt of a packet that has a non-zero value for
            //# these bits after removing both packet and header protection as a
            //# connection error of type PROTOCOL_VIOLATION.
            self.close_on_error(now, TransportError::protocol_violation("reserved bits set"));
            return;
        }
        if self.spaces[space.index()].ack.is_duplicate(hdr.pn) {
            self.stats.packets_dropped += 1;
            return;
        }
        self.received_any = true;
        self.sent_eliciting_since_recv = false;
        self.stats.packets_in += 1;
        if self.side.is_client() && kind == PacketKind::Initial && !self.got_server_initial {
            self.got_server_initial = true;
            self.peer_cids.set_initial(pd.src_cid);
        }
        if self.side.is_server() && kind == PacketKind::Handshake {
            //= https://www.rfc-editor.org/rfc/rfc9000#section-8.1
            //# In particular, receipt of a packet protected with Handshake keys
            //# confirms that the peer successfully processed an Initial packet.
            if !self.path.validated {
                self.path.validated = true;
                let path = self.path_state();
                self.recovery.update_timer(now, &path);
            }
            //= https://www.rfc-editor.org/rfc/rfc9001#section-4.9.1
            //# a server MUST discard Initial keys when it first successfully processes
            //# a Handshake packet.
            self.discard_space(now, SpaceId::Initial);
        }
        if matches!(self.state, State::Closing { .. }) {
            return;
        }
        let payload = &packet[payload];
        if payload.is_empty() {
            //= https://www.rfc-editor.org/rfc/rfc9000#section-12.4
            //# An endpoint MUST treat receipt of a packet containing no frames as a
            //# connection error of type PROTOCOL_VIOLATION.
            self.close_on_error(
                now,
                TransportError::protocol_violation("packet without frames"),
            );
            return;
        }
        let mut ack_eliciting = false;
        for frame in frame::Iter::new(payload, kind) {
            let result = frame.map_err(TransportError::from).and_then(|f| {
                ack_eliciting |= f.is_ack_eliciting();
                self.on_frame(now, space, &pd.dst_cid, f)
            });
            if let Err(e) = result {
                self.close_on_error(now, e);
                return;
            }
            if self.is_closed() {
                return;
            }
        }
        let policy = self.ack_policy;
        self.spaces[space.index()]
            .ack
            .on_packet(space, hdr.pn, ack_eliciting, ecn, now, &policy);
        self.reset_idle_timer(now);
    }

    /// Remove header and packet protection; `None` if the packet must be dropped.
    fn unprotect(
        &mut self,
        now: Instant,
        kind: PacketKind,
        packet: &mut [u8],
        pd: &PartialDecode,
    ) -> Option<(Unprotected, std::ops::Range<usize>)> {
        let space = kind.space();
        let largest = self.spaces[space.index()].ack.largest_pn();
        match kind {
            // quark neither sends nor accepts 0-RTT.
            PacketKind::ZeroRtt => None,
            PacketKind::Initial | PacketKind::Handshake => {
                let keys = self.spaces[space.index()].keys.as_ref()?;
                let hdr = packet::remove_header_protection(
                    packet,
                    pd,
                    keys.remote.header.as_ref(),
                    largest,
                )
                .ok()?;
                let range =
                    packet::decrypt_payload(packet, &hdr, keys.remote.packet.as_ref()).ok()?;
                Some((hdr, range))
            }
            PacketKind::OneRtt => {
                //= https://www.rfc-editor.org/rfc/rfc9001#section-5.7
                //# a server MUST NOT process incoming 1-RTT protected packets before the
                //# TLS handshake is complete.
                if self.side.is_server() && !self.handshake_complete {
                    return None;
                }
                let keys = self.one_rtt.as_mut()?;
                let hdr =
                    packet::remove_header_protection(packet, pd, keys.remote_header(), largest)
                        .ok()?;
                let updates = keys.updates();
                let (header, body) = packet.split_at_mut(hdr.header_len);
                let body_len = pd.len - hdr.header_len;
                match keys.decrypt(hdr.pn, hdr.key_phase, header, &mut body[..body_len]) {
                    Ok(n) => {
                        if keys.updates() != updates {
                            self.schedule_key_discard(now);
                        }
                        Some((hdr, hdr.header_len..hdr.header_len + n))
                    }
                    Err(OneRttError::Decrypt) => {
                        //= https://www.rfc-editor.org/rfc/rfc9001#section-6.6
                        //# If the total number of received packets that fail authentication
                        //# within the connection, across all keys, exceeds the integrity
                        //# limit for the selected AEAD, the endpoint MUST immediately close
                        //# the connection with a connection error of type
                        //# AEAD_LIMIT_REACHED
                        self.decrypt_failures += 1;
                        if self.decrypt_failures > keys.integrity_limit() {
                            self.close_on_error(
                                now,
                                TransportError::aead_limit_reached("integrity limit"),
                            );
                        }
                        None
                    }
                    Err(OneRttError::Fatal(e)) => {
                        self.close_on_error(now, e);
                        None
                    }
                }
            }
        }
    }

    fn on_frame(
        &mut self,
        now: Instant,
        space: SpaceId,
        dcid: &ConnectionId,
        frame: Frame<'_>,
    ) -> Result<(), TransportError> {
        match frame {
            Frame::Padding { .. } | Frame::Ping => {}
            Frame::Ack(ack) => self.on_ack_frame(now, space, &ack)?,
            Frame::Crypto(c) => self.on_crypto_frame(now, space, c.offset, c.data)?,
            Frame::Stream(s) => self
                .streams
                .on_stream_frame(s.id, s.offset, s.data, s.fin)?,
            Frame::ResetStream(f) => self.streams.on_reset_stream(&f)?,
            Frame::StopSending(f) => self.streams.on_stop_sending(&f)?,
            Frame::MaxData(max) => self.streams.on_max_data(max),
            Frame::MaxStreamData { id, max } => self.streams.on_max_stream_data(id, max)?,
            Frame::MaxStreams { dir, max } => self.streams.on_max_streams(dir, max),
            // Credit follows the application's reads; nothing to do.
            Frame::DataBlocked { .. } | Frame::StreamsBlocked { .. } => {}
            Frame::StreamDataBlocked { id, .. } => self.streams.on_stream_data_blocked(id)?,
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
            Frame::NewConnectionId(f) => self.peer_cids.on_new(&f, &mut self.cid_events)?,
            Frame::RetireConnectionId { seq } => {
                self.local_cids.on_retire(seq, dcid, &mut self.cid_events)?;
                let (cid_gen, rng) = (&self.cid_gen, &mut self.rng);
                let mut generate = || cid_gen.generate(rng);
                self.local_cids
                    .top_up(&mut generate, &self.reset_key, &mut self.cid_events);
            }
            Frame::PathChallenge(data) => {
                if self.path_responses.len() < MAX_PATH_RESPONSES {
                    self.path_responses.push_back(data);
                }
            }
            // We never send PATH_CHALLENGE (no migration), so no response matters.
            Frame::PathResponse(_) => {}
            Frame::Close(c) => self.on_peer_close(now, &c),
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
            Frame::Datagram { .. } => {
                //= https://www.rfc-editor.org/rfc/rfc9221#section-3
                //# An endpoint that receives a DATAGRAM frame when it has not indicated
                //# support via the transport parameter MUST terminate the connection
                //# with an error of type PROTOCOL_VIOLATION.
                return Err(TransportError::protocol_violation(
                    "DATAGRAM frames not negotiated",
                ));
            }
            Frame::AckFrequency(f) => self.on_ack_frequency(&f)?,
            Frame::ImmediateAck => self.spaces[space.index()].ack.immediate = true,
        }
        Ok(())
    }

    fn on_ack_frame(
        &mut self,
        now: Instant,
        space: SpaceId,
        ack: &Ack<'_>,
    ) -> Result<(), TransportError> {
        self.stats.acks_in += 1;
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
        let mut acked = std::mem::take(&mut self.acked_scratch);
        let mut lost = std::mem::take(&mut self.lost_scratch);
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
        for (pn, pkt) in acked.drain(..) {
            self.on_packet_acked(space, pn, &pkt.data);
        }
        for (pn, pkt) in lost.drain(..) {
            self.on_packet_lost(space, pn, &pkt.data);
        }
        self.acked_scratch = acked;
        self.lost_scratch = lost;
        result?;
        if space == SpaceId::Data {
            if let Some(keys) = self.one_rtt.as_mut() {
                keys.on_ack(ack.largest);
            }
        }
        Ok(())
    }

    fn on_packet_acked(&mut self, space: SpaceId, _pn: u64, frames: &SentFrames) {
        let s = &mut self.spaces[space.index()];
        if let Some(largest) = frames.ack_largest {
            s.ack.on_ack_acked(largest);
        }
        if let Some((offset, len)) = frames.crypto {
            s.crypto_send.on_ack(offset, len as usize, false);
        }
        if !frames.streams.is_empty() || !frames.control.is_empty() {
            self.streams.on_acked(frames);
        }
    }

    pub(crate) fn on_packet_lost(&mut self, space: SpaceId, _pn: u64, frames: &SentFrames) {
        if let Some((offset, len)) = frames.crypto {
            self.spaces[space.index()]
                .crypto_send
                .on_lost(offset, len as usize, false);
        }
        if frames.handshake_done {
            self.handshake_done_pending = true;
        }
        for ctl in &frames.control {
            match *ctl {
                Control::NewConnectionId(seq) => self.local_cids.on_announcement_lost(seq),
                Control::RetireConnectionId(seq) => self.peer_cids.on_retire_lost(seq),
                _ => {}
            }
        }
        if !frames.streams.is_empty() || !frames.control.is_empty() {
            self.streams.on_lost(frames);
        }
    }

    /// The loss-detection timer fired.
    pub(crate) fn on_loss_timer(&mut self, now: Instant) {
        let path = self.path_state();
        let mut lost = std::mem::take(&mut self.lost_scratch);
        let action = self.recovery.on_timeout(now, &path, &mut lost);
        for (pn, pkt) in lost.drain(..) {
            self.on_packet_lost(pkt.data.space, pn, &pkt.data);
        }
        self.lost_scratch = lost;
        if let crate::recovery::TimeoutAction::Probe { space, count } = action {
            let s = &mut self.spaces[space.index()];
            s.probes = count;
            if space != SpaceId::Data {
                // Carry the handshake data again rather than a bare PING.
                let ranges: Vec<(u64, u32)> = self
                    .recovery
                    .in_flight(space)
                    .filter_map(|(_, p)| p.data.crypto)
                    .collect();
                let s = &mut self.spaces[space.index()];
                for (offset, len) in ranges {
                    s.crypto_send.on_lost(offset, len as usize, false);
                }
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

/// The last 16 bytes of a datagram, which may be a stateless reset token.
fn reset_tail(data: &[u8]) -> Option<[u8; RESET_TOKEN_LEN]> {
    //= https://www.rfc-editor.org/rfc/rfc9000#section-10.3
    //# Endpoints MUST discard packets that are too small to be valid QUIC
    //# packets. ... the smallest ... is 21 bytes
    if data.len() < 21 {
        return None;
    }
    data[data.len() - RESET_TOKEN_LEN..].try_into().ok()
}
