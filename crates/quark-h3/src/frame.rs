//! HTTP/3 frames (RFC 9114 §7): a type and a length, both variable-length
//! integers, then the payload. Parsing the header and writing frames.

use quark_proto::coding::Reader;
use quark_proto::varint::put_varint;

/// DATA: a piece of a message body.
pub const DATA: u64 = 0x00;
/// HEADERS: a QPACK-encoded field section.
pub const HEADERS: u64 = 0x01;
/// CANCEL_PUSH.
pub const CANCEL_PUSH: u64 = 0x03;
/// SETTINGS: the first frame of each control stream.
pub const SETTINGS: u64 = 0x04;
/// PUSH_PROMISE (we never allow pushes).
pub const PUSH_PROMISE: u64 = 0x05;
/// GOAWAY: no requests from this ID on.
pub const GOAWAY: u64 = 0x07;
/// MAX_PUSH_ID (clients only).
pub const MAX_PUSH_ID: u64 = 0x0d;

/// HTTP/2 frame types with no HTTP/3 meaning: receiving one is H3_FRAME_UNEXPECTED
/// (RFC 9114 §7.2.8).
pub fn is_http2_only(ty: u64) -> bool {
    matches!(ty, 0x02 | 0x06 | 0x08 | 0x09)
}

/// A frame's type and payload length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    /// The frame type.
    pub ty: u64,
    /// The payload length.
    pub len: u64,
}

/// The frame header at the start of `buf` and its size, or `None` when `buf`
/// does not hold all of it yet.
pub fn parse_header(buf: &[u8]) -> Option<(FrameHeader, usize)> {
    let mut r = Reader::new(buf);
    let ty = r.varint().ok()?;
    let len = r.varint().ok()?;
    Some((FrameHeader { ty, len }, r.position()))
}

/// Appends a frame header.
pub fn put_header(out: &mut Vec<u8>, ty: u64, len: u64) {
    put_varint(out, ty);
    put_varint(out, len);
}

/// Writes a frame header at the start of `out` (16 bytes always suffice);
/// returns its length.
pub fn write_header(out: &mut [u8; 16], ty: u64, len: u64) -> usize {
    let mut w = &mut out[..];
    put_varint(&mut w, ty);
    put_varint(&mut w, len);
    16 - w.len()
}

/// Bytes a frame header can take (a type and a length of 8 bytes each).
const MAX_HEADER: usize = 16;

/// A frame whose payload is written straight into its buffer, behind room for
/// the header, which [`finish`](Self::finish) then puts in front: one buffer
/// and no copy of the payload, where building the payload and then the frame
/// took two of each (HEADERS, once per message).
pub(crate) struct FrameBuf(Vec<u8>);

impl FrameBuf {
    #[cfg(test)]
    pub(crate) fn new() -> Self {
        FrameBuf::with(Vec::with_capacity(128))
    }

    /// A frame built in `buf` (a reused one: its bytes are dropped).
    pub(crate) fn with(mut buf: Vec<u8>) -> Self {
        buf.clear();
        buf.resize(MAX_HEADER, 0);
        FrameBuf(buf)
    }

    /// The buffer, for reuse.
    pub(crate) fn into_inner(self) -> Vec<u8> {
        self.0
    }

    /// Where the payload goes: append to it.
    pub(crate) fn payload(&mut self) -> &mut Vec<u8> {
        &mut self.0
    }

    /// The whole frame, its header now in front of the payload.
    pub(crate) fn finish(&mut self, ty: u64) -> &[u8] {
        let len = (self.0.len() - MAX_HEADER) as u64;
        let mut head = [0u8; MAX_HEADER];
        let n = write_header(&mut head, ty, len);
        let start = MAX_HEADER - n;
        self.0[start..MAX_HEADER].copy_from_slice(&head[..n]);
        &self.0[start..]
    }
}

/// Appends a whole frame.
pub fn put_frame(out: &mut Vec<u8>, ty: u64, payload: &[u8]) {
    put_header(out, ty, payload.len() as u64);
    out.extend_from_slice(payload);
}

/// The payload of a GOAWAY (or MAX_PUSH_ID) frame: one variable-length integer.
pub fn parse_id(payload: &[u8]) -> Option<u64> {
    let mut r = Reader::new(payload);
    let id = r.varint().ok()?;
    r.is_empty().then_some(id)
}

/// Appends a GOAWAY frame.
pub fn put_goaway(out: &mut Vec<u8>, id: u64) {
    let mut payload = Vec::with_capacity(8);
    put_varint(&mut payload, id);
    put_frame(out, GOAWAY, &payload);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_round_trip_and_wait_for_their_bytes() {
        let mut out = Vec::new();
        put_header(&mut out, HEADERS, 300);
        assert_eq!(out, [0x01, 0x41, 0x2c]);
        assert_eq!(
            parse_header(&out),
            Some((
                FrameHeader {
                    ty: HEADERS,
                    len: 300
                },
                3
            ))
        );
        assert_eq!(parse_header(&out[..2]), None);
        assert_eq!(parse_header(&[]), None);
        let mut fixed = [0u8; 16];
        let n = write_header(&mut fixed, HEADERS, 300);
        assert_eq!(&fixed[..n], &out[..]);
        // Built in place, the same bytes as appended.
        for len in [0, 5, 63, 64, 300, 16_384, 70_000] {
            let payload: Vec<u8> = (0..len).map(|i| i as u8).collect();
            let mut built = FrameBuf::new();
            built.payload().extend_from_slice(&payload);
            let mut appended = Vec::new();
            put_frame(&mut appended, HEADERS, &payload);
            assert_eq!(built.finish(HEADERS), &appended[..], "{len} bytes");
        }
        // A reserved (greased) type 0x21 + 0x1f * N parses like any other.
        let mut grease = Vec::new();
        put_frame(&mut grease, 0x21 + 0x1f * 3, b"xyz");
        let (h, n) = parse_header(&grease).unwrap();
        assert_eq!(
            (h.ty, h.len, &grease[n..]),
            (0x21 + 0x1f * 3, 3, &b"xyz"[..])
        );
    }

    #[test]
    fn goaway_carries_exactly_one_id() {
        let mut out = Vec::new();
        put_goaway(&mut out, 16);
        let (h, n) = parse_header(&out).unwrap();
        assert_eq!(h.ty, GOAWAY);
        assert_eq!(parse_id(&out[n..]), Some(16));
        assert_eq!(parse_id(&[0x10, 0x00]), None);
        assert_eq!(parse_id(&[]), None);
        assert!(is_http2_only(0x06) && !is_http2_only(DATA) && !is_http2_only(GOAWAY));
    }
}
