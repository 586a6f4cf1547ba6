//! Frames from the peer: dispatch to streams, crypto, connection IDs and close
//! handling; ACK frames into loss detection (what then happens to the
//! packets acknowledged or lost is in `loss.rs`).

use std::time::{Duration, Instant};

use bytes::Bytes;

use super::Connection;
use super::scratch;
use crate::cid::ConnectionId;
use crate::error::TransportError;
use crate::frame::{Ack, AckFrequency, Frame};
use crate::types::SpaceId;

/// Most PATH_RESPONSEs we owe at once; a newer challenge displaces the oldest.
pub(crate) const MAX_PATH_RESPONSES: usize = 4;

impl Connection {
    /// Process one frame from the peer. An error names the frame's type unless
    /// it already names one.
    /// `owner`, when given, is the shared receive buffer the frame was parsed
    /// from (STREAM data may stay there).
    pub(crate) fn on_frame(
        &mut self,
        now: Instant,
        space: SpaceId,
        dcid: &ConnectionId,
        frame: Frame<'_>,
        owner: Option<&Bytes>,
    ) -> Result<(), TransportError> {
        // By reference, so the type is worked out on the error path only.
        self.dispatch_frame(now, space, dcid, &frame, owner)
            .map_err(|e| {
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
        owner: Option<&Bytes>,
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
            Frame::Stream(s) => {
                self.streams
                    .on_stream_frame(s.id, s.offset, (s.data, owner), s.fin)?
            }
            Frame::ResetStream(f) => self.streams.on_reset_stream(f)?,
            Frame::StopSending(f) => self.streams.on_stop_sending(f)?,
            Frame::MaxData(max) => self.streams.on_max_data(*max),
            Frame::MaxStreamData { id, max } => self.streams.on_max_stream_data(*id, *max)?,
            Frame::MaxStreams { dir, max } => self.streams.on_max_streams(*dir, *max),
            // Credit follows the application's reads; what they returned
            // goes out now if the peer is blocked.
            Frame::DataBlocked { .. } => self.streams.unblock_peer(),
            Frame::StreamsBlocked { .. } => {}
            Frame::StreamDataBlocked { id, .. } => self.streams.on_stream_data_blocked(*id)?,
            Frame::NewToken { token } => self.on_new_token(now, token)?,
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
