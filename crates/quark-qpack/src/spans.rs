//! Static-table field sections decoded without an allocation per field:
//! names and values are either static table entries or byte ranges of one
//! buffer the caller owns (and may reuse). [`decode_section`](crate::decode_section)
//! makes a `Vec` per literal string and one for the list.

use crate::field::{
    FIELD_OVERHEAD, INDEXED, INDEXED_STATIC, LITERAL_NAME, NAME_REF, NAME_REF_STATIC, Reader,
    static_ref,
};
use crate::{DecodeError, static_entry};

/// Where a decoded name or value lies (12 bytes: a head's lines are kept
/// in place, and moved with it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Span {
    /// The name of static table entry `i`.
    Name(u8),
    /// The value of static table entry `i`.
    Value(u8),
    /// `buf[start..end]` of the buffer the section was decoded into.
    At(u32, u32),
}

impl Span {
    /// The bytes, given the buffer the section was decoded into.
    pub fn get<'a>(&self, buf: &'a [u8]) -> &'a [u8] {
        match *self {
            Span::Name(i) => static_entry(i.into()).map_or(&[], |e| e.0),
            Span::Value(i) => static_entry(i.into()).map_or(&[], |e| e.1),
            Span::At(start, end) => &buf[start as usize..end as usize],
        }
    }
}

/// A static table index that decoded (below 99, so it fits a byte).
fn index(i: u64) -> u8 {
    i as u8
}

/// Decodes a static-table field section (the rules and errors of
/// [`decode_section`](crate::decode_section)), appending literal names and
/// values to `buf` and handing each field line to `line` in order. Nothing is
/// allocated unless `buf` must grow; a block of `n` bytes needs at most
/// `n * 8 / 5` bytes of it (Huffman codes are at least 5 bits). `max_size`
/// bounds the section's size (RFC 9114 §4.2.2) and so `buf`'s growth.
pub fn decode_section_spans(
    block: &[u8],
    max_size: u64,
    buf: &mut Vec<u8>,
    mut line: impl FnMut(Span, Span),
) -> Result<(), DecodeError> {
    let mut r = Reader {
        buf: block,
        budget: max_size,
    };
    r.static_prefix()?;
    while let Some(&first) = r.buf.first() {
        //= https://www.rfc-editor.org/rfc/rfc9204#section-4.5.2
        //# An indexed field line representation identifies an entry in the
        //# static table or an entry in the dynamic table with an absolute
        //# index less than the value of the Base.
        if first & INDEXED != 0 {
            if first & INDEXED_STATIC == 0 {
                return Err(DecodeError::DynamicReference);
            }
            let i = r.int(6)?;
            let (name, value) = static_ref(i)?;
            r.charge(FIELD_OVERHEAD + name.len() as u64 + value.len() as u64)?;
            line(Span::Name(index(i)), Span::Value(index(i)));
        } else if first & NAME_REF != 0 {
            if first & NAME_REF_STATIC == 0 {
                return Err(DecodeError::DynamicReference);
            }
            let i = r.int(4)?;
            let (name, _) = static_ref(i)?;
            r.charge(FIELD_OVERHEAD + name.len() as u64)?;
            let value = r.string_into(7, buf)?;
            line(Span::Name(index(i)), value);
        } else if first & LITERAL_NAME != 0 {
            r.charge(FIELD_OVERHEAD)?;
            let name = r.string_into(3, buf)?;
            let value = r.string_into(7, buf)?;
            line(name, value);
        } else {
            // Post-Base forms point into the dynamic table.
            return Err(DecodeError::DynamicReference);
        }
    }
    Ok(())
}

impl Reader<'_> {
    /// [`string`](Reader::string), appended to `buf`: where it landed.
    fn string_into(&mut self, n: u8, buf: &mut Vec<u8>) -> Result<Span, DecodeError> {
        let start = buf.len();
        self.string_to(n, buf)?;
        let end = u32::try_from(buf.len()).map_err(|_| DecodeError::TooLarge)?;
        Ok(Span::At(start as u32, end))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{decode_section, encode_section};

    /// Decoded lines, owned.
    type Lines = Vec<(Vec<u8>, Vec<u8>)>;

    fn spans(block: &[u8], max: u64) -> Result<Lines, DecodeError> {
        let (mut buf, mut lines) = (Vec::new(), Vec::new());
        decode_section_spans(block, max, &mut buf, |n, v| lines.push((n, v)))?;
        Ok(lines
            .iter()
            .map(|(n, v)| (n.get(&buf).to_vec(), v.get(&buf).to_vec()))
            .collect())
    }

    fn owned(block: &[u8], max: u64) -> Result<Lines, DecodeError> {
        let fields = decode_section(block, max)?;
        Ok(fields
            .into_iter()
            .map(|f| (f.name.into_owned(), f.value.into_owned()))
            .collect())
    }

    #[test]
    fn the_same_fields_as_decode_section() {
        let long = "a-user-agent-string that is long enough for Huffman (x/1.0)";
        let fields: &[(&[u8], &[u8])] = &[
            (b":method", b"GET"),
            (b":path", b"/2048"),
            (b":authority", b"localhost:4433"),
            (b"content-length", b"2048"),
            (b"user-agent", long.as_bytes()),
            (b"x-custom-name-that-is-long", long.as_bytes()),
            (b"x-short", b""),
        ];
        let mut block = Vec::new();
        encode_section(fields, &mut block);
        let got = spans(&block, 1 << 16).unwrap();
        assert_eq!(got, owned(&block, 1 << 16).unwrap());
        let want: Vec<_> = fields
            .iter()
            .map(|(n, v)| (n.to_vec(), v.to_vec()))
            .collect();
        assert_eq!(got, want);
        // Huffman was used (the long strings), and raw strings: both decoded.
        assert!(block.len() < 2 * long.len() + 40);
        // A size limit refuses the section as decode_section does.
        let size: u64 = fields
            .iter()
            .map(|(n, v)| (n.len() + v.len() + 32) as u64)
            .sum();
        assert_eq!(spans(&block, size).unwrap().len(), fields.len());
        assert_eq!(spans(&block, size - 1), Err(DecodeError::TooLarge));
        assert_eq!(owned(&block, size - 1), Err(DecodeError::TooLarge));
    }

    #[test]
    fn bad_blocks_fail_as_decode_section_does() {
        let mut block = Vec::new();
        encode_section(&[(b":path", b"/index.html")], &mut block);
        for cut in 0..block.len() {
            assert_eq!(spans(&block[..cut], 1 << 16), owned(&block[..cut], 1 << 16));
            assert!(spans(&block[..cut], 1 << 16).is_err() || cut == 2);
        }
        for bad in [
            &[0x01, 0x00][..],                     // Required Insert Count 1
            &[0x00, 0x80],                         // negative Base
            &[0x00, 0x00, 0x80],                   // dynamic indexed line
            &[0x00, 0x00, 0xff, 0x7f],             // static index 126
            &[0x00, 0x00, 0x10],                   // post-Base index
            &[0x00, 0x00, 0x5f, 0x00, 0x81, 0xff], // Huffman EOS-ish padding
        ] {
            assert!(spans(bad, 1 << 16).is_err(), "{bad:?}");
            assert_eq!(spans(bad, 1 << 16), owned(bad, 1 << 16), "{bad:?}");
        }
    }
}
