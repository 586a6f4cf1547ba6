//! What goes into one packet: ACK, CRYPTO, HANDSHAKE_DONE, PATH_RESPONSE,
//! PING, connection ID and other control frames, then stream data, as room
//! allows. `send.rs` decides which packets to build and when.

use std::time::Instant;

use super::Connection;
use super::sent::{Control, SentFrames};
use crate::frame::{self, Frame, NewConnectionId};
use crate::types::SpaceId;

/// ACK ranges written per ACK frame at most.
const MAX_ACK_RANGES: usize = 64;

impl Connection {
    /// Write one packet in `space`. Returns whether anything was written.
    pub(super) fn write_packet(
        &mut self,
        now: Instant,
        space: SpaceId,
        buf: &mut Vec<u8>,
        end: usize,
        mut min_size: usize,
        cc_ok: bool,
    ) -> bool {
        if space == SpaceId::Data && self.one_rtt.as_ref().is_some_and(|k| k.should_update()) {
            // Packets already built carry the old key phase: seal them first.
            self.seal_batch(buf);
            //= https://www.rfc-editor.org/rfc/rfc9001#section-6.6
            //# Endpoints MUST initiate a key update before the confidentiality limit
            //# is reached
            if self.initiate_key_update(now) {
                tracing::debug!("key update for the confidentiality limit");
            }
        }
        let Some(builder) = self.begin_packet(space, buf, end) else {
            return false;
        };
        let max_end = builder.max_end;
        let payload_start = buf.len();
        let mut sent = SentFrames::new(space);
        //= https://www.rfc-editor.org/rfc/rfc9000#section-12.5
        //# Note that it is not possible to send the following frames in 0-RTT
        //# packets for various reasons: ACK, CRYPTO, HANDSHAKE_DONE, NEW_TOKEN,
        //# PATH_RESPONSE, and RETIRE_CONNECTION_ID.
        let zero_rtt = builder.kind == crate::types::PacketKind::ZeroRtt;
        #[cfg(feature = "testing")]
        let ack_last = self.misbehave.crypto_before_ack && space != SpaceId::Data;
        #[cfg(not(feature = "testing"))]
        let ack_last = false;
        if !zero_rtt && !ack_last {
            self.write_ack(now, space, buf, max_end, &mut sent);
        }
        let probing = self.spaces[space.index()].probes > 0;
        if probing && space != SpaceId::Data {
            // The first probe of a pair took the pending handshake data; the
            // second carries it again rather than a PING, or a lost first probe
            // leaves a server a connection that begins without CRYPTO.
            self.requeue_unacked_crypto(space);
        }
        let mut eliciting = false;
        #[cfg(feature = "testing")]
        if space == SpaceId::Data && !self.raw_frames.is_empty() {
            buf.append(&mut self.raw_frames);
            eliciting = true;
        }
        if space == SpaceId::Data && self.migration.challenge_due() {
            eliciting |= self.write_path_challenge(now, buf, max_end);
        }
        if cc_ok || probing {
            if zero_rtt {
                let before = buf.len();
                self.streams.write_control(buf, max_end, &mut sent);
                eliciting |= buf.len() > before;
            } else {
                if space == SpaceId::Data {
                    eliciting |= self.write_data_control(now, buf, max_end, &mut sent);
                }
                eliciting |= self.write_crypto(space, buf, max_end, &mut sent);
            }
            if ack_last {
                self.write_ack(now, space, buf, max_end, &mut sent);
            }
            if space == SpaceId::Data && (self.handshake_complete || zero_rtt) {
                // Datagrams (1-RTT only: their limit is not remembered for
                // 0-RTT) go before stream data, which fills the room left.
                if self.handshake_complete && self.datagrams.has_outgoing() {
                    eliciting |= self.write_datagrams(buf, max_end, &mut sent);
                }
                let before = buf.len();
                self.streams.write_stream_frames(buf, max_end, &mut sent);
                eliciting |= buf.len() > before;
            }
            let ping = probing || (space == SpaceId::Data && self.ping_pending);
            if !eliciting && ping && buf.len() < max_end {
                // A probe wants its ACK at once; peers of the ACK frequency
                // extension understand IMMEDIATE_ACK, others get a PING.
                let immediate =
                    probing && space == SpaceId::Data && self.peer_min_ack_delay().is_some();
                if immediate {
                    Frame::ImmediateAck
                } else {
                    Frame::Ping
                }
                .encode(buf);
                eliciting = true;
            }
            if eliciting {
                if space == SpaceId::Data {
                    self.ping_pending = false;
                }
                let s = &mut self.spaces[space.index()];
                if s.probes > 0 {
                    s.probes -= 1;
                    self.rare_stats().probes_out += 1;
                }
            }
        }
        if buf.len() == payload_start && min_size > 0 {
            // Nothing to say, but the datagram must reach its size (RFC 9000
            // §14.1): a packet of PADDING.
            Frame::Padding { len: 1 }.encode(buf);
        }
        if buf.len() == payload_start {
            buf.truncate(builder.start);
            return false;
        }
        if std::mem::take(&mut self.migration.pad) {
            //= https://www.rfc-editor.org/rfc/rfc9000#section-8.2.1
            //# An endpoint MUST expand datagrams that contain a PATH_CHALLENGE frame
            //# to at least the smallest allowed maximum datagram size of 1200
            //# bytes, unless the anti-amplification limit for the path does not
            //# permit sending a datagram of this size.
            min_size = min_size.max(crate::packet::MIN_INITIAL_SIZE.min(end - builder.start));
        }
        let in_flight = eliciting || min_size > 0;
        self.end_packet(
            now, space, builder, buf, min_size, sent, eliciting, in_flight,
        );
        true
    }

    /// Piggyback (or send) an ACK for `space` if there is anything new to report.
    fn write_ack(
        &mut self,
        now: Instant,
        space: SpaceId,
        buf: &mut Vec<u8>,
        max_end: usize,
        sent: &mut SentFrames,
    ) {
        let exponent = match space {
            SpaceId::Data => self.config.ack_delay_exponent,
            _ => 3,
        };
        let ack = &mut self.spaces[space.index()].ack;
        #[cfg(feature = "testing")]
        if self.misbehave.no_acks {
            (ack.dirty, ack.immediate, ack.deadline) = (false, false, None);
            ack.unacked_eliciting = 0;
            return;
        }
        if !ack.dirty || ack.ranges.is_empty() {
            return;
        }
        let delay = ack.largest.map_or(0, |(_, at)| {
            now.saturating_duration_since(at).as_micros() as u64
        }) >> exponent;
        let ecn = ack.ecn_seen.then_some(&ack.ecn);
        let room = max_end.saturating_sub(buf.len());
        let n = frame::encode_ack(
            buf,
            ack.ranges.iter().rev(),
            delay,
            ecn,
            MAX_ACK_RANGES,
            room,
        );
        if n > 0 {
            sent.set_ack_largest(ack.ranges.max());
            ack.on_ack_sent();
            self.stats.acks_out += 1;
        }
    }

    /// A probe in `space` with no handshake data waiting: send again what the
    /// peer has not acknowledged.
    pub(super) fn requeue_unacked_crypto(&mut self, space: SpaceId) {
        //= https://www.rfc-editor.org/rfc/rfc9002#section-6.2.4
        //# A probe packet MAY carry retransmitted unacknowledged data when new
        //# data is unavailable, when flow control does not permit new data to
        //# be sent, or to opportunistically reduce loss recovery delay.
        let Some(c) = self.spaces[space.index()].crypto.as_mut() else {
            return;
        };
        let crypto = &mut c.send;
        if !crypto.has_pending() {
            let written = usize::try_from(crypto.written()).unwrap_or(usize::MAX);
            crypto.on_lost(0, written, false);
        }
    }

    /// One CRYPTO frame, if handshake data is waiting.
    fn write_crypto(
        &mut self,
        space: SpaceId,
        buf: &mut Vec<u8>,
        max_end: usize,
        sent: &mut SentFrames,
    ) -> bool {
        let s = &mut self.spaces[space.index()];
        let Some(c) = s.crypto.as_mut() else {
            return false;
        };
        let crypto = &mut c.send;
        let room = max_end.saturating_sub(buf.len());
        // No range starts beyond what was written.
        let header = frame::crypto_header_len(crypto.written(), room);
        if room <= header || !crypto.has_pending() {
            return false;
        }
        let range = if s.probes > 0 {
            // RFC 9002 §6.2.4: probes carry the data most likely lost. Each PTO
            // marks the whole unacknowledged flight lost; probes that always
            // began at its start resent the same first datagrams while a
            // later part stayed lost. Go on after the last CRYPTO data sent:
            // what follows it went out the longest time ago.
            crypto.next_range_from(s.probe_cursor, room - header)
        } else {
            crypto.next_range(room - header)
        };
        let Some(range) = range else {
            return false;
        };
        s.probe_cursor = range.offset + range.len as u64;
        frame::encode_crypto_header(buf, range.offset, range.len);
        crypto.copy_range(range.offset, range.len, buf);
        sent.set_crypto(range.offset, range.len as u32);
        true
    }

    /// Connection-level control frames of the 1-RTT space. Returns whether any was written.
    fn write_data_control(
        &mut self,
        now: Instant,
        buf: &mut Vec<u8>,
        max_end: usize,
        sent: &mut SentFrames,
    ) -> bool {
        let before = buf.len();
        if let (Some(min_ack_delay), true) = (self.peer_min_ack_delay(), self.handshake_confirmed) {
            let (cwnd, mtu) = (self.recovery.congestion_window(), u64::from(self.path.mtu));
            let (srtt, threshold) = (
                self.recovery.rtt().smoothed(),
                self.recovery.packet_threshold(),
            );
            self.ack_freq
                .update(now, cwnd, mtu, srtt, threshold, min_ack_delay);
            if let Some(f) = self.ack_freq.take() {
                let frame = Frame::AckFrequency(f);
                if buf.len() + frame.encoded_len() <= max_end {
                    frame.encode(buf);
                    sent.push_control(Control::AckFrequency(f.seq));
                } else {
                    self.ack_freq.put_back(f);
                }
            }
        }
        let fits = |buf: &Vec<u8>, f: &Frame<'_>| buf.len() + f.encoded_len() <= max_end;
        while let Some(&data) = self.path_responses.front() {
            let f = Frame::PathResponse(data);
            if !fits(buf, &f) {
                break;
            }
            f.encode(buf);
            self.path_responses.pop_front();
            //= https://www.rfc-editor.org/rfc/rfc9000#section-8.2.2
            //# An endpoint MUST expand datagrams that contain a PATH_RESPONSE frame
            //# to at least the smallest allowed maximum datagram size of 1200 bytes.
            self.migration.pad = true;
        }

        if self.handshake_done_pending && fits(buf, &Frame::HandshakeDone) {
            Frame::HandshakeDone.encode(buf);
            self.handshake_done_pending = false;
            self.handshake_done_unacked = true;
            sent.handshake_done = true;
        }
        self.write_new_token(buf, max_end, sent);
        while self.local_cids.has_announcement() && max_end - buf.len() > 64 {
            let Some((seq, cid, token)) = self.local_cids.next_announcement(&self.reset_key) else {
                break;
            };
            let f = NewConnectionId {
                seq,
                retire_prior_to: 0,
                cid,
                reset_token: token.0,
            };
            Frame::NewConnectionId(f).encode(buf);
            sent.push_control(Control::NewConnectionId(seq));
        }
        while let Some(seq) = self.peer_cids.next_retirement() {
            let f = Frame::RetireConnectionId { seq };
            if !fits(buf, &f) {
                break;
            }
            f.encode(buf);
            self.peer_cids.on_retirement_sent(seq);
            sent.push_control(Control::RetireConnectionId(seq));
        }
        self.streams.write_control(buf, max_end, sent);
        buf.len() > before
    }

    /// The peer's min_ack_delay (µs), when it supports the ACK frequency extension.
    fn peer_min_ack_delay(&self) -> Option<u64> {
        self.peer_params.as_ref().and_then(|p| p.min_ack_delay)
    }
}
