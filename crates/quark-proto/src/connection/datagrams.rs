//! Unreliable datagrams (RFC 9221): the application's send and receive queues,
//! negotiation through max_datagram_frame_size, and DATAGRAM frames in and out.
//!
//! Datagrams are congestion controlled and ack-eliciting, but a lost one is
//! only counted, never sent again. Both queues are bounded in bytes and drop
//! their oldest datagram when full.

use std::collections::VecDeque;

use bytes::Bytes;

use super::sent::SentFrames;
use super::{Connection, Event};
use crate::error::TransportError;
use crate::frame::Frame;
use crate::varint::varint_size;

/// Bytes each queued datagram is charged beyond its payload (its `Bytes`
/// handle, allocation and queue slot), so a flood of empty datagrams is
/// bounded as well as one of large ones.
pub const DATAGRAM_OVERHEAD: usize = 64;

/// Largest 1-RTT packet number encoding (RFC 9000 §17.1) and the AEAD tag of
/// every QUIC v1 cipher suite: what a packet spends besides header and frames.
const MAX_PN_LEN: usize = 4;
const TAG_LEN: usize = 16;

/// Why [`Connection::send_datagram`] refused a datagram.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SendDatagramError {
    /// The handshake has not completed, or the connection is closed.
    NotConnected,
    /// The peer did not advertise max_datagram_frame_size (RFC 9221 §3).
    UnsupportedByPeer,
    /// Larger than [`Connection::max_datagram_payload`].
    TooLarge,
    /// The send queue is full ([`Connection::try_send_datagram`] only); the
    /// datagram comes back. `Event::DatagramsWritable` follows when room frees.
    Blocked(Bytes),
}

impl std::fmt::Display for SendDatagramError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SendDatagramError::NotConnected => "connection not established",
            SendDatagramError::UnsupportedByPeer => "peer does not accept datagrams",
            SendDatagramError::TooLarge => "datagram too large",
            SendDatagramError::Blocked(_) => "datagram send queue full",
        })
    }
}

impl std::error::Error for SendDatagramError {}

/// The two queues, boxed on first use and dropped by the idle trim when
/// empty: 80 bytes inline that connections without datagrams (most) need
/// not carry (issue #30).
#[derive(Default)]
pub(crate) struct Datagrams(Option<Box<Queues>>);

#[derive(Default)]
struct Queues {
    outgoing: VecDeque<Bytes>,
    /// Charged bytes (payload + overhead) of `outgoing`.
    outgoing_bytes: usize,
    incoming: VecDeque<Bytes>,
    incoming_bytes: usize,
    /// `try_send_datagram` was refused: say when room frees.
    send_blocked: bool,
}

impl Datagrams {
    /// Whether datagrams wait to be sent (one branch on the send path).
    pub(crate) fn has_outgoing(&self) -> bool {
        self.0.as_ref().is_some_and(|q| !q.outgoing.is_empty())
    }

    /// Heap held by queued datagrams, as charged.
    pub(crate) fn memory(&self) -> usize {
        self.0
            .as_ref()
            .map_or(0, |q| q.outgoing_bytes + q.incoming_bytes)
    }

    fn queues(&mut self) -> &mut Queues {
        self.0.get_or_insert_with(Box::default)
    }

    /// Quiet: drop the queues if nothing is in them or owed.
    pub(crate) fn shrink_idle(&mut self) {
        if self
            .0
            .as_ref()
            .is_some_and(|q| q.outgoing.is_empty() && q.incoming.is_empty() && !q.send_blocked)
        {
            self.0 = None;
        }
    }

    #[cfg(feature = "testing")]
    pub(crate) fn incoming_len(&self) -> usize {
        self.0.as_ref().map_or(0, |q| q.incoming.len())
    }
}

fn cost(data: &Bytes) -> usize {
    data.len() + DATAGRAM_OVERHEAD
}

/// The largest payload a DATAGRAM frame (type 0x31, with a length) of at most
/// `frame` bytes can carry.
fn payload_within(frame: usize) -> usize {
    frame.saturating_sub(1 + varint_size(frame as u64))
}

impl Connection {
    /// The largest datagram payload [`send_datagram`](Self::send_datagram)
    /// takes now: what fits a 1-RTT packet at the current path MTU and the
    /// peer's max_datagram_frame_size. `None` while the peer's transport
    /// parameters are unknown or it does not accept datagrams.
    pub fn max_datagram_payload(&self) -> Option<usize> {
        //= https://www.rfc-editor.org/rfc/rfc9221#section-3
        //# The default for this parameter is 0, which indicates that the
        //# endpoint does not support DATAGRAM frames.
        let peer = self
            .peer_params
            .as_ref()?
            .max_datagram_frame_size
            .filter(|&n| n > 0)?;
        let peer = usize::try_from(peer).unwrap_or(usize::MAX);
        let packet = usize::from(self.path.mtu)
            .saturating_sub(1 + self.peer_cids.active().len() + MAX_PN_LEN + TAG_LEN);
        Some(payload_within(packet.min(peer)))
    }

    /// Queue a datagram for sending. When the send queue
    /// (`TransportConfig::datagram_send_buffer`) is full the oldest queued
    /// datagrams are dropped to make room (counted in
    /// `ConnectionStats::datagram_frames_dropped_out`).
    pub fn send_datagram(&mut self, data: Bytes) -> Result<(), SendDatagramError> {
        self.check_datagram(&data)?;
        let limit = self.config.datagram_send_buffer;
        let d = self.datagrams.queues();
        while d.outgoing_bytes + cost(&data) > limit {
            let Some(old) = d.outgoing.pop_front() else {
                break; // alone it may exceed a tiny limit: still sent
            };
            d.outgoing_bytes -= cost(&old);
            self.rare_stats
                .get_or_insert_with(Box::default)
                .datagram_frames_dropped_out += 1;
        }
        d.outgoing_bytes += cost(&data);
        d.outgoing.push_back(data);
        Ok(())
    }

    /// Queue a datagram unless the send queue is full: then it comes back in
    /// `SendDatagramError::Blocked`, and `Event::DatagramsWritable` follows
    /// once queued datagrams went out.
    pub fn try_send_datagram(&mut self, data: Bytes) -> Result<(), SendDatagramError> {
        self.check_datagram(&data)?;
        let d = self.datagrams.queues();
        if !d.outgoing.is_empty()
            && d.outgoing_bytes + cost(&data) > self.config.datagram_send_buffer
        {
            d.send_blocked = true;
            return Err(SendDatagramError::Blocked(data));
        }
        d.outgoing_bytes += cost(&data);
        d.outgoing.push_back(data);
        Ok(())
    }

    /// The oldest datagram received and not yet read.
    pub fn read_datagram(&mut self) -> Option<Bytes> {
        let q = self.datagrams.0.as_mut()?;
        let data = q.incoming.pop_front()?;
        q.incoming_bytes -= cost(&data);
        Some(data)
    }

    fn check_datagram(&self, data: &Bytes) -> Result<(), SendDatagramError> {
        if !self.handshake_complete || self.is_closed() {
            return Err(SendDatagramError::NotConnected);
        }
        //= https://www.rfc-editor.org/rfc/rfc9221#section-3
        //# An endpoint MUST NOT send DATAGRAM frames until it has received the
        //# max_datagram_frame_size transport parameter with a non-zero value
        //# during the handshake
        let max = self
            .max_datagram_payload()
            .ok_or(SendDatagramError::UnsupportedByPeer)?;
        //= https://www.rfc-editor.org/rfc/rfc9221#section-3
        //# An endpoint MUST NOT send DATAGRAM frames that are larger than the
        //# max_datagram_frame_size value it has received from its peer.
        if data.len() > max {
            return Err(SendDatagramError::TooLarge);
        }
        Ok(())
    }

    /// A DATAGRAM frame arrived.
    pub(super) fn on_datagram_frame(&mut self, data: &[u8]) -> Result<(), TransportError> {
        //= https://www.rfc-editor.org/rfc/rfc9221#section-3
        //# An endpoint that receives a DATAGRAM frame when it has not indicated
        //# support via the transport parameter MUST terminate the connection
        //# with an error of type PROTOCOL_VIOLATION.
        let Some(max) = self.local_params.max_datagram_frame_size.filter(|&n| n > 0) else {
            return Err(TransportError::protocol_violation(
                "DATAGRAM frames not negotiated",
            ));
        };
        //= https://www.rfc-editor.org/rfc/rfc9221#section-3
        //# An endpoint that receives a DATAGRAM frame that is larger than the
        //# value it sent in its max_datagram_frame_size transport parameter
        //# MUST terminate the connection with an error of type
        //# PROTOCOL_VIOLATION.
        // The decoded frame no longer says whether it had a length field, so
        // the shortest form (type byte + payload) is measured: never stricter
        // than the RFC, at most 8 bytes more lenient.
        if 1 + data.len() as u64 > max {
            return Err(TransportError::protocol_violation(
                "DATAGRAM frame larger than max_datagram_frame_size",
            ));
        }
        self.rare_stats
            .get_or_insert_with(Box::default)
            .datagram_frames_in += 1;
        let data = Bytes::copy_from_slice(data);
        let limit = self.config.datagram_receive_buffer;
        let d = self.datagrams.queues();
        // Bounded: the application reads too slowly, the oldest go.
        while d.incoming_bytes + cost(&data) > limit {
            let Some(old) = d.incoming.pop_front() else {
                break;
            };
            d.incoming_bytes -= cost(&old);
            self.rare_stats
                .get_or_insert_with(Box::default)
                .datagram_frames_dropped_in += 1;
        }
        if d.incoming.is_empty() {
            // One event per wake-up, not per datagram: the reader drains.
            self.events.push_back(Event::DatagramReceived);
        }
        d.incoming_bytes += cost(&data);
        d.incoming.push_back(data);
        Ok(())
    }

    /// Write queued datagrams that fit before `max_end`, oldest first.
    /// Returns whether any was written.
    pub(super) fn write_datagrams(
        &mut self,
        buf: &mut Vec<u8>,
        max_end: usize,
        sent: &mut SentFrames,
    ) -> bool {
        // The path MTU may have shrunk since a datagram was queued.
        let max = self.max_datagram_payload().unwrap_or(0);
        let mut freed = false;
        let mut wrote = false;
        let Some(q) = self.datagrams.0.as_mut() else {
            return false;
        };
        while let Some(data) = q.outgoing.front() {
            if data.len() > max {
                self.rare_stats
                    .get_or_insert_with(Box::default)
                    .datagram_frames_dropped_out += 1;
            } else {
                let frame = Frame::Datagram { data };
                if buf.len() + frame.encoded_len() > max_end {
                    break; // the next packet starts with it
                }
                frame.encode(buf);
                sent.datagrams = sent.datagrams.saturating_add(1);
                self.rare_stats
                    .get_or_insert_with(Box::default)
                    .datagram_frames_out += 1;
                wrote = true;
            }
            let data = q.outgoing.pop_front().expect("front exists");
            q.outgoing_bytes -= cost(&data);
            freed = true;
        }
        if freed && q.send_blocked {
            q.send_blocked = false;
            self.events.push_back(Event::DatagramsWritable);
        }
        wrote
    }
}
