//! Encoding frames, and the allocation-free header writers the packet builder
//! uses for STREAM and CRYPTO frames.

use bytes::BufMut;

use super::{Frame, FrameType};
use crate::types::{Dir, StreamId};
use crate::varint::{put_varint, varint_size};

//= https://www.rfc-editor.org/rfc/rfc9000#section-19.8
//# The OFF bit (0x04) [...] The LEN bit (0x02) [...] The FIN bit (0x01)
const STREAM_OFF: u64 = 0x04;
const STREAM_LEN: u64 = 0x02;
const STREAM_FIN: u64 = 0x01;

fn stream_type(offset: u64, with_len: bool, fin: bool) -> u64 {
    let mut ty = FrameType::STREAM.0;
    if offset != 0 {
        ty |= STREAM_OFF;
    }
    if with_len {
        ty |= STREAM_LEN;
    }
    if fin {
        ty |= STREAM_FIN;
    }
    ty
}

fn by_dir(dir: Dir, bi: FrameType, uni: FrameType) -> FrameType {
    match dir {
        Dir::Bi => bi,
        Dir::Uni => uni,
    }
}

/// Length of a varint-length-prefixed byte string.
fn prefixed_len(bytes: &[u8]) -> usize {
    varint_size(bytes.len() as u64) + bytes.len()
}

fn put_prefixed<B: BufMut>(buf: &mut B, bytes: &[u8]) {
    put_varint(buf, bytes.len() as u64);
    buf.put_slice(bytes);
}

impl Frame<'_> {
    /// The wire type of this frame (for STREAM: with OFF/LEN/FIN bits as `encode` writes them).
    pub fn ty(&self) -> FrameType {
        match self {
            Frame::Padding { .. } => FrameType::PADDING,
            Frame::Ping => FrameType::PING,
            Frame::Ack(ack) if ack.ecn.is_some() => FrameType::ACK_ECN,
            Frame::Ack(_) => FrameType::ACK,
            Frame::ResetStream(_) => FrameType::RESET_STREAM,
            Frame::StopSending(_) => FrameType::STOP_SENDING,
            Frame::Crypto(_) => FrameType::CRYPTO,
            Frame::NewToken { .. } => FrameType::NEW_TOKEN,
            Frame::Stream(s) => FrameType(stream_type(s.offset, true, s.fin)),
            Frame::MaxData(_) => FrameType::MAX_DATA,
            Frame::MaxStreamData { .. } => FrameType::MAX_STREAM_DATA,
            Frame::MaxStreams { dir, .. } => by_dir(
                *dir,
                FrameType::MAX_STREAMS_BIDI,
                FrameType::MAX_STREAMS_UNI,
            ),
            Frame::DataBlocked { .. } => FrameType::DATA_BLOCKED,
            Frame::StreamDataBlocked { .. } => FrameType::STREAM_DATA_BLOCKED,
            Frame::StreamsBlocked { dir, .. } => by_dir(
                *dir,
                FrameType::STREAMS_BLOCKED_BIDI,
                FrameType::STREAMS_BLOCKED_UNI,
            ),
            Frame::NewConnectionId(_) => FrameType::NEW_CONNECTION_ID,
            Frame::RetireConnectionId { .. } => FrameType::RETIRE_CONNECTION_ID,
            Frame::PathChallenge(_) => FrameType::PATH_CHALLENGE,
            Frame::PathResponse(_) => FrameType::PATH_RESPONSE,
            Frame::Close(c) if c.frame_type.is_some() => FrameType::CONNECTION_CLOSE,
            Frame::Close(_) => FrameType::APPLICATION_CLOSE,
            Frame::HandshakeDone => FrameType::HANDSHAKE_DONE,
            Frame::Datagram { .. } => FrameType::DATAGRAM_LEN,
            Frame::AckFrequency(_) => FrameType::ACK_FREQUENCY,
            Frame::ImmediateAck => FrameType::IMMEDIATE_ACK,
        }
    }

    /// Whether receiving this frame obliges the receiver to send an ACK
    /// (everything but ACK, PADDING and CONNECTION_CLOSE; RFC 9002 §2).
    pub fn is_ack_eliciting(&self) -> bool {
        //= https://www.rfc-editor.org/rfc/rfc9002#section-2
        //# Ack-eliciting frames:  All frames other than ACK, PADDING, and
        //# CONNECTION_CLOSE are considered ack-eliciting.
        !matches!(
            self,
            Frame::Ack(_) | Frame::Padding { .. } | Frame::Close(_)
        )
    }

    /// Whether the frame may only probe a path (RFC 9000 §9.1): a packet of
    /// probing frames alone does not move the connection to its address.
    pub fn is_probing(&self) -> bool {
        //= https://www.rfc-editor.org/rfc/rfc9000#section-9.1
        //# PATH_CHALLENGE, PATH_RESPONSE, NEW_CONNECTION_ID, and PADDING frames
        //# are "probing frames", and all other frames are "non-probing frames".
        matches!(
            self,
            Frame::PathChallenge(_)
                | Frame::PathResponse(_)
                | Frame::NewConnectionId(_)
                | Frame::Padding { .. }
        )
    }

    /// Encode. STREAM frames are written with an explicit length (LEN bit set) and the
    /// OFF bit set only for a non-zero offset; DATAGRAM with a length.
    pub fn encode<B: BufMut>(&self, buf: &mut B) {
        if let Frame::Padding { len } = self {
            buf.put_bytes(0, *len);
            return;
        }
        put_varint(buf, self.ty().0);
        match self {
            Frame::Padding { .. } | Frame::Ping | Frame::HandshakeDone | Frame::ImmediateAck => {}
            Frame::Ack(ack) => {
                put_varint(buf, ack.largest);
                put_varint(buf, ack.delay);
                put_varint(buf, ack.range_count);
                put_varint(buf, ack.first_range);
                buf.put_slice(ack.ranges);
                if let Some(e) = &ack.ecn {
                    put_varint(buf, e.ect0);
                    put_varint(buf, e.ect1);
                    put_varint(buf, e.ce);
                }
            }
            Frame::ResetStream(f) => {
                put_varint(buf, f.id.0);
                put_varint(buf, f.error_code);
                put_varint(buf, f.final_size);
            }
            Frame::StopSending(f) => {
                put_varint(buf, f.id.0);
                put_varint(buf, f.error_code);
            }
            Frame::Crypto(f) => {
                put_varint(buf, f.offset);
                put_prefixed(buf, f.data);
            }
            Frame::NewToken { token } => put_prefixed(buf, token),
            Frame::Stream(f) => {
                put_varint(buf, f.id.0);
                if f.offset != 0 {
                    put_varint(buf, f.offset);
                }
                put_prefixed(buf, f.data);
            }
            Frame::MaxData(v)
            | Frame::MaxStreams { max: v, .. }
            | Frame::DataBlocked { limit: v }
            | Frame::StreamsBlocked { limit: v, .. }
            | Frame::RetireConnectionId { seq: v } => put_varint(buf, *v),
            Frame::MaxStreamData { id, max: v } | Frame::StreamDataBlocked { id, limit: v } => {
                put_varint(buf, id.0);
                put_varint(buf, *v);
            }
            Frame::NewConnectionId(f) => {
                put_varint(buf, f.seq);
                put_varint(buf, f.retire_prior_to);
                buf.put_u8(f.cid.len() as u8);
                buf.put_slice(&f.cid);
                buf.put_slice(&f.reset_token);
            }
            Frame::PathChallenge(data) | Frame::PathResponse(data) => buf.put_slice(data),
            Frame::Close(c) => {
                put_varint(buf, c.error_code);
                if let Some(ty) = c.frame_type {
                    put_varint(buf, ty);
                }
                put_prefixed(buf, c.reason);
            }
            Frame::Datagram { data } => put_prefixed(buf, data),
            Frame::AckFrequency(f) => {
                put_varint(buf, f.seq);
                put_varint(buf, f.ack_eliciting_threshold);
                put_varint(buf, f.request_max_ack_delay);
                put_varint(buf, f.reordering_threshold);
            }
        }
    }

    /// Exact number of bytes `encode` writes.
    pub fn encoded_len(&self) -> usize {
        let body = match self {
            Frame::Padding { len } => return *len,
            Frame::Ping | Frame::HandshakeDone | Frame::ImmediateAck => 0,
            Frame::Ack(ack) => {
                varint_size(ack.largest)
                    + varint_size(ack.delay)
                    + varint_size(ack.range_count)
                    + varint_size(ack.first_range)
                    + ack.ranges.len()
                    + ack.ecn.map_or(0, |e| {
                        varint_size(e.ect0) + varint_size(e.ect1) + varint_size(e.ce)
                    })
            }
            Frame::ResetStream(f) => {
                varint_size(f.id.0) + varint_size(f.error_code) + varint_size(f.final_size)
            }
            Frame::StopSending(f) => varint_size(f.id.0) + varint_size(f.error_code),
            Frame::Crypto(f) => varint_size(f.offset) + prefixed_len(f.data),
            Frame::NewToken { token } => prefixed_len(token),
            Frame::Stream(f) => {
                return stream_header_len(f.id, f.offset, f.data.len(), true) + f.data.len();
            }
            Frame::MaxData(v)
            | Frame::MaxStreams { max: v, .. }
            | Frame::DataBlocked { limit: v }
            | Frame::StreamsBlocked { limit: v, .. }
            | Frame::RetireConnectionId { seq: v } => varint_size(*v),
            Frame::MaxStreamData { id, max: v } | Frame::StreamDataBlocked { id, limit: v } => {
                varint_size(id.0) + varint_size(*v)
            }
            Frame::NewConnectionId(f) => {
                varint_size(f.seq) + varint_size(f.retire_prior_to) + 1 + f.cid.len() + 16
            }
            Frame::PathChallenge(_) | Frame::PathResponse(_) => 8,
            Frame::Close(c) => {
                varint_size(c.error_code)
                    + c.frame_type.map_or(0, varint_size)
                    + prefixed_len(c.reason)
            }
            Frame::Datagram { data } => prefixed_len(data),
            Frame::AckFrequency(f) => {
                varint_size(f.seq)
                    + varint_size(f.ack_eliciting_threshold)
                    + varint_size(f.request_max_ack_delay)
                    + varint_size(f.reordering_threshold)
            }
        };
        varint_size(self.ty().0) + body
    }
}

/// Bytes needed for a STREAM frame header (type, id, offset if non-zero, and a
/// length field when `with_len`) carrying `len` bytes.
pub fn stream_header_len(id: StreamId, offset: u64, len: usize, with_len: bool) -> usize {
    // 0x08..=0x0f always takes one byte.
    let mut n = 1 + varint_size(id.0);
    if offset != 0 {
        n += varint_size(offset);
    }
    if with_len {
        n += varint_size(len as u64);
    }
    n
}

/// Write a STREAM frame header; the caller appends the `len` data bytes.
/// Without `with_len` the frame extends to the end of the packet.
pub fn encode_stream_header<B: BufMut>(
    buf: &mut B,
    id: StreamId,
    offset: u64,
    len: usize,
    fin: bool,
    with_len: bool,
) {
    buf.put_u8(stream_type(offset, with_len, fin) as u8);
    put_varint(buf, id.0);
    if offset != 0 {
        put_varint(buf, offset);
    }
    if with_len {
        put_varint(buf, len as u64);
    }
}

/// Bytes needed for a CRYPTO frame header carrying `len` bytes at `offset`.
pub fn crypto_header_len(offset: u64, len: usize) -> usize {
    1 + varint_size(offset) + varint_size(len as u64)
}

/// Write a CRYPTO frame header; the caller appends the `len` data bytes.
pub fn encode_crypto_header<B: BufMut>(buf: &mut B, offset: u64, len: usize) {
    buf.put_u8(FrameType::CRYPTO.0 as u8);
    put_varint(buf, offset);
    put_varint(buf, len as u64);
}
