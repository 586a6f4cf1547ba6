//! Encoded field sections: the QPACK blocks inside HEADERS frames.
//!
//= https://www.rfc-editor.org/rfc/rfc9204#section-4.5
//# An encoded field section consists of a prefix and a possibly empty
//# sequence of representations defined in this section.
//
// quark advertises a dynamic table capacity of 0, so only the static forms
// are produced and accepted; every dynamic form is an error.

use std::borrow::Cow;

use crate::static_table::{self, Match};
use crate::{DecodeError, Field, huffman, prefix_int};
use prefix_int::IntError;

//= https://www.rfc-editor.org/rfc/rfc9114#section-4.2.2
//# The size of a field list is calculated based on the uncompressed size
//# of fields, including the length of the name and value in bytes plus
//# an overhead of 32 bytes for each field.
pub(crate) const FIELD_OVERHEAD: u64 = 32;

// First-byte patterns (RFC 9204 Figures 13-17).
pub(crate) const INDEXED: u8 = 0b1000_0000; // 1T
pub(crate) const INDEXED_STATIC: u8 = 0b0100_0000; // T bit of an indexed line
pub(crate) const NAME_REF: u8 = 0b0100_0000; // 01NT
pub(crate) const NAME_REF_STATIC: u8 = 0b0001_0000; // T bit of a name reference
pub(crate) const LITERAL_NAME: u8 = 0b0010_0000; // 001NH, H sits above the 3-bit length

/// Appends the encoded field section (RFC 9204 §4.5) for `fields` to `out`:
/// prefix with Required Insert Count 0 and Delta Base 0; each field as an
/// Indexed Field Line (static) when name AND value match a static entry, else a
/// Literal Field Line With Name Reference (static, N bit = 0) when the name
/// matches, else a Literal Field Line With Literal Name. String literals of
/// 16 bytes or more are Huffman-encoded when that is shorter, others go raw.
pub fn encode_section(fields: &[(&[u8], &[u8])], out: &mut Vec<u8>) {
    // Required Insert Count 0, then S = 0 and Delta Base 0: no dynamic table.
    out.extend_from_slice(&[0x00, 0x00]);
    for &(name, value) in fields {
        match static_table::find(name, value) {
            Match::Full(i) => {
                prefix_int::encode(out, INDEXED | INDEXED_STATIC, 6, i as u64);
            }
            Match::Name(i) => {
                // N = 0: we never ask intermediaries to avoid indexing.
                prefix_int::encode(out, NAME_REF | NAME_REF_STATIC, 4, i as u64);
                encode_string(out, 0, 7, value);
            }
            Match::None => {
                encode_string(out, LITERAL_NAME, 3, name);
                encode_string(out, 0, 7, value);
            }
        }
    }
}

/// Strings shorter than this go raw. Huffman saves a few bytes on a short
/// string (a path, an authority, a content-length), but coding and decoding
/// them was 1 µs of a 20 µs HTTP/3 request in the lab; without a dynamic
/// table every request pays that again. Long values (cookies, user agents,
/// long URLs) still shrink.
pub(crate) const HUFFMAN_MIN_LEN: usize = 16;

/// Appends a string literal whose length has an `n`-bit prefix, with the H
/// flag just above it and `flags` above that. Huffman only for strings of at
/// least [`HUFFMAN_MIN_LEN`] bytes, and when it saves bytes.
pub(crate) fn encode_string(out: &mut Vec<u8>, flags: u8, n: u8, s: &[u8]) {
    let h = 1u8 << n;
    let huff_len = match s.len() >= HUFFMAN_MIN_LEN {
        true => huffman::encoded_len(s),
        false => usize::MAX,
    };
    if huff_len < s.len() {
        prefix_int::encode(out, flags | h, n, huff_len as u64);
        huffman::encode(s, out);
    } else {
        prefix_int::encode(out, flags, n, s.len() as u64);
        out.extend_from_slice(s);
    }
}

/// Decodes a field section. `max_size` bounds the decoded section size as
/// RFC 9114 §4.2.2 defines it (sum over fields of name len + value len + 32);
/// exceeding it is [`DecodeError::TooLarge`], checked while decoding, before
/// allocating beyond it. Any reference to the dynamic table (Required Insert
/// Count != 0, a negative Base, post-Base forms, or T bit = 0 in indexed or
/// name-reference lines) is [`DecodeError::DynamicReference`].
pub fn decode_section(block: &[u8], max_size: u64) -> Result<Vec<Field>, DecodeError> {
    let mut r = Reader {
        buf: block,
        budget: max_size,
    };
    r.static_prefix()?; // Base itself is irrelevant without a dynamic table.

    let mut fields = Vec::new();
    while let Some(&first) = r.buf.first() {
        let field = if first & INDEXED != 0 {
            if first & INDEXED_STATIC == 0 {
                return Err(DecodeError::DynamicReference);
            }
            let (name, value) = static_ref(r.int(6)?)?;
            r.charge(FIELD_OVERHEAD + name.len() as u64 + value.len() as u64)?;
            Field {
                name: Cow::Borrowed(name),
                value: Cow::Borrowed(value),
            }
        } else if first & NAME_REF != 0 {
            if first & NAME_REF_STATIC == 0 {
                return Err(DecodeError::DynamicReference);
            }
            let (name, _) = static_ref(r.int(4)?)?;
            r.charge(FIELD_OVERHEAD + name.len() as u64)?;
            let value = r.string(7)?;
            Field {
                name: Cow::Borrowed(name),
                value: Cow::Owned(value),
            }
        } else if first & LITERAL_NAME != 0 {
            r.charge(FIELD_OVERHEAD)?;
            let name = r.string(3)?;
            let value = r.string(7)?;
            Field {
                name: Cow::Owned(name),
                value: Cow::Owned(value),
            }
        } else {
            // 0001xxxx (post-Base index) or 0000xxxx (post-Base name
            // reference): both point into the dynamic table.
            return Err(DecodeError::DynamicReference);
        };
        fields.push(field);
    }
    Ok(fields)
}

pub(crate) fn static_ref(index: u64) -> Result<(&'static [u8], &'static [u8]), DecodeError> {
    usize::try_from(index)
        .ok()
        .and_then(static_table::static_entry)
        .ok_or(DecodeError::BadStaticIndex(index))
}

/// A cursor over the block that also tracks the size still allowed.
pub(crate) struct Reader<'a> {
    pub(crate) buf: &'a [u8],
    pub(crate) budget: u64,
}

impl Reader<'_> {
    pub(crate) fn peek(&self) -> Result<u8, DecodeError> {
        self.buf.first().copied().ok_or(DecodeError::Truncated)
    }

    pub(crate) fn int(&mut self, n: u8) -> Result<u64, DecodeError> {
        let (v, used) = prefix_int::decode(self.buf, n).map_err(|e| match e {
            IntError::Truncated => DecodeError::Truncated,
            IntError::Overflow => DecodeError::IntegerOverflow,
        })?;
        self.buf = &self.buf[used..];
        Ok(v)
    }

    /// The section prefix (RFC 9204 §4.5.1) of a decoder with no dynamic
    /// table: Required Insert Count 0 and a non-negative Base.
    pub(crate) fn static_prefix(&mut self) -> Result<(), DecodeError> {
        //= https://www.rfc-editor.org/rfc/rfc9204#section-4.5.1.1
        //# If the decoder encounters a value
        //# of EncodedInsertCount that could not have been produced by a
        //# conformant encoder, it MUST treat this as a connection error of type
        //# QPACK_DECOMPRESSION_FAILED.
        // With MaxEntries = 0 only 0 can be produced.
        if self.int(8)? != 0 {
            return Err(DecodeError::DynamicReference);
        }
        //= https://www.rfc-editor.org/rfc/rfc9204#section-4.5.1.2
        //# An endpoint MUST treat a field block
        //# with a Sign bit of 1 as invalid if the value of Required Insert Count
        //# is less than or equal to the value of Delta Base.
        // Required Insert Count is 0, so S = 1 is always invalid; a negative Base
        // only makes sense for dynamic references, hence the error chosen.
        let sign = self.peek()? & 0x80 != 0;
        self.int(7)?;
        if sign {
            return Err(DecodeError::DynamicReference);
        }
        Ok(())
    }

    /// Takes `n` bytes of the size budget.
    pub(crate) fn charge(&mut self, n: u64) -> Result<(), DecodeError> {
        self.budget = self.budget.checked_sub(n).ok_or(DecodeError::TooLarge)?;
        Ok(())
    }

    /// Reads a string literal whose length has an `n`-bit prefix (H flag just
    /// above it) and charges its decoded length to the budget.
    pub(crate) fn string(&mut self, n: u8) -> Result<Vec<u8>, DecodeError> {
        let mut out = Vec::new();
        self.string_to(n, &mut out)?;
        Ok(out)
    }

    /// [`string`](Reader::string), appended to `out`.
    pub(crate) fn string_to(&mut self, n: u8, out: &mut Vec<u8>) -> Result<(), DecodeError> {
        let huffman = self.peek()? & (1 << n) != 0;
        let len = self.int(n)?;
        let data = usize::try_from(len)
            .ok()
            .and_then(|len| self.buf.get(..len))
            .ok_or(DecodeError::Truncated)?;
        self.buf = &self.buf[data.len()..];
        if !huffman {
            self.charge(len)?;
            out.extend_from_slice(data);
            return Ok(());
        }
        // Huffman codes are at least 5 bits, so `data` decodes to at most
        // len * 8 / 5 bytes; reserve no more than that or the budget.
        let limit = usize::try_from(self.budget).unwrap_or(usize::MAX);
        let start = out.len();
        out.reserve((data.len() / 5 * 8 + 8).min(limit));
        huffman::decode(data, limit, out).map_err(|e| match e {
            huffman::HuffmanError::Invalid => DecodeError::BadHuffman,
            huffman::HuffmanError::TooLong => DecodeError::TooLarge,
        })?;
        self.charge((out.len() - start) as u64)
    }
}
