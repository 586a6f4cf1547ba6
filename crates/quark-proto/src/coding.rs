//! A bounds-checked cursor for decoding wire formats. Every accessor returns
//! `Err(UnexpectedEnd)` instead of panicking when the input is short.

/// The input ended before a complete value was read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unexpected end of input")]
pub struct UnexpectedEnd;

/// A read cursor over a byte slice.
#[derive(Clone, Debug)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader positioned at the start of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    /// Bytes not yet read.
    #[inline]
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// True when everything has been read.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.pos == self.buf.len()
    }

    /// Bytes read so far.
    #[inline]
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Read one byte.
    #[inline]
    pub fn u8(&mut self) -> Result<u8, UnexpectedEnd> {
        let b = *self.buf.get(self.pos).ok_or(UnexpectedEnd)?;
        self.pos += 1;
        Ok(b)
    }

    /// Read a big-endian u16.
    pub fn u16(&mut self) -> Result<u16, UnexpectedEnd> {
        Ok(u16::from_be_bytes(self.array()?))
    }

    /// Read a big-endian u32.
    pub fn u32(&mut self) -> Result<u32, UnexpectedEnd> {
        Ok(u32::from_be_bytes(self.array()?))
    }

    /// Read a fixed-size array.
    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], UnexpectedEnd> {
        let bytes = self.bytes(N)?;
        let mut out = [0; N];
        out.copy_from_slice(bytes);
        Ok(out)
    }

    /// Read `n` bytes.
    #[inline]
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], UnexpectedEnd> {
        if self.remaining() < n {
            return Err(UnexpectedEnd);
        }
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    /// Read a variable-length integer (RFC 9000 §16).
    //
    // A loop of checked byte reads, kept: one bounds check and one big-endian
    // load per value measured no better in bulk (callgrind, floors NOTES §5),
    // as `varint_bytes` then stopped being inlined.
    #[inline]
    pub fn varint(&mut self) -> Result<u64, UnexpectedEnd> {
        let first = self.u8()?;
        let len = 1usize << (first >> 6);
        let mut v = u64::from(first & 0x3f);
        for _ in 1..len {
            v = (v << 8) | u64::from(self.u8()?);
        }
        Ok(v)
    }

    /// Read a varint-length-prefixed byte string.
    pub fn varint_bytes(&mut self) -> Result<&'a [u8], UnexpectedEnd> {
        let len = self.varint()?;
        let len = usize::try_from(len).map_err(|_| UnexpectedEnd)?;
        self.bytes(len)
    }

    /// Everything not yet read; the reader is left empty.
    pub fn rest(&mut self) -> &'a [u8] {
        let out = &self.buf[self.pos..];
        self.pos = self.buf.len();
        out
    }

    /// Look at the next byte without consuming it.
    pub fn peek(&self) -> Option<u8> {
        self.buf.get(self.pos).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_input_is_an_error_not_a_panic() {
        let mut r = Reader::new(&[0x40]);
        assert_eq!(r.varint(), Err(UnexpectedEnd));
        let mut r = Reader::new(&[1, 2]);
        assert_eq!(r.u32(), Err(UnexpectedEnd));
        assert_eq!(r.bytes(3), Err(UnexpectedEnd));
        assert_eq!(r.bytes(2).unwrap(), &[1, 2]);
        assert!(r.is_empty());
        let mut r = Reader::new(&[0xc0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
        // an 8-byte length cannot be satisfied by this input
        assert_eq!(Reader::new(&[0x05, 1]).varint_bytes(), Err(UnexpectedEnd));
        assert!(r.varint().is_ok());
    }

    /// Every length of varint decodes to what `put_varint` wrote, at both
    /// ends of each length's range, and a short one is an error.
    #[test]
    fn varint_round_trips_at_every_length() {
        let values = [
            0,
            1,
            37,
            63,
            64,
            15_293,
            16_383,
            16_384,
            494_878_333,
            1_073_741_823,
            1_073_741_824,
            151_288_809_941_952_652,
            (1 << 62) - 1,
        ];
        for v in values {
            let mut buf = vec![0xee];
            crate::varint::put_varint(&mut buf, v);
            let len = buf.len() - 1;
            buf.push(0xab);
            let mut r = Reader::new(&buf);
            r.u8().unwrap();
            assert_eq!(r.varint(), Ok(v), "{v}");
            assert_eq!(r.position(), 1 + len);
            assert_eq!(r.u8(), Ok(0xab));
            // Cut short by one byte: an error.
            let mut r = Reader::new(&buf[1..len]);
            assert_eq!(r.varint(), Err(UnexpectedEnd), "{v}");
        }
        // RFC 9000 Appendix A.1's examples.
        let cases: [(&[u8], u64); 4] = [
            (
                &[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c],
                151_288_809_941_952_652,
            ),
            (&[0x9d, 0x7f, 0x3e, 0x7d], 494_878_333),
            (&[0x7b, 0xbd], 15_293),
            (&[0x25], 37),
        ];
        for (bytes, v) in cases {
            assert_eq!(Reader::new(bytes).varint(), Ok(v));
        }
        assert_eq!(Reader::new(&[0x40, 0x25]).varint(), Ok(37));
    }
}
