//! The handshake: CRYPTO frames to and from TLS, installing and discarding keys,
//! checking the peer's transport parameters, and confirming the handshake.

use std::time::Instant;

use super::close::State;
use super::timers::Timer;
use super::{Connection, Event};
use crate::crypto::LevelKeys;
use crate::crypto::one_rtt::OneRttKeys;
use crate::error::TransportError;
use crate::types::SpaceId;

impl Connection {
    /// The space whose CRYPTO data TLS expects next.
    fn crypto_read_space(&self) -> SpaceId {
        if self.handshake_complete {
            SpaceId::Data
        } else if self.spaces[SpaceId::Handshake.index()].keys.is_some() {
            SpaceId::Handshake
        } else {
            SpaceId::Initial
        }
    }

    /// The space new CRYPTO data from TLS goes to.
    fn crypto_write_space(&self) -> SpaceId {
        if self.one_rtt.is_some() {
            SpaceId::Data
        } else if self.spaces[SpaceId::Handshake.index()].keys.is_some() {
            SpaceId::Handshake
        } else {
            SpaceId::Initial
        }
    }

    /// Whether the peer sent Initial CRYPTO data (for a server: the start of
    /// a ClientHello, or a later piece of one split over several Initials).
    pub(crate) fn client_hello_begun(&self) -> bool {
        self.spaces[SpaceId::Initial.index()]
            .crypto
            .as_ref()
            .is_some_and(|c| c.recv.max_offset() > 0)
    }

    /// A CRYPTO frame arrived in `space`.
    pub(crate) fn on_crypto_frame(
        &mut self,
        now: Instant,
        space: SpaceId,
        offset: u64,
        data: &[u8],
    ) -> Result<(), TransportError> {
        let limit = self.config.crypto_buffer as u64;
        let read_space = self.crypto_read_space();
        let recv = &mut self.spaces[space.index()].crypto_mut().recv;
        let end = offset + data.len() as u64;
        //= https://www.rfc-editor.org/rfc/rfc9000#section-7.5
        //# Implementations MUST support buffering at least 4096 bytes of data
        //# received in out-of-order CRYPTO frames. ... If an endpoint does not
        //# expand its buffer, it MUST close the connection with a
        //# CRYPTO_BUFFER_EXCEEDED error code.
        if end > recv.read_offset() + limit {
            return Err(TransportError::crypto_buffer_exceeded(
                "too much out-of-order CRYPTO data",
            ));
        }
        if space < read_space && end > recv.max_offset() {
            //= https://www.rfc-editor.org/rfc/rfc9001#section-4.1.3
            //# If an endpoint receives ... CRYPTO frames at an encryption level
            //# that is older than the current one, with data beyond what was
            //# previously received, it MUST treat this as a connection error of
            //# type PROTOCOL_VIOLATION.
            return Err(TransportError::protocol_violation(
                "new CRYPTO data at an old level",
            ));
        }
        let duplicate = end <= recv.read_offset();
        recv.insert(offset, data);
        if space == read_space {
            self.feed_tls(now)?;
        }
        if duplicate && space == SpaceId::Initial {
            self.client_lacks_our_initial();
        }
        Ok(())
    }

    /// Server: the client sent its ClientHello again, or probed with a PING,
    /// in an Initial: it did not get our Initial (the ServerHello), which
    /// its ACKs would otherwise have made us resend. Send our unacknowledged
    /// handshake data now rather than at our PTO (1 s, then 2 s, before we
    /// have an RTT sample), a few times a connection, within the
    /// amplification limit as ever.
    pub(crate) fn client_lacks_our_initial(&mut self) {
        //= https://www.rfc-editor.org/rfc/rfc9002#section-6.2.3
        //# When a server receives an Initial packet containing duplicate
        //# CRYPTO data, it can assume the client did not receive all of the
        //# server's CRYPTO data sent in Initial packets, or the client's
        //# estimated RTT is too small.
        //# ... an endpoint MAY, for a limited number of times per connection,
        //# send a packet containing unacknowledged CRYPTO data earlier than
        //# the PTO expiry, subject to the address validation limits
        const MAX_EARLY_RESENDS: u8 = 3;
        // Read first: a mutable index would bring a dropped space back.
        let initial = &self.spaces[SpaceId::Initial.index()];
        if !self.side.is_server()
            || initial.keys.is_none()
            || initial.early_resends >= MAX_EARLY_RESENDS
        {
            return;
        }
        let mut resent = false;
        for space in [SpaceId::Initial, SpaceId::Handshake] {
            let s = &self.spaces[space.index()];
            if s.keys.is_some() && !s.discarded && s.crypto_unacked() {
                self.requeue_unacked_crypto(space);
                resent = true;
            }
        }
        self.spaces[SpaceId::Initial.index()].early_resends += u8::from(resent);
    }

    /// Pass contiguous CRYPTO data of the current read level to TLS, then collect
    /// what TLS has to say. Repeats while the read level advances (data for the next
    /// level may already be buffered).
    fn feed_tls(&mut self, now: Instant) -> Result<(), TransportError> {
        loop {
            let space = self.crypto_read_space();
            let mut fed = false;
            let mut scratch = std::mem::take(&mut self.crypto_scratch);
            loop {
                let recv = &mut self.spaces[space.index()].crypto_mut().recv;
                scratch.resize(recv.readable().min(16 * 1024), 0);
                let n = recv.read(&mut scratch);
                if n == 0 {
                    break;
                }
                fed = true;
                if let Err(e) = self.tls.read_handshake(&scratch[..n]) {
                    self.crypto_scratch = scratch;
                    return Err(e);
                }
            }
            self.crypto_scratch = scratch;
            if !fed {
                return Ok(());
            }
            self.drive_tls(now)?;
            if self.crypto_read_space() == space {
                return Ok(());
            }
        }
    }

    /// Collect handshake bytes and key changes from TLS.
    pub(crate) fn drive_tls(&mut self, now: Instant) -> Result<(), TransportError> {
        if self.is_closed() {
            return Ok(()); // TLS is gone (see `shed`)
        }
        let mut out = Vec::new();
        loop {
            out.clear();
            let change = self.tls.write_handshake_keys(&mut out)?;
            if !out.is_empty() {
                let space = self.crypto_write_space();
                self.spaces[space.index()].crypto_mut().send.write(&out);
            }
            match change {
                Some(LevelKeys::Handshake(keys)) => {
                    if self.side.is_server() {
                        // The ClientHello is in: check its version_information
                        // before answering (RFC 9368 §4), not at the end of a
                        // handshake a downgraded client could never finish.
                        // Its grease_quic_bit counts from the ServerHello on
                        // (RFC 9287 §3.1: every packet sent after the
                        // parameters are processed).
                        if let Ok(Some(params)) = self.tls.peer_params(self.side) {
                            self.check_version_information(&params)?;
                            self.bits.on_peer_params(params.grease_quic_bit);
                        }
                    }
                    self.spaces[SpaceId::Handshake.index()].keys = Some(keys);
                    // The client arms a Handshake PTO as soon as it has the keys.
                    let path = self.path_state();
                    self.recovery.update_timer(now, &path);
                }
                Some(LevelKeys::OneRtt(keys, next)) => {
                    let reserve = self.tls.one_rtt_reserve(self.side);
                    self.one_rtt = Some(OneRttKeys::new(keys, next).with_reserve(reserve));
                }
                None if out.is_empty() => break,
                None => {}
            }
        }
        if self.side.is_server() && self.accept_0rtt {
            self.install_server_0rtt();
        }
        if !self.handshake_complete && !self.tls.is_handshaking() {
            // Only now: while a resumed handshake is under way, rustls reports the
            // parameters remembered from the previous session (for 0-RTT).
            let params = self.tls.peer_params(self.side)?;
            let params = params.ok_or_else(|| {
                TransportError::transport_parameter("peer sent no transport parameters")
            })?;
            self.apply_peer_params(now, params)?;
            self.qlog_peer_params(now);
            self.on_handshake_complete(now)?;
        }
        if self.side.is_server() && self.handshake_complete {
            self.shed_handshake_state();
        }
        Ok(())
    }

    /// A server's handshake is over: what only the handshake needed goes
    /// (TLS, the CRYPTO buffers of the spaces left behind, the scratch
    /// buffer), so an idle connection holds little.
    fn shed_handshake_state(&mut self) {
        self.versions.forget_original_initial();
        if !self.tls.shed_after_handshake(self.side) {
            return;
        }
        self.crypto_scratch = Vec::new();
        for space in [SpaceId::Initial, SpaceId::Handshake] {
            // Read first: indexing a dropped space mutably brings it back.
            if self.spaces[space.index()].crypto.is_none() {
                continue;
            }
            if let Some(c) = self.spaces[space.index()].crypto.as_mut() {
                c.recv = crate::stream::RecvBuffer::new();
            }
        }
    }

    /// Check and apply the peer's transport parameters (RFC 9000 §7.3, §7.4).
    fn apply_peer_params(
        &mut self,
        now: Instant,
        params: crate::transport_params::TransportParameters,
    ) -> Result<(), TransportError> {
        //= https://www.rfc-editor.org/rfc/rfc9000#section-7.3
        //# An endpoint MUST treat the absence of the initial_source_connection_id
        //# transport parameter from either endpoint or the absence of the
        //# original_destination_connection_id transport parameter from the server
        //# as a connection error of type TRANSPORT_PARAMETER_ERROR.
        //# An endpoint MUST treat the following as a connection error of type
        //# TRANSPORT_PARAMETER_ERROR or PROTOCOL_VIOLATION:
        //# *  absence of the retry_source_connection_id transport parameter from
        //#    the server after receiving a Retry packet,
        //# *  presence of the retry_source_connection_id transport parameter
        //#    when no Retry packet was received, or
        //# *  a mismatch between values received from a peer in these transport
        //#    parameters and the value sent in the corresponding Destination or
        //#    Source Connection ID fields of Initial packets.
        if params.initial_source_connection_id != Some(self.peer_cids.active()) {
            return Err(TransportError::transport_parameter(
                "initial_source_connection_id mismatch",
            ));
        }
        if self.side.is_client() {
            if params.original_destination_connection_id != Some(self.orig_dst_cid) {
                return Err(TransportError::transport_parameter(
                    "original_destination_connection_id mismatch",
                ));
            }
            if params.retry_source_connection_id != self.retry_src_cid {
                return Err(TransportError::transport_parameter(
                    "retry_source_connection_id mismatch",
                ));
            }
            if let Some(token) = params.stateless_reset_token {
                self.peer_cids
                    .set_initial_reset_token(token, &mut self.cid_events);
            }
            if let Some(pa) = &params.preferred_address {
                self.note_preferred_address(pa)?;
            }
        }
        self.check_version_information(&params)?;
        // Without 0-RTT, simply the streams' limits.
        self.finish_0rtt(now, &params)?;
        self.mtu.set_peer_max(params.max_udp_payload_size);
        self.local_cids
            .set_peer_limit(params.active_connection_id_limit);
        if let Some(min_ack_delay) = params.min_ack_delay {
            tracing::trace!(min_ack_delay, "peer supports ACK frequency");
        }
        self.bits.on_peer_params(params.grease_quic_bit);
        self.peer_params = Some(params);
        Ok(())
    }

    fn on_handshake_complete(&mut self, now: Instant) -> Result<(), TransportError> {
        if self.peer_params.is_none() {
            return Err(TransportError::transport_parameter(
                "peer sent no transport parameters",
            ));
        }
        self.handshake_complete = true;
        if matches!(self.state, State::Handshake) {
            self.state = State::Established;
        }
        self.events.push_back(Event::Connected);
        self.qlog_state(now, "handshake_complete");
        self.reset_idle_timer(now);
        // Spare connection IDs serve only a later change of path, the next
        // 1-RTT keys only a key update: preparing them a PTO from now spares a
        // short connection the work (per ID a reset token, a route and a
        // NEW_CONNECTION_ID frame on both sides; six key derivations).
        //= https://www.rfc-editor.org/rfc/rfc9000#section-5.1.1
        //# An endpoint SHOULD ensure that its peer has a sufficient number of
        //# available and unused connection IDs.
        let pto = self.recovery.pto_base(SpaceId::Data, &self.path_state());
        self.timers.set(Timer::Prepare, now + pto);
        if self.config.active_migration {
            // A peer that may migrate gets its spare IDs with the first 1-RTT
            // packets (beside HANDSHAKE_DONE), to move right after the handshake.
            self.top_up_cids();
        }
        if self.side.is_server() {
            //= https://www.rfc-editor.org/rfc/rfc9001#section-4.1.2
            //# the TLS handshake is considered confirmed at the server when the
            //# handshake completes.
            self.handshake_done_pending = true;
            self.confirm_handshake(now);
            self.ask_new_token(now);
        }
        Ok(())
    }

    /// Give back the send batch's scratch vector if a batch left it here
    /// (the others live in the thread's pool: `scratch.rs`). Called between
    /// packets, when it is empty.
    pub(crate) fn release_scratch(&mut self) {
        if self.seal_jobs.capacity() != 0 {
            super::scratch::put_seal(std::mem::take(&mut self.seal_jobs));
        }
    }

    /// The handshake is confirmed and 1-RTT CRYPTO data (a server's tickets)
    /// was acknowledged: give back what only the handshake used, the CRYPTO
    /// stream (only its offsets are kept) and the random generator (a seed is
    /// kept). Not left to `trim_idle`: a busy connection is never quiet for
    /// it (issue #33: ~0.8 KiB of every serving connection). Both come back
    /// if needed again.
    //= https://www.rfc-editor.org/rfc/rfc9001#section-4.9.2
    //# An endpoint MUST discard its Handshake keys when the TLS handshake is
    //# confirmed
    pub(crate) fn shed_handshake_leftovers(&mut self) {
        let data = &mut self.spaces[SpaceId::Data.index()];
        data.park_crypto();
        if data.crypto.is_none() {
            self.rng.park();
            self.crypto_scratch = Vec::new();
        }
    }

    /// Issue new connection IDs until the peer holds as many as it allows.
    pub(crate) fn top_up_cids(&mut self) {
        let (cid_gen, rng) = (&self.cid_gen, &mut self.rng);
        let mut generate = || cid_gen.generate(rng);
        self.local_cids.top_up(&mut generate, &mut self.cid_events);
    }

    /// The handshake is confirmed: Handshake keys go (RFC 9001 §4.9.2).
    pub(crate) fn confirm_handshake(&mut self, now: Instant) {
        if self.handshake_confirmed {
            return;
        }
        self.handshake_confirmed = true;
        self.qlog_state(now, "handshake_confirmed");
        self.discard_space(now, SpaceId::Handshake);
        if self.side.is_client() {
            self.follow_preferred_address(now);
        }
    }

    /// Drop a space's keys and everything in flight in it (RFC 9001 §4.9).
    pub(crate) fn discard_space(&mut self, now: Instant, space: SpaceId) {
        // Read first: indexing a dropped space mutably brings it back (a
        // late Handshake packet discards Initial again).
        if self.spaces[space.index()].discarded {
            return;
        }
        let s = &mut self.spaces[space.index()];
        s.discarded = true;
        s.keys = None;
        s.crypto = None;
        s.probes = 0;
        s.ack = super::spaces::AckState::new();
        let path = self.path_state();
        let (acked, mut dropped) = super::scratch::take_ack();
        self.recovery.discard_space(space, now, &path, &mut dropped);
        super::scratch::put_ack(acked, dropped);
        self.spaces.release_early();
        if space == SpaceId::Initial && self.side.is_server() {
            // Retransmitted Initials with the original DCID no longer need routing.
            self.cid_events
                .push_back(super::CidEvent::Retired(self.orig_dst_cid));
        }
    }

    /// Key discard timer after a key update: keep old keys ~3 PTO (RFC 9001 §6.5).
    /// The keys for the update after are derived a PTO from now.
    pub(crate) fn after_key_update(&mut self, now: Instant, local: bool) {
        if let (Some(q), Some(keys)) = (self.qlog.as_mut(), self.one_rtt.as_ref()) {
            q.key_updated(now, local, keys.updates());
        }
        let pto = self.recovery.pto_base(SpaceId::Data, &self.path_state());
        self.timers.set(Timer::KeyDiscard, now + 3 * pto);
        //= https://www.rfc-editor.org/rfc/rfc9001#section-6.3
        //# Endpoints SHOULD instead defer the creation of the next set of
        //# receive packet protection keys until some time after a key update
        //# completes, up to three times the PTO
        self.timers.set(Timer::Prepare, now + pto);
    }
}
