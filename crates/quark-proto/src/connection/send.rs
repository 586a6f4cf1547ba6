//! Packets out: choose what each packet-number space has to send, assemble
//! packets into the caller's buffer, coalesce long-header packets into one
//! datagram, and batch equal-sized 1-RTT datagrams for UDP GSO.

use std::time::Instant;

use super::close::State;
use super::mtu::{MTU_PROBE_AFTER, Offer};
use super::sent::SentFrames;
use super::timers::Timer;
use super::{Connection, Transmit};
use crate::cid::ConnectionId;
use crate::frame::Frame;
use crate::packet::{HeaderParams, MIN_INITIAL_SIZE, PacketBuilder};
use crate::recovery::SendFlags;
use crate::types::{EcnCodepoint, PacketKind, SpaceId};

/// Below this many bytes of room, don't start another packet in a datagram.
const MIN_PACKET_ROOM: usize = 48;
/// Room kept for the last packet of a datagram that must be padded to
/// 1 200 bytes (a long header with two connection IDs, a frame, the tag).
const PAD_ROOM: usize = 128;
/// A datagram within this many bytes of its limit counts as full: frame headers
/// are sized conservatively, so packets rarely fill to the last byte.
const FULL_SLACK: usize = 24;

impl Connection {
    /// Write up to `max_datagrams` datagrams into `buf` (cleared first). Several
    /// datagrams come back as one GSO batch: all of `segment_size` bytes but the last.
    /// A batch stays within `max_datagrams` × [`Connection::max_datagram_size`]
    /// as it was before the call, even when the path MTU grows in it.
    /// Call until it returns `None`, then wait for [`Connection::poll_timeout`] or input.
    #[must_use]
    pub fn poll_transmit(
        &mut self,
        now: Instant,
        max_datagrams: usize,
        buf: &mut Vec<u8>,
    ) -> Option<Transmit> {
        buf.clear();
        self.streams.observe(
            now,
            self.recovery.rtt().smoothed(),
            self.recovery.congestion_window(),
        );
        match self.state {
            State::Drained { .. } | State::Draining { .. } => return None,
            State::Closing { .. } => return self.transmit_close(now, buf),
            _ => {}
        }
        if self.migration.has_off_path() {
            if let Some(t) = self.transmit_off_path(now, buf) {
                return Some(t);
            }
            buf.clear();
        }
        // The caller sized its batch by the size announced so far.
        let sized_for = max_datagrams.max(1) * self.max_datagram_size();
        // A size another connection validated on this path applies to this
        // batch already (a response written right after the handshake included).
        let probe_wait = self.take_mtu_offer(now);
        // One ECN codepoint per batch; validation only changes it on ACKs.
        self.tx_ecn = self.recovery.ecn_codepoint();
        // RFC 9000 Appendix A.4: from "unknown", an ACK whose ECN counts
        // validate makes the path "capable". A downloading client sends only
        // ACKs once its requests are out: with nothing of its own to be
        // acknowledged no ACK came, and it stayed unknown (unmarked) for good.
        // A PING asks for one; once in flight, no other is sent.
        if self.recovery.ecn_state() == crate::recovery::EcnState::Unknown
            && self.handshake_confirmed
            && !self.recovery.has_ack_eliciting_in_flight(SpaceId::Data)
        {
            self.ping_pending = true;
        }
        let mtu = usize::from(self.path.mtu);
        // Larger datagrams from now on: as many as fit the bytes the caller
        // planned for (a 64 KB GSO batch, say), not as many as it asked for.
        let max_datagrams = max_datagrams.max(1).min((sized_for / mtu).max(1));
        let mut count = 0;
        let mut segment = mtu;
        while count < max_datagrams {
            let budget = self.path.amplification_budget().min(segment as u64) as usize;
            if budget < MIN_PACKET_ROOM {
                break;
            }
            let start = buf.len();
            let long = self.write_datagram(now, buf, budget);
            let size = buf.len() - start;
            if size == 0 {
                self.note_app_limited(now);
                break;
            }
            count += 1;
            if count == 1 {
                segment = size;
            }
            // GSO: every datagram but the last has the first one's size. A datagram
            // that isn't (nearly) full ends the batch; handshake datagrams go alone.
            let full = size + FULL_SLACK >= budget;
            if long || !full || size < segment {
                break;
            }
        }
        if count == 0 {
            // Nothing else to send now (idle or window-limited): the time for a
            // PMTU probe, which must never delay data.
            let probe = if probe_wait {
                None
            } else {
                self.transmit_mtu_probe(now, buf)
            };
            self.seal_batch(buf);
            return probe;
        }
        self.seal_batch(buf);
        Some(self.transmitted(buf.len(), count, segment, self.tx_ecn))
    }

    /// Count `count` datagrams of `size` bytes in all as sent and describe them
    /// (one GSO batch of `segment`-byte datagrams when more than one).
    pub(super) fn transmitted(
        &mut self,
        size: usize,
        count: usize,
        segment: usize,
        ecn: Option<EcnCodepoint>,
    ) -> Transmit {
        self.stats.datagrams_out += count as u64;
        self.stats.bytes_out += size as u64;
        Transmit {
            destination: self.path.remote,
            size,
            segment_size: (count > 1).then_some(segment),
            ecn,
            src_ip: self.path.local_ip,
        }
    }

    /// Apply what the endpoint offered about the path MTU, if anything. Returns
    /// whether another connection's probe is out (so this one must not probe).
    fn take_mtu_offer(&mut self, now: Instant) -> bool {
        if !self.handshake_confirmed || !matches!(self.state, State::Established) {
            return false;
        }
        match self.mtu.use_offer(now) {
            Some(Offer::Adopted) => {
                self.apply_mtu();
                tracing::debug!(mtu = self.path.mtu, "path MTU from the endpoint's cache");
                false
            }
            Some(Offer::Wait) => true,
            None => false,
        }
    }

    /// A PMTU probe, alone in its datagram, when one is due (RFC 9000 §14.4).
    fn transmit_mtu_probe(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<Transmit> {
        // Short exchanges cannot profit from bigger datagrams enough to pay for
        // probes. Probe once the connection looks like a bulk transfer, or when
        // the endpoint saw as much on the path from all connections together.
        // Not on a path the peer has yet to prove it owns: a probe there
        // would break the 3x limit (RFC 9000 §8), and spend the budget
        // the next PATH_CHALLENGE needs.
        if !self.handshake_confirmed
            || !matches!(self.state, State::Established)
            || !self.path.validated
            || (self.stats.bytes_out < MTU_PROBE_AFTER && !self.mtu.granted())
        {
            return None;
        }
        let size = self.mtu.probe_due(now)?;
        let builder = self.begin_packet(SpaceId::Data, buf, usize::from(size))?;
        let pn = builder.pn;
        Frame::Ping.encode(buf);
        let mut sent = SentFrames::new(SpaceId::Data);
        sent.mtu_probe = true;
        //= https://www.rfc-editor.org/rfc/rfc9000#section-14.4
        //# Loss of a QUIC packet that is carried in a PMTU probe is therefore not
        //# a reliable indication of congestion and SHOULD NOT trigger a
        //# congestion control reaction
        // Not counted in flight, so its loss is no congestion signal.
        self.end_packet(
            now,
            SpaceId::Data,
            builder,
            buf,
            usize::from(size),
            sent,
            true,
            false,
        );
        let timeout = 3 * self.recovery.pto_base(SpaceId::Data, &self.path_state());
        self.mtu.on_probe_sent(size, pn, now, timeout);
        self.rare_stats().mtu_probes += 1;
        Some(self.transmitted(buf.len(), 1, buf.len(), self.tx_ecn))
    }

    /// Encrypt every 1-RTT packet built since the last call: all payloads first,
    /// then all header protection (which samples the ciphertext).
    pub(super) fn seal_batch(&mut self, buf: &mut [u8]) {
        if self.seal_jobs.is_empty() {
            return;
        }
        let keys = self
            .one_rtt
            .as_ref()
            .expect("1-RTT keys for pending packets");
        let jobs = &self.seal_jobs;
        crate::cpu::measure(crate::cpu::Work::Crypto, || {
            let (key, hp) = (keys.local_packet(), keys.local_header());
            for job in jobs {
                job.seal_payload(buf, key);
            }
            for job in jobs {
                job.protect_header(buf, hp, key.tag_len());
            }
        });
        // Back to the thread's pool: no connection keeps it between batches.
        super::scratch::put_seal(std::mem::take(&mut self.seal_jobs));
    }

    /// Nothing was left to send: if the window had room (and the pacer did not
    /// hold us back), the application is what limits the rate (RFC 9002 §7.8),
    /// or the transport, when it refused writes that wait for credit or room.
    fn note_app_limited(&mut self, now: Instant) {
        let pacing = self.timers.get(Timer::Pacing).is_some_and(|t| t > now);
        if !pacing && self.recovery.send_allowance() > 0 {
            if self.streams.writes_held_back() {
                self.recovery.on_transport_limited();
            } else {
                self.recovery.on_app_limited();
            }
        }
    }

    /// May ack-eliciting packets go now (congestion window and pacer)?
    fn congestion_allows(&mut self, now: Instant) -> bool {
        #[cfg(feature = "testing")]
        if self.misbehave.ignore_congestion {
            return true;
        }
        if self.recovery.send_allowance() == 0 {
            return false;
        }
        match self.recovery.pacing_delay(now, u64::from(self.path.mtu)) {
            Some(at) if at > now => {
                self.timers.set(Timer::Pacing, at);
                false
            }
            _ => true,
        }
    }

    /// Whether `space` has something to put in a packet now.
    fn space_ready(&self, space: SpaceId, now: Instant, cc_ok: bool) -> bool {
        let s = &self.spaces[space.index()];
        let keys = match space {
            SpaceId::Data => {
                (self.one_rtt.is_some() && self.handshake_complete) || self.sending_0rtt()
            }
            _ => s.keys.is_some(),
        };
        if !keys || s.discarded {
            return false;
        }
        // A path challenge is tiny and what unblocks a new path: like an ACK,
        // it does not wait for the congestion window.
        if s.ack.due(now)
            || s.probes > 0
            || (space == SpaceId::Data && self.migration.challenge_due())
        {
            return true;
        }
        if !cc_ok {
            return false;
        }
        if space == SpaceId::Data && self.early.is_some() && self.sending_0rtt() {
            return self.room_for_0rtt() && self.streams.wants_to_send();
        }
        if s.crypto_pending() {
            return true;
        }
        #[cfg(feature = "testing")]
        if space == SpaceId::Data && !self.raw_frames.is_empty() {
            return true;
        }
        // Stream data first: in bulk it is what answers, and the checks after
        // it (a BTreeSet's first entry among them) cost ~30 instructions a
        // packet. All are free of side effects, so the order is only cost.
        space == SpaceId::Data
            && (self.streams.wants_to_send()
                || self.handshake_done_pending
                || self.ping_pending
                || self.new_token_alone()
                || !self.path_responses.is_empty()
                || self.local_cids.has_announcement()
                || self.peer_cids.next_retirement().is_some()
                || self.datagrams.has_outgoing())
    }

    /// The spaces with something to send, in order (no allocation: this runs per datagram).
    fn ready_spaces(&self, now: Instant, cc_ok: bool) -> ([SpaceId; 3], usize) {
        let mut out = [SpaceId::Initial; 3];
        // Established: Initial and Handshake are gone, only Application can send.
        if self.spaces.early_dropped() {
            let n = usize::from(self.space_ready(SpaceId::Data, now, cc_ok));
            out[0] = SpaceId::Data;
            return (out, n);
        }
        let mut n = 0;
        for space in SpaceId::ALL {
            if self.space_ready(space, now, cc_ok) {
                out[n] = space;
                n += 1;
            }
        }
        (out, n)
    }

    /// Build one datagram of at most `limit` bytes. Returns whether it holds
    /// long-header packets.
    fn write_datagram(&mut self, now: Instant, buf: &mut Vec<u8>, limit: usize) -> bool {
        let start = buf.len();
        let end = start + limit;
        // With the window open every space that could send is ready; when none
        // is, the window and the pacer need no asking (most calls in a
        // request-response exchange find nothing to send).
        let (mut ready, mut n) = self.ready_spaces(now, true);
        if n == 0 {
            return false;
        }
        let cc_ok = self.congestion_allows(now);
        if !cc_ok {
            (ready, n) = self.ready_spaces(now, false);
        }
        let ready = &ready[..n];
        let Some(&last) = ready.last() else {
            return false;
        };
        //= https://www.rfc-editor.org/rfc/rfc9000#section-14.1
        //# A client MUST expand the payload of all UDP datagrams carrying Initial
        //# packets to at least the smallest allowed maximum datagram size of 1200
        //# bytes ... a server MUST expand the payload of all UDP datagrams carrying
        //# ack-eliciting Initial packets to at least the smallest allowed maximum
        //# datagram size of 1200 bytes.
        let pad = ready.contains(&SpaceId::Initial)
            && (self.side.is_client() || {
                let s = &self.spaces[SpaceId::Initial.index()];
                s.crypto_pending() || s.probes > 0
            });
        for &space in ready {
            if end - buf.len() < MIN_PACKET_ROOM {
                break;
            }
            let min_size = if pad && space == last {
                MIN_INITIAL_SIZE.saturating_sub(buf.len() - start)
            } else {
                0
            };
            // The last packet pads the datagram: an earlier one (a large
            // ClientHello before 0-RTT) must leave it room to exist.
            let packet_end = if pad && space != last {
                end.saturating_sub(PAD_ROOM).max(buf.len())
            } else {
                end
            };
            self.write_packet(now, space, buf, packet_end, min_size, cc_ok);
        }
        ready[0] != SpaceId::Data && buf.len() > start
    }

    /// Start a packet in `space`: header written, returns the builder.
    pub(super) fn begin_packet(
        &mut self,
        space: SpaceId,
        buf: &mut Vec<u8>,
        end: usize,
    ) -> Option<PacketBuilder> {
        let kind = match space {
            SpaceId::Initial => PacketKind::Initial,
            SpaceId::Handshake => PacketKind::Handshake,
            SpaceId::Data if self.sending_0rtt() => PacketKind::ZeroRtt,
            SpaceId::Data => PacketKind::OneRtt,
        };
        let tag_len = match space {
            SpaceId::Data if kind == PacketKind::ZeroRtt => self.zero_rtt_keys()?.packet.tag_len(),
            SpaceId::Data => {
                // Every 1-RTT packet starts here: an idle connection's keys
                // come back before `end_packet` and `seal_batch` use them.
                let keys = self.one_rtt.as_mut()?;
                keys.wake();
                keys.local_packet().tag_len()
            }
            _ => self.spaces[space.index()]
                .keys
                .as_ref()?
                .local
                .packet
                .tag_len(),
        };
        let key_phase = self.one_rtt.as_ref().is_some_and(|k| k.key_phase());
        let dst_cid = self.peer_cids.active();
        // Only long headers carry a source ID.
        let src_cid = if kind == PacketKind::OneRtt {
            ConnectionId::EMPTY
        } else {
            self.local_cids.handshake_cid()
        };
        let token: &[u8] = if kind == PacketKind::Initial {
            &self.token
        } else {
            &[]
        };
        if space == SpaceId::Data {
            let s = &mut self.spaces[space.index()];
            let pn = self.skipped.pick(s.next_pn, &mut self.rng);
            if pn != s.next_pn {
                // A skip drew from the generator: back to a seed, not kept
                // boxed by a busy connection (issue #33).
                s.next_pn = pn;
                self.rng.park();
            }
        }
        let pn = self.spaces[space.index()].next_pn;
        let (spin, quic_bit) = match kind {
            PacketKind::OneRtt => self.bits.for_packet(pn, self.peer_cids.active_seq()),
            _ => (false, self.bits.long_quic_bit(pn, space.index() as u64)),
        };
        let header = HeaderParams {
            kind,
            version: self.version,
            dst_cid: &dst_cid,
            src_cid: &src_cid,
            token,
            pn,
            largest_acked: self.recovery.largest_acked(space),
            key_phase,
            spin,
        };
        let builder = PacketBuilder::start(buf, &header, end - buf.len(), tag_len);
        if !quic_bit {
            // Before sealing: the first byte is part of the AEAD's input.
            buf[builder.start] &= !crate::packet::QUIC_BIT;
        }
        Some(builder)
    }

    /// Seal a packet and record it.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn end_packet(
        &mut self,
        now: Instant,
        space: SpaceId,
        builder: PacketBuilder,
        buf: &mut Vec<u8>,
        min_size: usize,
        sent: SentFrames,
        ack_eliciting: bool,
        in_flight: bool,
    ) {
        let pn = builder.pn;
        let header_len = builder.header_end - builder.start;
        if self.qlog.is_some() {
            self.qlog_keep_plaintext(space, &buf[builder.header_end..]);
        }
        let size = match space {
            SpaceId::Data if builder.kind == PacketKind::ZeroRtt => {
                crate::cpu::measure(crate::cpu::Work::Crypto, || {
                    let keys = self.zero_rtt_keys().expect("0-RTT keys");
                    builder.finish(buf, min_size, keys.packet.as_ref(), keys.header.as_ref())
                })
            }
            SpaceId::Data => {
                // Encrypted later, with the rest of the batch (`seal_batch`).
                let tag_len = self
                    .one_rtt
                    .as_ref()
                    .expect("1-RTT keys")
                    .local_packet()
                    .tag_len();
                let job = builder.finish_plaintext(buf, min_size, tag_len);
                if self.seal_jobs.capacity() == 0 {
                    self.seal_jobs = super::scratch::take_seal();
                }
                self.seal_jobs.push(job);
                job.end + tag_len - job.start
            }
            _ => crate::cpu::measure(crate::cpu::Work::Crypto, || {
                let keys = self.spaces[space.index()]
                    .keys
                    .as_ref()
                    .expect("space keys");
                builder.finish(
                    buf,
                    min_size,
                    keys.local.packet.as_ref(),
                    keys.local.header.as_ref(),
                )
            }),
        };
        crate::cpu::count_packet();
        if self.qlog.is_some() {
            self.qlog_sent(now, space, pn, buf, header_len, size);
        }
        if self.tx_ecn.is_some() {
            self.stats.ecn_marked_out += 1;
        }
        self.spaces[space.index()].next_pn += 1;
        if space == SpaceId::Data && !sent.mtu_probe {
            self.mtu.on_sent(pn);
        }
        let path = self.path_state();
        let flags = SendFlags {
            ack_eliciting,
            in_flight,
            ecn: self.tx_ecn,
            mtu_probe: sent.mtu_probe,
        };
        self.recovery
            .on_packet_sent_with(now, space, pn, size as u16, flags, sent, &path);
        if self.qlog.is_some() {
            // Bytes in flight grew (qvis draws them beside the window).
            self.qlog_metrics(now);
        }
        if space == SpaceId::Data {
            if let Some(keys) = self.one_rtt.as_mut() {
                keys.on_packet_sent(pn);
            }
        }
        self.path.bytes_sent += size as u64;
        self.stats.packets_out += 1;
        if ack_eliciting && !self.sent_eliciting_since_recv {
            //= https://www.rfc-editor.org/rfc/rfc9000#section-10.1
            //# An endpoint also restarts its idle timer when sending an ack-eliciting
            //# packet if no other ack-eliciting packets have been sent since last
            //# receiving and processing a packet.
            self.sent_eliciting_since_recv = true;
            self.reset_idle_timer(now);
        } else if ack_eliciting {
            // Its record is freed once it is resolved and the connection quiet.
            self.arm_trim(now);
        }
        //= https://www.rfc-editor.org/rfc/rfc9001#section-4.9.1
        //# a client MUST discard Initial keys when it first sends a Handshake packet
        if self.side.is_client() && space == SpaceId::Handshake {
            self.discard_space(now, SpaceId::Initial);
        }
    }
}
