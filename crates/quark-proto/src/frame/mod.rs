//! The frame codec: every RFC 9000 frame plus DATAGRAM (RFC 9221) and the ACK
//! Frequency extension's ACK_FREQUENCY / IMMEDIATE_ACK.
//!
//! Decoding is zero-copy: frames borrow from the decrypted packet payload.
//! Encoding writes straight into the packet being built; the packet builder asks
//! for encoded sizes first so frames are never split.
//!
//! Layout: this file holds the types, the frame iterator and the permission table;
//! per-frame parsing lives in `decode.rs`, encoding in `encode.rs`, and everything
//! about ACK ranges (decode, iterate, encode) in `ack.rs`.

mod ack;
mod decode;
mod encode;
#[cfg(test)]
mod tests;

pub use ack::{AckIter, encode_ack};
pub use encode::{
    crypto_header_len, encode_crypto_header, encode_stream_header, stream_header_len,
};

use crate::cid::ConnectionId;
use crate::coding::UnexpectedEnd;
use crate::error::{TransportError, TransportErrorCode};
use crate::types::{Dir, PacketKind, StreamId};

/// A frame type value as it appears on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FrameType(pub u64);

impl FrameType {
    /// PADDING (RFC 9000 §19.1).
    pub const PADDING: FrameType = FrameType(0x00);
    /// PING (RFC 9000 §19.2).
    pub const PING: FrameType = FrameType(0x01);
    /// ACK (RFC 9000 §19.3).
    pub const ACK: FrameType = FrameType(0x02);
    /// ACK with ECN counts (RFC 9000 §19.3).
    pub const ACK_ECN: FrameType = FrameType(0x03);
    /// RESET_STREAM (RFC 9000 §19.4).
    pub const RESET_STREAM: FrameType = FrameType(0x04);
    /// STOP_SENDING (RFC 9000 §19.5).
    pub const STOP_SENDING: FrameType = FrameType(0x05);
    /// CRYPTO (RFC 9000 §19.6).
    pub const CRYPTO: FrameType = FrameType(0x06);
    /// NEW_TOKEN (RFC 9000 §19.7).
    pub const NEW_TOKEN: FrameType = FrameType(0x07);
    /// STREAM frames are 0x08..=0x0f: OFF = 0x04, LEN = 0x02, FIN = 0x01.
    pub const STREAM: FrameType = FrameType(0x08);
    /// MAX_DATA (RFC 9000 §19.9).
    pub const MAX_DATA: FrameType = FrameType(0x10);
    /// MAX_STREAM_DATA (RFC 9000 §19.10).
    pub const MAX_STREAM_DATA: FrameType = FrameType(0x11);
    /// MAX_STREAMS for bidirectional streams (RFC 9000 §19.11).
    pub const MAX_STREAMS_BIDI: FrameType = FrameType(0x12);
    /// MAX_STREAMS for unidirectional streams (RFC 9000 §19.11).
    pub const MAX_STREAMS_UNI: FrameType = FrameType(0x13);
    /// DATA_BLOCKED (RFC 9000 §19.12).
    pub const DATA_BLOCKED: FrameType = FrameType(0x14);
    /// STREAM_DATA_BLOCKED (RFC 9000 §19.13).
    pub const STREAM_DATA_BLOCKED: FrameType = FrameType(0x15);
    /// STREAMS_BLOCKED for bidirectional streams (RFC 9000 §19.14).
    pub const STREAMS_BLOCKED_BIDI: FrameType = FrameType(0x16);
    /// STREAMS_BLOCKED for unidirectional streams (RFC 9000 §19.14).
    pub const STREAMS_BLOCKED_UNI: FrameType = FrameType(0x17);
    /// NEW_CONNECTION_ID (RFC 9000 §19.15).
    pub const NEW_CONNECTION_ID: FrameType = FrameType(0x18);
    /// RETIRE_CONNECTION_ID (RFC 9000 §19.16).
    pub const RETIRE_CONNECTION_ID: FrameType = FrameType(0x19);
    /// PATH_CHALLENGE (RFC 9000 §19.17).
    pub const PATH_CHALLENGE: FrameType = FrameType(0x1a);
    /// PATH_RESPONSE (RFC 9000 §19.18).
    pub const PATH_RESPONSE: FrameType = FrameType(0x1b);
    /// CONNECTION_CLOSE for transport errors (RFC 9000 §19.19).
    pub const CONNECTION_CLOSE: FrameType = FrameType(0x1c);
    /// CONNECTION_CLOSE for application errors (RFC 9000 §19.19).
    pub const APPLICATION_CLOSE: FrameType = FrameType(0x1d);
    /// HANDSHAKE_DONE (RFC 9000 §19.20).
    pub const HANDSHAKE_DONE: FrameType = FrameType(0x1e);
    /// draft-ietf-quic-ack-frequency
    pub const IMMEDIATE_ACK: FrameType = FrameType(0x1f);
    /// DATAGRAM without a length field: it runs to the packet's end (RFC 9221 §4).
    pub const DATAGRAM: FrameType = FrameType(0x30);
    /// DATAGRAM with a length field (RFC 9221 §4).
    pub const DATAGRAM_LEN: FrameType = FrameType(0x31);
    /// draft-ietf-quic-ack-frequency
    pub const ACK_FREQUENCY: FrameType = FrameType(0xaf);
}

/// A decoded frame, borrowing its variable-length fields from the packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// A run of consecutive PADDING bytes, collapsed into one frame.
    Padding {
        /// How many padding bytes.
        len: usize,
    },
    /// PING
    Ping,
    /// ACK or ACK_ECN
    Ack(Ack<'a>),
    /// RESET_STREAM
    ResetStream(ResetStream),
    /// STOP_SENDING
    StopSending(StopSending),
    /// CRYPTO
    Crypto(Crypto<'a>),
    /// NEW_TOKEN
    NewToken {
        /// The token (never empty: an empty token is FRAME_ENCODING_ERROR).
        token: &'a [u8],
    },
    /// STREAM (0x08..=0x0f)
    Stream(Stream<'a>),
    /// MAX_DATA
    MaxData(u64),
    /// MAX_STREAM_DATA
    MaxStreamData {
        /// Stream.
        id: StreamId,
        /// New limit.
        max: u64,
    },
    /// MAX_STREAMS (bidi or uni); `max` ≤ 2^60 is checked at decode time.
    MaxStreams {
        /// Which kind of stream.
        dir: Dir,
        /// Cumulative stream count.
        max: u64,
    },
    /// DATA_BLOCKED
    DataBlocked {
        /// The limit the sender was blocked at.
        limit: u64,
    },
    /// STREAM_DATA_BLOCKED
    StreamDataBlocked {
        /// Stream.
        id: StreamId,
        /// The limit the sender was blocked at.
        limit: u64,
    },
    /// STREAMS_BLOCKED (bidi or uni); `limit` ≤ 2^60 is checked at decode time.
    StreamsBlocked {
        /// Which kind of stream.
        dir: Dir,
        /// Cumulative stream count.
        limit: u64,
    },
    /// NEW_CONNECTION_ID
    NewConnectionId(NewConnectionId),
    /// RETIRE_CONNECTION_ID
    RetireConnectionId {
        /// Sequence number of the retired ID.
        seq: u64,
    },
    /// PATH_CHALLENGE
    PathChallenge([u8; 8]),
    /// PATH_RESPONSE
    PathResponse([u8; 8]),
    /// CONNECTION_CLOSE (0x1c, transport) or (0x1d, application)
    Close(Close<'a>),
    /// HANDSHAKE_DONE
    HandshakeDone,
    /// DATAGRAM (RFC 9221)
    Datagram {
        /// Payload.
        data: &'a [u8],
    },
    /// ACK_FREQUENCY (draft-ietf-quic-ack-frequency)
    AckFrequency(AckFrequency),
    /// IMMEDIATE_ACK (draft-ietf-quic-ack-frequency)
    ImmediateAck,
}

/// An ACK frame. Ranges are validated when decoded (no underflow), so iterating
/// cannot fail; they are kept in wire form to avoid allocating.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ack<'a> {
    /// Largest Acknowledged.
    pub largest: u64,
    /// ACK Delay, still scaled by the peer's ack_delay_exponent.
    pub delay: u64,
    /// First ACK Range.
    pub first_range: u64,
    /// The encoded (Gap, ACK Range Length) pairs that follow.
    pub ranges: &'a [u8],
    /// ACK Range Count.
    pub range_count: u64,
    /// ECN counts, for type 0x03.
    pub ecn: Option<EcnCounts>,
}

/// ECN counts carried by ACK_ECN.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EcnCounts {
    /// ECT(0) count.
    pub ect0: u64,
    /// ECT(1) count.
    pub ect1: u64,
    /// ECN-CE count.
    pub ce: u64,
}

/// RESET_STREAM
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResetStream {
    /// Stream.
    pub id: StreamId,
    /// Application error code.
    pub error_code: u64,
    /// Final size of the stream.
    pub final_size: u64,
}

/// STOP_SENDING
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StopSending {
    /// Stream.
    pub id: StreamId,
    /// Application error code.
    pub error_code: u64,
}

/// CRYPTO
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Crypto<'a> {
    /// Offset in the crypto stream; offset + len ≤ 2^62-1 is checked at decode.
    pub offset: u64,
    /// Handshake bytes.
    pub data: &'a [u8],
}

/// STREAM
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stream<'a> {
    /// Stream.
    pub id: StreamId,
    /// Offset; offset + len ≤ 2^62-1 is checked at decode (FRAME_ENCODING_ERROR).
    pub offset: u64,
    /// Last frame of the stream.
    pub fin: bool,
    /// Stream bytes.
    pub data: &'a [u8],
}

/// NEW_CONNECTION_ID
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NewConnectionId {
    /// Sequence Number.
    pub seq: u64,
    /// Retire Prior To (≤ seq, checked at decode).
    pub retire_prior_to: u64,
    /// The connection ID, 1..=20 bytes (checked at decode).
    pub cid: ConnectionId,
    /// Stateless Reset Token.
    pub reset_token: [u8; 16],
}

/// CONNECTION_CLOSE
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Close<'a> {
    /// Error code: a transport code for 0x1c, an application code for 0x1d.
    pub error_code: u64,
    /// For 0x1c: the type of frame that triggered the error (0 if unknown).
    /// `None` means an application close (0x1d).
    pub frame_type: Option<u64>,
    /// Reason phrase (UTF-8 is not required by the RFC).
    pub reason: &'a [u8],
}

/// ACK_FREQUENCY (draft-ietf-quic-ack-frequency §4)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckFrequency {
    /// Sequence Number.
    pub seq: u64,
    /// Ack-Eliciting Threshold.
    pub ack_eliciting_threshold: u64,
    /// Request Max Ack Delay, in microseconds.
    pub request_max_ack_delay: u64,
    /// Reordering Threshold.
    pub reordering_threshold: u64,
}

/// A frame that could not be decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrameError {
    /// FRAME_ENCODING_ERROR for malformed frames, PROTOCOL_VIOLATION for frames
    /// not permitted in the packet type, etc.
    pub code: TransportErrorCode,
    /// The frame type, as far as it was read (0 if even that failed).
    pub frame_type: u64,
    /// What was wrong.
    pub reason: &'static str,
}

impl From<FrameError> for TransportError {
    fn from(e: FrameError) -> Self {
        TransportError::new(e.code, e.reason).with_frame(e.frame_type)
    }
}

impl From<UnexpectedEnd> for FrameError {
    fn from(_: UnexpectedEnd) -> Self {
        FrameError {
            code: TransportErrorCode::FRAME_ENCODING_ERROR,
            frame_type: 0,
            reason: "frame truncated",
        }
    }
}

/// Iterates over the frames of a decrypted packet payload. Yields `Err` once, at
/// the first bad frame, and then stops. Checks each frame type against the packet
/// kind (RFC 9000 Table 3), yielding PROTOCOL_VIOLATION for forbidden frames.
/// Unknown frame types yield FRAME_ENCODING_ERROR.
pub struct Iter<'a> {
    /// The part of the payload not yet decoded.
    rest: &'a [u8],
    kind: PacketKind,
    failed: bool,
}

impl<'a> Iter<'a> {
    /// Iterate over `payload`, which was carried in a packet of kind `kind`.
    pub fn new(payload: &'a [u8], kind: PacketKind) -> Self {
        Iter {
            rest: payload,
            kind,
            failed: false,
        }
    }
}

impl<'a> Iterator for Iter<'a> {
    type Item = Result<Frame<'a>, FrameError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.rest.is_empty() {
            return None;
        }
        //= https://www.rfc-editor.org/rfc/rfc9000#section-19.1
        //# PADDING Frame { Type (i) = 0x00 }
        // A run of padding (often a thousand bytes in an Initial) is one frame.
        if self.rest[0] == 0 {
            let len = self
                .rest
                .iter()
                .position(|&b| b != 0)
                .unwrap_or(self.rest.len());
            self.rest = &self.rest[len..];
            return Some(Ok(Frame::Padding { len }));
        }
        let mut r = crate::coding::Reader::new(self.rest);
        match decode::frame(&mut r, self.kind) {
            Ok(frame) => {
                self.rest = &self.rest[r.position()..];
                Some(Ok(frame))
            }
            Err(e) => {
                self.failed = true;
                self.rest = &[];
                Some(Err(e))
            }
        }
    }
}

/// Whether `ty` is a frame type this codec understands.
fn is_known(ty: u64) -> bool {
    ty <= 0x1f || matches!(ty, 0x30 | 0x31 | 0xaf)
}

/// Whether a known frame type may appear in a packet of kind `kind`.
fn is_permitted(ty: u64, kind: PacketKind) -> bool {
    match kind {
        //= https://www.rfc-editor.org/rfc/rfc9000#section-12.4
        //# | 0x00       | PADDING              | Section 19.1  | IH01 | NP   |
        //# | 0x01       | PING                 | Section 19.2  | IH01 |      |
        //# | 0x02-0x03  | ACK                  | Section 19.3  | IH_1 | NC   |
        //# | 0x06       | CRYPTO               | Section 19.6  | IH_1 |      |
        //# | 0x1c-0x1d  | CONNECTION_CLOSE     | Section 19.19 | ih01 | N    |
        //
        // Every other row has "__" for Initial and Handshake; "ih" means only
        // the 0x1c form of CONNECTION_CLOSE.
        PacketKind::Initial | PacketKind::Handshake => {
            matches!(ty, 0x00 | 0x01 | 0x02 | 0x03 | 0x06 | 0x1c)
        }
        //= https://www.rfc-editor.org/rfc/rfc9000#section-12.5
        //# Note that it is not possible to send the following frames in 0-RTT
        //# packets for various reasons: ACK, CRYPTO, HANDSHAKE_DONE, NEW_TOKEN,
        //# PATH_RESPONSE, and RETIRE_CONNECTION_ID.  A server MAY treat receipt
        //# of these frames in 0-RTT packets as a connection error of type
        //# PROTOCOL_VIOLATION.
        //
        // draft-ietf-quic-ack-frequency §3: ACK_FREQUENCY and IMMEDIATE_ACK frames
        // cannot be sent in 0-RTT packets.
        PacketKind::ZeroRtt => !matches!(
            ty,
            0x02 | 0x03 | 0x06 | 0x07 | 0x19 | 0x1b | 0x1e | 0x1f | 0xaf
        ),
        //= https://www.rfc-editor.org/rfc/rfc9000#section-12.4
        //# Note that all frames can appear in 1-RTT packets.
        PacketKind::OneRtt => true,
    }
}

impl FrameError {
    /// A FRAME_ENCODING_ERROR; the frame type is filled in by the decoder.
    pub(crate) fn malformed(reason: &'static str) -> Self {
        FrameError {
            code: TransportErrorCode::FRAME_ENCODING_ERROR,
            frame_type: 0,
            reason,
        }
    }

    /// A PROTOCOL_VIOLATION; the frame type is filled in by the decoder.
    pub(crate) fn violation(reason: &'static str) -> Self {
        FrameError {
            code: TransportErrorCode::PROTOCOL_VIOLATION,
            frame_type: 0,
            reason,
        }
    }
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} in frame {:#x}: {}",
            self.code, self.frame_type, self.reason
        )
    }
}

impl std::error::Error for FrameError {}
