//! Decoding one frame: the type, the permission check, then the body.
//!
//! Body decoders return `FrameError`s with `frame_type` 0 (truncation arrives via
//! `From<UnexpectedEnd>`); [`frame`] stamps the real type on every error.

use super::{
    AckFrequency, Close, Crypto, Frame, FrameError, NewConnectionId, ResetStream, StopSending,
    Stream, ack, is_known, is_permitted,
};
use crate::cid::{ConnectionId, MAX_CID_LEN};
use crate::coding::Reader;
use crate::types::{Dir, PacketKind, StreamId};
use crate::varint::{VarInt, varint_size};

/// Streams of one kind a peer may open: stream IDs must fit in 62 bits.
const MAX_STREAM_COUNT: u64 = 1 << 60;

/// max_ack_delay (and so Request Max Ack Delay) must stay below 2^14 ms; this is
/// that bound in microseconds.
const MAX_ACK_DELAY_US: u64 = (1 << 14) * 1000;

/// Decode the frame at the start of `r`, which came in a packet of kind `kind`.
#[inline]
pub(super) fn frame<'a>(r: &mut Reader<'a>, kind: PacketKind) -> Result<Frame<'a>, FrameError> {
    // Most frames of a bulk transfer are STREAM frames in 1-RTT packets: a
    // one-byte STREAM type is minimally encoded, known and permitted there,
    // so the checks `checked` makes cannot fail for it (issue #30).
    if r.peek().is_some_and(|first| is_stream_in_data(first, kind)) {
        return stream_frame(r);
    }
    checked(r, kind)
}

/// Whether `first` is a STREAM frame's type byte (0x08..=0x0f) in a packet
/// that may carry STREAM frames (RFC 9000 Table 3: 0-RTT and 1-RTT).
#[inline]
fn is_stream_in_data(first: u8, kind: PacketKind) -> bool {
    first & 0xf8 == 0x08 && matches!(kind, PacketKind::OneRtt | PacketKind::ZeroRtt)
}

/// [`frame`] with every check made on the frame's type, whatever it is.
pub(super) fn checked<'a>(r: &mut Reader<'a>, kind: PacketKind) -> Result<Frame<'a>, FrameError> {
    let start = r.position();
    let ty = r
        .varint()
        .map_err(|_| FrameError::malformed("frame type truncated"))?;
    let stamp = |mut e: FrameError| {
        e.frame_type = ty;
        e
    };
    //= https://www.rfc-editor.org/rfc/rfc9000#section-12.4
    //# To ensure simple and efficient implementations of frame parsing, a
    //# frame type MUST use the shortest possible encoding.  [...] An endpoint
    //# MAY treat the receipt of a frame type that uses a longer encoding than
    //# necessary as a connection error of type PROTOCOL_VIOLATION.
    if r.position() - start != varint_size(ty) {
        return Err(stamp(FrameError::violation(
            "frame type not minimally encoded",
        )));
    }
    //= https://www.rfc-editor.org/rfc/rfc9000#section-12.4
    //# An endpoint MUST treat the receipt of a frame of unknown type as a
    //# connection error of type FRAME_ENCODING_ERROR.
    if !is_known(ty) {
        return Err(stamp(FrameError::malformed("unknown frame type")));
    }
    //= https://www.rfc-editor.org/rfc/rfc9000#section-12.4
    //# An endpoint MUST treat receipt of a frame in a packet type that is not
    //# permitted as a connection error of type PROTOCOL_VIOLATION.
    if !is_permitted(ty, kind) {
        return Err(stamp(FrameError::violation(
            "frame not permitted in this packet type",
        )));
    }
    body(ty, r).map_err(stamp)
}

/// Decode the fields of a frame of known type `ty`.
fn body<'a>(ty: u64, r: &mut Reader<'a>) -> Result<Frame<'a>, FrameError> {
    Ok(match ty {
        // Only reachable for a lone PADDING byte outside `Iter`'s run detection.
        0x00 => Frame::Padding { len: 1 },
        0x01 => Frame::Ping,
        0x02 | 0x03 => Frame::Ack(ack::decode(r, ty == 0x03)?),
        //= https://www.rfc-editor.org/rfc/rfc9000#section-19.4
        //# RESET_STREAM Frame { Type (i) = 0x04, Stream ID (i),
        //# Application Protocol Error Code (i), Final Size (i) }
        0x04 => Frame::ResetStream(ResetStream {
            id: StreamId(r.varint()?),
            error_code: r.varint()?,
            final_size: r.varint()?,
        }),
        //= https://www.rfc-editor.org/rfc/rfc9000#section-19.5
        //# STOP_SENDING Frame { Type (i) = 0x05, Stream ID (i),
        //# Application Protocol Error Code (i) }
        0x05 => Frame::StopSending(StopSending {
            id: StreamId(r.varint()?),
            error_code: r.varint()?,
        }),
        //= https://www.rfc-editor.org/rfc/rfc9000#section-19.6
        //# CRYPTO Frame { Type (i) = 0x06, Offset (i), Length (i), Crypto Data (..) }
        0x06 => {
            let offset = r.varint()?;
            let data = r.varint_bytes()?;
            check_end(offset, data.len())?;
            Frame::Crypto(Crypto { offset, data })
        }
        //= https://www.rfc-editor.org/rfc/rfc9000#section-19.7
        //# The token MUST NOT be empty.  A client MUST treat receipt of a
        //# NEW_TOKEN frame with an empty Token field as a connection error of
        //# type FRAME_ENCODING_ERROR.
        0x07 => {
            let token = r.varint_bytes()?;
            if token.is_empty() {
                return Err(FrameError::malformed("empty NEW_TOKEN"));
            }
            Frame::NewToken { token }
        }
        0x08..=0x0f => Frame::Stream(stream(ty, r)?),
        0x10 => Frame::MaxData(r.varint()?),
        0x11 => Frame::MaxStreamData {
            id: StreamId(r.varint()?),
            max: r.varint()?,
        },
        0x12 | 0x13 => Frame::MaxStreams {
            dir: dir(ty),
            max: stream_count(r)?,
        },
        0x14 => Frame::DataBlocked { limit: r.varint()? },
        0x15 => Frame::StreamDataBlocked {
            id: StreamId(r.varint()?),
            limit: r.varint()?,
        },
        0x16 | 0x17 => Frame::StreamsBlocked {
            dir: dir(ty),
            limit: stream_count(r)?,
        },
        0x18 => Frame::NewConnectionId(new_connection_id(r)?),
        0x19 => Frame::RetireConnectionId { seq: r.varint()? },
        0x1a => Frame::PathChallenge(r.array()?),
        0x1b => Frame::PathResponse(r.array()?),
        //= https://www.rfc-editor.org/rfc/rfc9000#section-19.19
        //# CONNECTION_CLOSE Frame { Type (i) = 0x1c..0x1d, Error Code (i),
        //# [Frame Type (i)], Reason Phrase Length (i), Reason Phrase (..) }
        0x1c | 0x1d => {
            let error_code = r.varint()?;
            let frame_type = if ty == 0x1c { Some(r.varint()?) } else { None };
            let reason = r.varint_bytes()?;
            Frame::Close(Close {
                error_code,
                frame_type,
                reason,
            })
        }
        0x1e => Frame::HandshakeDone,
        0x1f => Frame::ImmediateAck,
        //= https://www.rfc-editor.org/rfc/rfc9221#section-4
        //# DATAGRAM Frame { Type (i) = 0x30..0x31, [Length (i)], Datagram Data (..) }
        0x30 => Frame::Datagram { data: r.rest() },
        0x31 => Frame::Datagram {
            data: r.varint_bytes()?,
        },
        0xaf => Frame::AckFrequency(ack_frequency(r)?),
        _ => return Err(FrameError::malformed("unknown frame type")),
    })
}

fn dir(ty: u64) -> Dir {
    if ty & 1 == 0 { Dir::Bi } else { Dir::Uni }
}

//= https://www.rfc-editor.org/rfc/rfc9000#section-19.8
//# STREAM Frame { Type (i) = 0x08..0x0f, Stream ID (i), [Offset (i)],
//# [Length (i)], Stream Data (..) }
/// A STREAM frame at the start of `r`, whose first byte is a STREAM type
/// (0x08..=0x0f) that the packet's kind permits: what [`checked`] gives for
/// it, without the checks that cannot fail for such a byte.
#[inline]
fn stream_frame<'a>(r: &mut Reader<'a>) -> Result<Frame<'a>, FrameError> {
    let ty = u64::from(r.u8()?);
    debug_assert!((0x08..=0x0f).contains(&ty), "not a STREAM type");
    stream(ty, r).map(Frame::Stream).map_err(|mut e| {
        e.frame_type = ty;
        e
    })
}

fn stream<'a>(ty: u64, r: &mut Reader<'a>) -> Result<Stream<'a>, FrameError> {
    let id = StreamId(r.varint()?);
    let offset = if ty & 0x04 != 0 { r.varint()? } else { 0 };
    let data = if ty & 0x02 != 0 {
        r.varint_bytes()?
    } else {
        r.rest()
    };
    check_end(offset, data.len())?;
    Ok(Stream {
        id,
        offset,
        fin: ty & 0x01 != 0,
        data,
    })
}

//= https://www.rfc-editor.org/rfc/rfc9000#section-19.8
//# The largest offset delivered on a stream -- the sum of the offset and
//# data length -- cannot exceed 2^62-1, as it is not possible to provide
//# flow control credit for that data.  Receipt of a frame that exceeds
//# this limit MUST be treated as a connection error of type
//# FRAME_ENCODING_ERROR or FLOW_CONTROL_ERROR.
fn check_end(offset: u64, len: usize) -> Result<(), FrameError> {
    // `offset` came from a varint, so the subtraction cannot underflow.
    if len as u64 > VarInt::MAX.into_inner() - offset {
        return Err(FrameError::malformed("data ends beyond 2^62-1"));
    }
    Ok(())
}

//= https://www.rfc-editor.org/rfc/rfc9000#section-19.11
//# This value cannot exceed 2^60, as it is not possible to encode stream
//# IDs larger than 2^62-1.  Receipt of a frame that permits opening of a
//# stream larger than this limit MUST be treated as a FRAME_ENCODING_ERROR.
fn stream_count(r: &mut Reader<'_>) -> Result<u64, FrameError> {
    let count = r.varint()?;
    if count > MAX_STREAM_COUNT {
        return Err(FrameError::malformed("stream count exceeds 2^60"));
    }
    Ok(count)
}

//= https://www.rfc-editor.org/rfc/rfc9000#section-19.15
//# NEW_CONNECTION_ID Frame { Type (i) = 0x18, Sequence Number (i),
//# Retire Prior To (i), Length (8), Connection ID (8..160),
//# Stateless Reset Token (128) }
fn new_connection_id(r: &mut Reader<'_>) -> Result<NewConnectionId, FrameError> {
    let seq = r.varint()?;
    let retire_prior_to = r.varint()?;
    //= https://www.rfc-editor.org/rfc/rfc9000#section-19.15
    //# Values less than 1 and greater than 20 are invalid and MUST be
    //# treated as a connection error of type FRAME_ENCODING_ERROR.
    let len = usize::from(r.u8()?);
    if !(1..=MAX_CID_LEN).contains(&len) {
        return Err(FrameError::malformed("bad connection ID length"));
    }
    let cid = ConnectionId::new(r.bytes(len)?)
        .ok_or(FrameError::malformed("bad connection ID length"))?;
    let reset_token = r.array()?;
    //= https://www.rfc-editor.org/rfc/rfc9000#section-19.15
    //# Receiving a value in the Retire Prior To field that is greater than
    //# that in the Sequence Number field MUST be treated as a connection
    //# error of type FRAME_ENCODING_ERROR.
    if retire_prior_to > seq {
        return Err(FrameError::malformed(
            "retire_prior_to exceeds sequence number",
        ));
    }
    Ok(NewConnectionId {
        seq,
        retire_prior_to,
        cid,
        reset_token,
    })
}

// draft-ietf-quic-ack-frequency §4:
//   ACK_FREQUENCY Frame { Type (i) = 0xaf, Sequence Number (i),
//   Ack-Eliciting Threshold (i), Requested Max Ack Delay (i),
//   Reordering Threshold (i) }
fn ack_frequency(r: &mut Reader<'_>) -> Result<AckFrequency, FrameError> {
    let frame = AckFrequency {
        seq: r.varint()?,
        ack_eliciting_threshold: r.varint()?,
        request_max_ack_delay: r.varint()?,
        reordering_threshold: r.varint()?,
    };
    // Same section: values of 2^14 milliseconds or greater are invalid for
    // max_ack_delay; receipt of an invalid value MUST be treated as a connection
    // error of type PROTOCOL_VIOLATION. (The lower bound, the peer's
    // min_ack_delay, needs connection state and is checked there.)
    if frame.request_max_ack_delay >= MAX_ACK_DELAY_US {
        return Err(FrameError::violation(
            "requested max_ack_delay of 2^14 ms or more",
        ));
    }
    Ok(frame)
}
