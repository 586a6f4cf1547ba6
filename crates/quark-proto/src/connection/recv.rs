//! A datagram in: split coalesced packets, remove protection, drop duplicates,
//! dispatch frames, and record what to acknowledge.

use std::net::SocketAddr;
use std::ops::Range;
use std::time::Instant;

use bytes::{Bytes, BytesMut};

use super::Connection;
use super::close::{ConnectionError, State};
use super::scratch;
use crate::cid::{ConnectionId, RESET_TOKEN_LEN};
use crate::crypto::one_rtt::OneRttError;
use crate::error::TransportError;
use crate::frame;
use crate::packet::{self, HeaderType, PartialDecode, Unprotected};
use crate::types::{EcnCodepoint, PacketKind, SpaceId};

/// A 1-RTT packet decrypted in place, its frames not yet processed.
#[derive(Clone, Debug)]
pub(crate) struct Decrypted {
    /// Which datagram of the batch, and where the packet lies in it.
    segment: usize,
    packet: Range<usize>,
    hdr: Unprotected,
    /// The plaintext frames, relative to the packet.
    payload: Range<usize>,
    dst_cid: ConnectionId,
}

/// A receive's run of datagrams for one connection: processed in place
/// (what is kept is copied), or handed over to be kept (zero-copy receive).
enum Run<'a> {
    InPlace(&'a mut [u8]),
    Shared(BytesMut),
}

impl Run<'_> {
    fn bytes_mut(&mut self) -> &mut [u8] {
        match self {
            Run::InPlace(data) => data,
            Run::Shared(data) => data,
        }
    }
}

/// Where decrypted packet `d` lies in `run`, cut every `stride` bytes.
fn packet_in<'a>(run: &'a [u8], stride: usize, d: &Decrypted) -> &'a [u8] {
    let at = d.segment * stride;
    &run[at + d.packet.start..at + d.packet.end]
}

impl Connection {
    /// Process one UDP datagram from the peer. `data` is decrypted in place.
    pub fn handle_datagram(
        &mut self,
        now: Instant,
        remote: SocketAddr,
        ecn: Option<EcnCodepoint>,
        data: &mut [u8],
    ) {
        let stride = data.len();
        self.handle_run(now, remote, ecn, data, stride);
    }

    /// Process the datagrams of `run`, one receive (the segments of a GRO
    /// buffer) cut every `stride` bytes: every 1-RTT packet is decrypted
    /// first, then all their frames are processed (batched crypto, as the
    /// VPP paper measured). Decrypted in place; what the connection keeps is
    /// copied.
    pub fn handle_run(
        &mut self,
        now: Instant,
        remote: SocketAddr,
        ecn: Option<EcnCodepoint>,
        run: &mut [u8],
        stride: usize,
    ) {
        self.receive(now, remote, ecn, Run::InPlace(run), stride);
    }

    /// [`handle_run`](Self::handle_run) for a run the connection may keep:
    /// once decrypted it is frozen, and in-order STREAM data of a frame large
    /// enough stays in it as a slice until the application reads it
    /// (zero-copy receive). Whoever made `run` bounds the memory such slices
    /// pin (the driver stops handing buffers over past a budget).
    pub fn handle_shared(
        &mut self,
        now: Instant,
        remote: SocketAddr,
        ecn: Option<EcnCodepoint>,
        run: BytesMut,
        stride: usize,
    ) {
        self.receive(now, remote, ecn, Run::Shared(run), stride);
    }

    /// Both phases for a run, then what follows a batch.
    fn receive(
        &mut self,
        now: Instant,
        remote: SocketAddr,
        ecn: Option<EcnCodepoint>,
        mut run: Run<'_>,
        stride: usize,
    ) {
        let bytes = run.bytes_mut().len() as u64;
        let Some(follow) = self.begin_batch(now, remote, bytes) else {
            return;
        };
        let stride = stride.max(1);
        let mut decrypted = scratch::take_decrypted();
        self.open_run(now, ecn, run.bytes_mut(), stride, &mut decrypted);
        let frozen;
        let (data, owner): (&[u8], _) = match run {
            Run::InPlace(data) => (data, None),
            Run::Shared(data) => {
                frozen = data.freeze();
                (&frozen, Some(&frozen))
            }
        };
        let packet = |d: &Decrypted| packet_in(data, stride, d);
        let restart_idle = self.process_decrypted(now, ecn, &mut decrypted, packet, owner);
        scratch::put_decrypted(decrypted);
        self.end_batch(now, remote, bytes, follow, restart_idle);
    }

    /// Phase one for every segment of `run` (until the connection stops
    /// taking packets).
    fn open_run(
        &mut self,
        now: Instant,
        ecn: Option<EcnCodepoint>,
        run: &mut [u8],
        stride: usize,
        decrypted: &mut Vec<Decrypted>,
    ) {
        for (index, data) in run.chunks_mut(stride).enumerate() {
            if !self.open_datagram(now, ecn, index, data, decrypted) {
                break;
            }
        }
    }

    /// Before a batch of `bytes` from `remote`: `None` when it is dropped,
    /// else whether it came from an address the connection will follow.
    fn begin_batch(&mut self, now: Instant, remote: SocketAddr, bytes: u64) -> Option<bool> {
        if matches!(self.state, State::Drained { .. } | State::Draining { .. }) {
            return None;
        }
        let off_path = remote != self.path.remote;
        let follow = if off_path {
            self.accept_remote(remote)?
        } else {
            false
        };
        if !off_path {
            self.on_path_bytes(now, bytes);
        }
        // Reads that follow this batch return credit as of now.
        self.streams.observe(
            now,
            self.recovery.rtt().smoothed(),
            self.recovery.congestion_window(),
        );
        Some(follow)
    }

    /// Phase two for a batch: the frames of every packet decrypted, each
    /// found by `packet`; `owner` is the frozen receive buffer they lie in,
    /// if shared. Returns whether the idle timer is owed a restart.
    fn process_decrypted<'a>(
        &mut self,
        now: Instant,
        ecn: Option<EcnCodepoint>,
        decrypted: &mut Vec<Decrypted>,
        packet: impl Fn(&Decrypted) -> &'a [u8],
        owner: Option<&Bytes>,
    ) -> bool {
        // Every packet of the batch is processed at one `now`: the idle timer
        // is restarted once, after the last (nothing in between reads it).
        let mut restart_idle = false;
        for d in decrypted.drain(..) {
            if !matches!(self.state, State::Handshake | State::Established) {
                break;
            }
            restart_idle |= self.process_packet(
                now,
                ecn,
                PacketKind::OneRtt,
                packet(&d),
                &d.hdr,
                d.payload,
                &d.dst_cid,
                None,
                owner,
            );
        }
        restart_idle
    }

    /// After a batch: the idle timer, buffered 0-RTT, a move to `remote`.
    fn end_batch(
        &mut self,
        now: Instant,
        remote: SocketAddr,
        bytes: u64,
        follow: bool,
        restart_idle: bool,
    ) {
        if restart_idle {
            self.reset_idle_timer(now);
        }
        if self.early.is_some() {
            self.flush_buffered_0rtt(now);
        }
        if follow {
            self.after_off_path_batch(now, remote, bytes);
        }
        if matches!(self.state, State::Closing { .. }) {
            self.on_packet_while_closing();
        }
    }

    /// Phase one for datagram `index` of a batch: long-header packets are
    /// handled at once (the handshake is rare and order-sensitive); 1-RTT
    /// packets are decrypted and queued in `decrypted`. False when the
    /// connection stopped taking packets.
    fn open_datagram(
        &mut self,
        now: Instant,
        ecn: Option<EcnCodepoint>,
        index: usize,
        data: &mut [u8],
        decrypted: &mut Vec<Decrypted>,
    ) -> bool {
        self.stats.datagrams_in += 1;
        self.stats.bytes_in += data.len() as u64;
        let tail = reset_tail(data);
        let mut offset = 0;
        let mut first_dcid = None;
        while offset < data.len() {
            let (rest, grease) = (&data[offset..], self.bits.accepts_cleared());
            let Ok(pd) = PartialDecode::with_quic_bit(rest, self.cid_len.into(), grease) else {
                break;
            };
            let end = offset + pd.len;
            //= https://www.rfc-editor.org/rfc/rfc9000#section-12.2
            //# Senders MUST NOT coalesce QUIC packets with different connection IDs
            //# into a single UDP datagram.  Receivers SHOULD ignore any subsequent
            //# packets with a different Destination Connection ID than the first
            //# packet in the datagram.
            if *first_dcid.get_or_insert(pd.dst_cid) == pd.dst_cid {
                let packet = &mut data[offset..end];
                if pd.ty == HeaderType::Frames(PacketKind::OneRtt) {
                    let largest = decrypted.last().map(|d| d.hdr.pn);
                    match self.open_one_rtt(now, packet, &pd, largest) {
                        Some((hdr, payload)) => decrypted.push(Decrypted {
                            segment: index,
                            packet: offset..end,
                            hdr,
                            payload,
                            dst_cid: pd.dst_cid,
                        }),
                        None => self.on_undecryptable(now, &pd, tail),
                    }
                } else {
                    self.handle_packet(now, ecn, packet, &pd, tail);
                }
            }
            offset = end;
            if !matches!(self.state, State::Handshake | State::Established) {
                break;
            }
        }
        matches!(self.state, State::Handshake | State::Established)
    }

    /// `bytes` came in on the path in use: they raise its amplification limit.
    fn on_path_bytes(&mut self, now: Instant, bytes: u64) {
        let was_blocked = self.path.amplification_budget() == 0;
        self.path.bytes_received += bytes;
        if was_blocked {
            // The server may send again: the PTO must be re-armed (RFC 9002 §6.2.2.1).
            let path = self.path_state();
            self.recovery.update_timer(now, &path);
        }
    }

    /// 1-RTT protection off, counted as crypto time. `batch_largest` is the
    /// largest packet number already decrypted in this batch (for decoding).
    fn open_one_rtt(
        &mut self,
        now: Instant,
        packet: &mut [u8],
        pd: &PartialDecode,
        batch_largest: Option<u64>,
    ) -> Option<(Unprotected, Range<usize>)> {
        let seen = self.spaces[SpaceId::Data.index()].ack.largest_pn();
        let largest = seen.max(batch_largest);
        crate::cpu::measure(crate::cpu::Work::Crypto, || {
            self.unprotect(now, PacketKind::OneRtt, packet, pd, largest)
        })
    }

    /// A packet that could not be decrypted: dropped, unless the datagram is a
    /// stateless reset for this connection.
    fn on_undecryptable(
        &mut self,
        now: Instant,
        pd: &PartialDecode,
        tail: Option<[u8; RESET_TOKEN_LEN]>,
    ) {
        self.stats.packets_dropped += 1;
        //= https://www.rfc-editor.org/rfc/rfc9000#section-10.3.1
        //# An endpoint detects a potential Stateless Reset using the trailing 16
        //# bytes of the UDP datagram.
        if !pd.is_long() && tail.is_some_and(|t| self.peer_cids.is_reset(&t)) {
            self.enter_drained(now, ConnectionError::Reset);
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
            HeaderType::VersionNegotiation => self.on_version_negotiation(now, packet, pd),
            HeaderType::Retry => self.on_retry(now, packet, pd),
            HeaderType::Frames(kind) => self.on_protected(now, ecn, kind, packet, pd, tail),
        }
    }

    fn on_version_negotiation(&mut self, now: Instant, packet: &[u8], pd: &PartialDecode) {
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
        self.enter_drained(now, ConnectionError::VersionMismatch);
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
        // A Retry of another version is not an answer to our Initial.
        if pd.version != self.version {
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
        // The Initials now carry the Retry's token, not the NEW_TOKEN one
        // that let them clear the QUIC bit (RFC 9287 §3.1).
        self.bits.stop_grease();
        self.peer_cids.set_initial(pd.src_cid);
        // New Initial keys from the server's chosen ID; resend everything sent so far
        // in Initials (packet numbers keep increasing, RFC 9000 §17.2.5.3).
        self.spaces[SpaceId::Initial.index()].keys = Some(crate::crypto::initial_keys_for(
            self.version,
            &pd.src_cid,
            self.side,
        ));
        let path = self.path_state();
        let (acked, mut dropped) = scratch::take_ack();
        self.recovery
            .discard_space(SpaceId::Initial, now, &path, &mut dropped);
        for (pn, pkt) in dropped.drain(..) {
            self.on_packet_lost(SpaceId::Initial, pn, &pkt.data);
        }
        scratch::put_ack(acked, dropped);
    }

    /// A long-header packet: open and process at once.
    pub(super) fn on_protected(
        &mut self,
        now: Instant,
        ecn: Option<EcnCodepoint>,
        kind: PacketKind,
        packet: &mut [u8],
        pd: &PartialDecode,
        tail: Option<[u8; RESET_TOKEN_LEN]>,
    ) {
        // A long header of another version than the connection's: only an
        // Initial around a compatible version change (RFC 9368) is tried,
        // with that version's Initial keys; anything else is dropped.
        let other_version = kind != PacketKind::OneRtt && pd.version != self.version;
        if other_version && !self.on_other_version(kind, pd.version) {
            return;
        }
        if other_version {
            self.swap_original_initial();
        }
        if kind == PacketKind::ZeroRtt
            && self.side.is_server()
            && self.zero_rtt_keys().is_none()
            && self.buffer_0rtt(packet, ecn)
        {
            return;
        }
        let largest = self.spaces[kind.space().index()].ack.largest_pn();
        let opened = crate::cpu::measure(crate::cpu::Work::Crypto, || {
            self.unprotect(now, kind, packet, pd, largest)
        });
        if other_version {
            self.swap_original_initial();
            self.after_other_version(pd.version, opened.is_some());
        }
        let Some((hdr, payload)) = opened else {
            if kind == PacketKind::Handshake && self.handshake_done_unacked {
                // The client still probes its Handshake space, after we
                // dropped ours: it lacks HANDSHAKE_DONE, and holds back
                // its 1-RTT probes until it has it (RFC 9002 §6.2.1).
                // Send it again now rather than at our next PTO.
                self.handshake_done_pending = true;
            }
            self.on_undecryptable(now, pd, tail);
            return;
        };
        if self.process_packet(
            now,
            ecn,
            kind,
            packet,
            &hdr,
            payload,
            &pd.dst_cid,
            Some(pd.src_cid),
            None,
        ) {
            self.reset_idle_timer(now);
        }
    }

    /// Phase two: a decrypted packet's checks and frames. `src_cid` is the long
    /// header's Source Connection ID. Returns true when the packet was processed
    /// and the caller owes `reset_idle_timer(now)` (RFC 9000 §10.1).
    #[allow(clippy::too_many_arguments)]
    #[must_use]
    fn process_packet(
        &mut self,
        now: Instant,
        ecn: Option<EcnCodepoint>,
        kind: PacketKind,
        packet: &[u8],
        hdr: &Unprotected,
        payload: Range<usize>,
        dst_cid: &ConnectionId,
        src_cid: Option<ConnectionId>,
        owner: Option<&Bytes>,
    ) -> bool {
        let space = kind.space();
        if !hdr.reserved_bits_zero {
            //= https://www.rfc-editor.org/rfc/rfc9000#section-17.2
            //# An endpoint MUST treat receipt of a packet that has a non-zero value for
            //# these bits after removing both packet and header protection as a
            //# connection error of type PROTOCOL_VIOLATION.
            self.close_on_error(now, TransportError::protocol_violation("reserved bits set"));
            return false;
        }
        if self.spaces[space.index()].ack.is_duplicate(hdr.pn) {
            self.stats.packets_dropped += 1;
            return false;
        }
        crate::cpu::count_packet();
        if kind == PacketKind::OneRtt && self.early.is_some() {
            self.on_one_rtt_received();
        }
        if self.migration.preferred_local.is_some() {
            self.on_preferred_packet(dst_cid);
        }
        self.received_any = true;
        self.sent_eliciting_since_recv = false;
        self.stats.packets_in += 1;
        if let (true, PacketKind::Initial, false, Some(src)) = (
            self.side.is_client(),
            kind,
            self.got_server_initial,
            src_cid,
        ) {
            self.got_server_initial = true;
            self.peer_cids.set_initial(src);
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
            return false;
        }
        match ecn {
            Some(EcnCodepoint::Ect0) => self.stats.ecn_ect0_in += 1,
            Some(EcnCodepoint::Ect1) => self.stats.ecn_ect1_in += 1,
            Some(EcnCodepoint::Ce) => self.stats.ecn_ce_in += 1,
            None => {}
        }
        let payload = &packet[payload];
        if self.qlog.is_some() {
            self.qlog_received(now, kind, hdr.pn, payload, packet.len());
        }
        if payload.is_empty() {
            //= https://www.rfc-editor.org/rfc/rfc9000#section-12.4
            //# An endpoint MUST treat receipt of a packet containing no frames as a
            //# connection error of type PROTOCOL_VIOLATION.
            self.close_on_error(
                now,
                TransportError::protocol_violation("packet without frames"),
            );
            return false;
        }
        let mut ack_eliciting = false;
        let mut probing = true;
        for frame in frame::Iter::new(payload, kind) {
            let result = frame.map_err(TransportError::from).and_then(|f| {
                ack_eliciting |= f.is_ack_eliciting();
                probing &= f.is_probing();
                self.on_frame(now, space, dst_cid, f, owner)
            });
            if let Err(e) = result {
                #[cfg(feature = "testing")]
                if self.misbehave.tolerate_violations {
                    continue;
                }
                self.close_on_error(now, e);
                return false;
            }
            if self.is_closed() {
                return false;
            }
        }
        // The largest 1-RTT packet number so far (the migration rule and the
        // spin bit follow only those).
        let newest = space == SpaceId::Data
            && self.spaces[space.index()]
                .ack
                .largest_pn()
                .is_none_or(|l| hdr.pn > l);
        //= https://www.rfc-editor.org/rfc/rfc9000#section-9.3
        //# An endpoint only changes the address to which it sends packets in
        //# response to the highest-numbered non-probing packet.
        if newest && self.migration.off_path_rx && !probing {
            self.migration.newest_non_probing = true;
        }
        if newest && kind == PacketKind::OneRtt {
            self.bits.on_newest_packet(self.side, hdr.spin);
        }
        if ack_eliciting {
            self.on_peer_eliciting();
        }
        // The packet's frames may have discarded its space (the client's
        // Finished ends the server's Handshake space): nothing is owed there
        // any more, and a write would bring the dropped space back.
        if space == SpaceId::Data || !self.spaces[space.index()].discarded {
            // By reference: the spaces and the policy are separate fields.
            self.spaces[space.index()].ack.on_packet(
                space,
                hdr.pn,
                ack_eliciting,
                ecn,
                now,
                &self.ack_policy,
            );
        }
        //= https://www.rfc-editor.org/rfc/rfc9000#section-10.1
        //# An endpoint restarts its idle timer when a packet from its peer is
        //# received and processed successfully.
        true
    }

    /// Remove header and packet protection; `None` if the packet must be dropped.
    fn unprotect(
        &mut self,
        now: Instant,
        kind: PacketKind,
        packet: &mut [u8],
        pd: &PartialDecode,
        largest: Option<u64>,
    ) -> Option<(Unprotected, Range<usize>)> {
        let space = kind.space();
        match kind {
            // Servers only; a client discards 0-RTT packets (RFC 9001 §5.6).
            PacketKind::ZeroRtt => self.open_0rtt(packet, pd, largest),
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
                keys.wake();
                let hdr =
                    packet::remove_header_protection(packet, pd, keys.remote_header(), largest)
                        .ok()?;
                let updates = keys.updates();
                let (header, body) = packet.split_at_mut(hdr.header_len);
                let body_len = pd.len - hdr.header_len;
                match keys.decrypt(hdr.pn, hdr.key_phase, header, &mut body[..body_len]) {
                    Ok(n) => {
                        if keys.updates() != updates {
                            self.after_key_update(now, false);
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
