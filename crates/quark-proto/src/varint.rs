//! Variable-length integers.
//!
//= https://www.rfc-editor.org/rfc/rfc9000#section-16
//# QUIC packets and frames commonly use a variable-length encoding for
//# non-negative integer values.  This encoding ensures that smaller
//# integer values need fewer bytes to encode.

use std::fmt;

use bytes::BufMut;

/// An integer in `0..=2^62-1`, the range a QUIC variable-length integer can carry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct VarInt(u64);

/// A value was too large to be encoded as a [`VarInt`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("value exceeds 2^62-1")]
pub struct VarIntBoundsExceeded;

impl VarInt {
    /// The largest value a varint can hold.
    pub const MAX: VarInt = VarInt((1 << 62) - 1);
    /// Zero.
    pub const ZERO: VarInt = VarInt(0);

    /// Any `u32` fits.
    pub const fn from_u32(v: u32) -> Self {
        VarInt(v as u64)
    }

    /// Checked conversion from `u64`.
    pub const fn from_u64(v: u64) -> Result<Self, VarIntBoundsExceeded> {
        if v <= Self::MAX.0 {
            Ok(VarInt(v))
        } else {
            Err(VarIntBoundsExceeded)
        }
    }

    /// The value.
    pub const fn into_inner(self) -> u64 {
        self.0
    }

    /// Encoded length in bytes (1, 2, 4 or 8).
    pub const fn size(self) -> usize {
        varint_size(self.0)
    }

    /// Append the encoding to `buf`.
    pub fn encode<B: BufMut>(self, buf: &mut B) {
        put_varint(buf, self.0)
    }
}

impl From<u32> for VarInt {
    fn from(v: u32) -> Self {
        VarInt::from_u32(v)
    }
}

impl TryFrom<u64> for VarInt {
    type Error = VarIntBoundsExceeded;
    fn try_from(v: u64) -> Result<Self, Self::Error> {
        VarInt::from_u64(v)
    }
}

impl From<VarInt> for u64 {
    fn from(v: VarInt) -> u64 {
        v.0
    }
}

impl fmt::Display for VarInt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Encoded length of `v`. Values above [`VarInt::MAX`] report 8; callers must not
/// encode them (`put_varint` panics in debug builds).
pub const fn varint_size(v: u64) -> usize {
    if v < 1 << 6 {
        1
    } else if v < 1 << 14 {
        2
    } else if v < 1 << 30 {
        4
    } else {
        8
    }
}

/// Append `v` as a varint. `v` must be at most [`VarInt::MAX`].
#[inline]
pub fn put_varint<B: BufMut + ?Sized>(buf: &mut B, v: u64) {
    debug_assert!(v <= VarInt::MAX.0, "varint out of range: {v}");
    if v < 1 << 6 {
        buf.put_u8(v as u8);
    } else if v < 1 << 14 {
        buf.put_u16(0x4000 | v as u16);
    } else if v < 1 << 30 {
        buf.put_u32(0x8000_0000 | v as u32);
    } else {
        buf.put_u64(0xc000_0000_0000_0000 | v);
    }
}

/// Append `v` as a varint of exactly `len` bytes (1, 2, 4 or 8), as needed for
/// length fields written before their value is known.
pub fn put_varint_with_len<B: BufMut + ?Sized>(buf: &mut B, v: u64, len: usize) {
    debug_assert!(varint_size(v) <= len);
    match len {
        1 => buf.put_u8(v as u8),
        2 => buf.put_u16(0x4000 | v as u16),
        4 => buf.put_u32(0x8000_0000 | v as u32),
        _ => buf.put_u64(0xc000_0000_0000_0000 | v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coding::Reader;

    fn decode(bytes: &[u8]) -> u64 {
        let mut r = Reader::new(bytes);
        let v = r.varint().unwrap();
        assert!(r.is_empty());
        v
    }

    //= https://www.rfc-editor.org/rfc/rfc9000#appendix-A.1
    //# For example, the eight-byte sequence 0xc2197c5eff14e88c decodes to
    //# the decimal value 151,288,809,941,952,652; the four-byte sequence
    //# 0x9d7f3e7d decodes to 494,878,333; the two-byte sequence 0x7bbd
    //# decodes to 15,293; and the single byte 0x25 decodes to 37 (as does
    //# the two-byte sequence 0x4025).
    #[test]
    fn rfc9000_examples() {
        let cases: [(&str, u64); 5] = [
            ("c2197c5eff14e88c", 151_288_809_941_952_652),
            ("9d7f3e7d", 494_878_333),
            ("7bbd", 15_293),
            ("25", 37),
            ("4025", 37),
        ];
        for (hex, value) in cases {
            let bytes = hex::decode(hex).unwrap();
            assert_eq!(decode(&bytes), value, "{hex}");
            if hex != "4025" {
                let mut out = Vec::new();
                put_varint(&mut out, value);
                assert_eq!(out, bytes, "{hex}");
            }
        }
    }

    #[test]
    fn bounds() {
        assert!(VarInt::from_u64(1 << 62).is_err());
        assert_eq!(VarInt::from_u64((1 << 62) - 1).unwrap(), VarInt::MAX);
        for (v, len) in [
            (63, 1),
            (64, 2),
            (16383, 2),
            (16384, 4),
            ((1 << 30) - 1, 4),
            (1 << 30, 8),
        ] {
            assert_eq!(varint_size(v), len);
            let mut out = Vec::new();
            put_varint(&mut out, v);
            assert_eq!(out.len(), len);
            assert_eq!(decode(&out), v);
        }
    }

    #[test]
    fn fixed_length_encoding() {
        for len in [1, 2, 4, 8] {
            let mut out = Vec::new();
            put_varint_with_len(&mut out, 5, len);
            assert_eq!(out.len(), len);
            assert_eq!(decode(&out), 5);
        }
    }

    proptest::proptest! {
        #[test]
        fn round_trip(v in 0u64..=VarInt::MAX.into_inner()) {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            proptest::prop_assert_eq!(out.len(), varint_size(v));
            proptest::prop_assert_eq!(decode(&out), v);
        }
    }
}
