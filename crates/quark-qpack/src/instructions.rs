//! Encoder and decoder stream instructions (RFC 9204 §4.3, §4.4): parsing
//! with bounded strings, and writing.

use crate::{huffman, prefix_int};
use prefix_int::IntError;

/// An instruction on the encoder stream (RFC 9204 §4.3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum EncoderInstr {
    /// §4.3.1 Set Dynamic Table Capacity.
    SetCapacity(u64),
    /// §4.3.2 Insert With Name Reference; `index` is static, or relative
    /// to the Insert Count when `is_static` is false.
    InsertNameRef {
        is_static: bool,
        index: u64,
        value: Vec<u8>,
    },
    /// §4.3.3 Insert With Literal Name.
    InsertLiteral { name: Vec<u8>, value: Vec<u8> },
    /// §4.3.4 Duplicate (relative index).
    Duplicate(u64),
}

/// An instruction on the decoder stream (RFC 9204 §4.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DecoderInstr {
    /// §4.4.1 Section Acknowledgment.
    SectionAck(u64),
    /// §4.4.2 Stream Cancellation.
    StreamCancel(u64),
    /// §4.4.3 Insert Count Increment.
    InsertCountIncrement(u64),
}

/// Why an instruction could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ParseError {
    /// More bytes are needed.
    Truncated,
    /// The bytes are invalid (the reason).
    Invalid(&'static str),
}

/// A cursor over instruction bytes.
pub(crate) struct Cursor<'a> {
    pub(crate) buf: &'a [u8],
    pub(crate) pos: usize,
}

impl Cursor<'_> {
    fn first(&self) -> Result<u8, ParseError> {
        self.buf.get(self.pos).copied().ok_or(ParseError::Truncated)
    }

    pub(crate) fn int(&mut self, n: u8) -> Result<u64, ParseError> {
        let (v, used) = prefix_int::decode(&self.buf[self.pos..], n).map_err(|e| match e {
            IntError::Truncated => ParseError::Truncated,
            IntError::Overflow => ParseError::Invalid("integer exceeds 2^62-1"),
        })?;
        self.pos += used;
        Ok(v)
    }

    /// A string literal with an `n`-bit length prefix (H just above it), of
    /// at most `max` bytes decoded. An announced length that could not decode
    /// within `max` is refused before its bytes arrive, so the caller's
    /// buffer stays bounded.
    pub(crate) fn string(&mut self, n: u8, max: u64) -> Result<Vec<u8>, ParseError> {
        let huff = self.first()? & (1 << n) != 0;
        let len = self.int(n)?;
        // A Huffman code is at least 5 bits per byte, so len bytes decode to
        // at least len * 8 / 30 bytes (the longest code is 30 bits).
        let least = if huff {
            len.saturating_mul(8) / 30
        } else {
            len
        };
        if least > max {
            return Err(ParseError::Invalid("string longer than the table capacity"));
        }
        let len = len as usize; // <= 30/8 * max, which the caller bounds
        let data = self
            .buf
            .get(self.pos..self.pos.saturating_add(len))
            .ok_or(ParseError::Truncated)?;
        self.pos += len;
        if !huff {
            return Ok(data.to_vec());
        }
        let mut out = Vec::with_capacity(len + len / 2);
        let limit = usize::try_from(max).unwrap_or(usize::MAX);
        huffman::decode(data, limit, &mut out)
            .map_err(|_| ParseError::Invalid("bad or too long Huffman string"))?;
        Ok(out)
    }
}

/// Reads one encoder instruction from `buf`; strings beyond `max_string`
/// are refused. Returns it and the bytes used.
pub(crate) fn parse_encoder(
    buf: &[u8],
    max_string: u64,
) -> Result<(EncoderInstr, usize), ParseError> {
    let mut c = Cursor { buf, pos: 0 };
    let b = c.first()?;
    let instr = if b & 0x80 != 0 {
        let is_static = b & 0x40 != 0;
        let index = c.int(6)?;
        let value = c.string(7, max_string)?;
        EncoderInstr::InsertNameRef {
            is_static,
            index,
            value,
        }
    } else if b & 0x40 != 0 {
        let name = c.string(5, max_string)?;
        let value = c.string(7, max_string)?;
        EncoderInstr::InsertLiteral { name, value }
    } else if b & 0x20 != 0 {
        EncoderInstr::SetCapacity(c.int(5)?)
    } else {
        EncoderInstr::Duplicate(c.int(5)?)
    };
    Ok((instr, c.pos))
}

/// Reads one decoder instruction from `buf`; returns it and the bytes used.
pub(crate) fn parse_decoder(buf: &[u8]) -> Result<(DecoderInstr, usize), ParseError> {
    let mut c = Cursor { buf, pos: 0 };
    let b = c.first()?;
    let instr = if b & 0x80 != 0 {
        DecoderInstr::SectionAck(c.int(7)?)
    } else if b & 0x40 != 0 {
        DecoderInstr::StreamCancel(c.int(6)?)
    } else {
        DecoderInstr::InsertCountIncrement(c.int(6)?)
    };
    Ok((instr, c.pos))
}

/// Appends an encoder instruction. String literals are Huffman-coded by the
/// same rule as in field sections.
pub(crate) fn write_encoder(out: &mut Vec<u8>, instr: &EncoderInstr) {
    use crate::field::encode_string;
    match instr {
        EncoderInstr::SetCapacity(c) => prefix_int::encode(out, 0x20, 5, *c),
        EncoderInstr::InsertNameRef {
            is_static,
            index,
            value,
        } => {
            let t = if *is_static { 0x40 } else { 0 };
            prefix_int::encode(out, 0x80 | t, 6, *index);
            encode_string(out, 0, 7, value);
        }
        EncoderInstr::InsertLiteral { name, value } => {
            encode_string(out, 0x40, 5, name);
            encode_string(out, 0, 7, value);
        }
        EncoderInstr::Duplicate(i) => prefix_int::encode(out, 0, 5, *i),
    }
}

/// Appends a decoder instruction.
pub(crate) fn write_decoder(out: &mut Vec<u8>, instr: DecoderInstr) {
    match instr {
        DecoderInstr::SectionAck(id) => prefix_int::encode(out, 0x80, 7, id),
        DecoderInstr::StreamCancel(id) => prefix_int::encode(out, 0x40, 6, id),
        DecoderInstr::InsertCountIncrement(n) => prefix_int::encode(out, 0, 6, n),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    //= https://www.rfc-editor.org/rfc/rfc9204#appendix-B
    #[test]
    fn appendix_b_instructions_byte_exact() {
        let enc = |i: EncoderInstr| {
            let mut out = Vec::new();
            write_encoder(&mut out, &i);
            out
        };
        assert_eq!(enc(EncoderInstr::SetCapacity(220)), [0x3f, 0xbd, 0x01]);
        let mut b2 = vec![0xc0, 0x0f];
        b2.extend_from_slice(b"www.example.com");
        let insert = EncoderInstr::InsertNameRef {
            is_static: true,
            index: 0,
            value: b"www.example.com".to_vec(),
        };
        assert_eq!(enc(insert), b2);
        let mut b3 = vec![0x4a];
        b3.extend_from_slice(b"custom-key\x0ccustom-value");
        let literal = EncoderInstr::InsertLiteral {
            name: b"custom-key".to_vec(),
            value: b"custom-value".to_vec(),
        };
        assert_eq!(enc(literal), b3);
        assert_eq!(enc(EncoderInstr::Duplicate(2)), [0x02]);
        let mut b5 = vec![0x81, 0x0d];
        b5.extend_from_slice(b"custom-value2");
        let by_name = EncoderInstr::InsertNameRef {
            is_static: false,
            index: 1,
            value: b"custom-value2".to_vec(),
        };
        assert_eq!(enc(by_name), b5);
        let dec = |i| {
            let mut out = Vec::new();
            write_decoder(&mut out, i);
            out
        };
        assert_eq!(dec(DecoderInstr::SectionAck(4)), [0x84]);
        assert_eq!(dec(DecoderInstr::InsertCountIncrement(1)), [0x01]);
        assert_eq!(dec(DecoderInstr::StreamCancel(8)), [0x48]);
    }

    #[test]
    fn round_trip_and_limits() {
        let all = [
            EncoderInstr::SetCapacity(220),
            EncoderInstr::InsertNameRef {
                is_static: true,
                index: 0,
                value: b"www.example.com".to_vec(),
            },
            EncoderInstr::InsertNameRef {
                is_static: false,
                index: 70,
                value: b"a long value that gets huffman coded".to_vec(),
            },
            EncoderInstr::InsertLiteral {
                name: b"custom-key".to_vec(),
                value: b"custom-value".to_vec(),
            },
            EncoderInstr::Duplicate(2),
        ];
        for i in &all {
            let mut out = Vec::new();
            write_encoder(&mut out, i);
            assert_eq!(parse_encoder(&out, 100), Ok((i.clone(), out.len())));
            for cut in 0..out.len() {
                assert_eq!(parse_encoder(&out[..cut], 100), Err(ParseError::Truncated));
            }
        }
        // A 200-byte value is refused from its length alone.
        let mut long = vec![0x4a];
        long.extend_from_slice(b"custom-key");
        long.extend([0x7f, 0x49]);
        assert!(matches!(
            parse_encoder(&long, 100),
            Err(ParseError::Invalid(_))
        ));
        for d in [
            DecoderInstr::SectionAck(4),
            DecoderInstr::StreamCancel(8),
            DecoderInstr::InsertCountIncrement(1),
            DecoderInstr::SectionAck(1 << 40),
        ] {
            let mut out = Vec::new();
            write_decoder(&mut out, d);
            assert_eq!(parse_decoder(&out), Ok((d, out.len())));
        }
    }
}
