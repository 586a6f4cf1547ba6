//! Huffman coding of string literals.
//!
//= https://www.rfc-editor.org/rfc/rfc7541#section-5.2
//# As the Huffman-encoded data doesn't always end at an octet boundary,
//# some padding is inserted after it, up to the next octet boundary.  To
//# prevent this padding from being misinterpreted as part of the string
//# literal, the most significant bits of the code corresponding to the
//# EOS (end-of-string) symbol are used.

use crate::huffman_table::CODES;

const EOS: u16 = 256;
/// The longest code (EOS and a few rare bytes).
const MAX_LEN: usize = 30;

/// Why a Huffman string could not be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HuffmanError {
    /// EOS in the data, or bad padding.
    Invalid,
    /// The decoded string would exceed the caller's limit.
    TooLong,
}

/// Length in bytes of the Huffman encoding of `data`, padding included.
pub(crate) fn encoded_len(data: &[u8]) -> usize {
    let bits: u64 = data
        .iter()
        .map(|&b| u64::from(CODES[usize::from(b)].1))
        .sum();
    // At most 30 bits per input byte, so this fits whenever `data` does.
    bits.div_ceil(8) as usize
}

/// Appends the Huffman encoding of `data` to `out`, padded with the top bits
/// of EOS (all ones).
pub(crate) fn encode(data: &[u8], out: &mut Vec<u8>) {
    // Pending bits live in the low `pending` bits of `acc`: under 8 before a
    // code is added, so at most 37 after, well inside a u64.
    let mut acc: u64 = 0;
    let mut pending: u32 = 0;
    for &b in data {
        let (code, len) = CODES[usize::from(b)];
        acc = (acc << len) | u64::from(code);
        pending += u32::from(len);
        while pending >= 8 {
            pending -= 8;
            out.push((acc >> pending) as u8);
        }
        acc &= (1 << pending) - 1;
    }
    if pending > 0 {
        out.push(((acc << (8 - pending)) as u8) | (0xff >> pending));
    }
}

/// Decodes `data` into `out`, failing with [`HuffmanError::TooLong`] rather
/// than letting `out` grow past `limit` bytes.
///
/// Bits are taken from a 64-bit window, most significant first. Codes of up
/// to 8 bits (the 74 most frequent symbols: letters, digits, common
/// punctuation) are found with one lookup of the window's top byte; longer
/// ones by the canonical code's per-length ranges.
pub(crate) fn decode(data: &[u8], limit: usize, out: &mut Vec<u8>) -> Result<(), HuffmanError> {
    let start = out.len();
    let mut window: u64 = 0;
    let mut bits: u32 = 0;
    let mut next = 0;
    loop {
        while bits <= 56 && next < data.len() {
            window |= u64::from(data[next]) << (56 - bits);
            bits += 8;
            next += 1;
        }
        let (sym, len) = match FAST[(window >> 56) as usize] {
            (sym, len) if len != 0 && u32::from(len) <= bits => (u16::from(sym), u32::from(len)),
            _ => match long_code(window, bits) {
                Some(found) => found,
                // Fewer bits left than any code needs: the padding.
                None => break,
            },
        };
        if sym == EOS {
            return Err(HuffmanError::Invalid);
        }
        if out.len() - start >= limit {
            return Err(HuffmanError::TooLong);
        }
        // Symbols other than EOS are byte values.
        out.push(sym as u8);
        window <<= len;
        bits -= len;
    }
    //= https://www.rfc-editor.org/rfc/rfc7541#section-5.2
    //# A padding strictly longer than 7 bits MUST be treated as a decoding
    //# error.  A padding not corresponding to the most significant bits of
    //# the code for the EOS symbol MUST be treated as a decoding error.
    let ones = if bits == 0 { 0 } else { window >> (64 - bits) };
    if bits > 7 || ones != (1u64 << bits) - 1 {
        return Err(HuffmanError::Invalid);
    }
    Ok(())
}

/// The symbol of the code longer than 8 bits at the top of `window` (of
/// which `bits` are data), and its length; `None` if no code fits in `bits`.
fn long_code(window: u64, bits: u32) -> Option<(u16, u32)> {
    (9..=bits.min(MAX_LEN as u32)).find_map(|len| {
        let code = (window >> (64 - len)) as u32;
        DECODE.symbol(code, len as usize).map(|sym| (sym, len))
    })
}

/// For each value of the next 8 bits: the symbol and length of the code they
/// start with, when that code is at most 8 bits long; `(0, 0)` otherwise.
static FAST: [(u8, u8); 256] = build_fast();

const fn build_fast() -> [(u8, u8); 256] {
    let mut table = [(0u8, 0u8); 256];
    let mut sym = 0;
    while sym < 256 {
        let (code, len) = CODES[sym];
        if len <= 8 {
            // Every byte whose top `len` bits are this code.
            let base = (code as usize) << (8 - len);
            let mut low = 0;
            while low < 1 << (8 - len) {
                table[base | low] = (sym as u8, len);
                low += 1;
            }
        }
        sym += 1;
    }
    table
}

/// The code in canonical form: codes of one length are consecutive and
/// ordered by symbol, so a length's first code and symbol count identify
/// every code of that length.
struct Canonical {
    /// First code of each length.
    first: [u32; MAX_LEN + 1],
    /// How many codes have each length.
    count: [u16; MAX_LEN + 1],
    /// Where each length's symbols start in `symbols`.
    offset: [u16; MAX_LEN + 1],
    /// Symbols ordered by (code length, symbol).
    symbols: [u16; 257],
}

impl Canonical {
    fn symbol(&self, code: u32, len: usize) -> Option<u16> {
        let count = u32::from(*self.count.get(len)?);
        let first = self.first[len];
        let rank = code.checked_sub(first).filter(|&r| r < count)?;
        self.symbols
            .get(usize::from(self.offset[len]) + rank as usize)
            .copied()
    }
}

static DECODE: Canonical = build_canonical();

const fn build_canonical() -> Canonical {
    let mut c = Canonical {
        first: [0; MAX_LEN + 1],
        count: [0; MAX_LEN + 1],
        offset: [0; MAX_LEN + 1],
        symbols: [0; 257],
    };
    let mut next = 0;
    let mut len = 1;
    while len <= MAX_LEN {
        c.offset[len] = next as u16;
        let mut sym = 0;
        while sym < CODES.len() {
            if CODES[sym].1 as usize == len {
                if c.count[len] == 0 {
                    c.first[len] = CODES[sym].0;
                }
                c.count[len] += 1;
                c.symbols[next] = sym as u16;
                next += 1;
            }
            sym += 1;
        }
        len += 1;
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(s: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        encode(s, &mut out);
        assert_eq!(out.len(), encoded_len(s));
        out
    }

    fn dec(b: &[u8]) -> Result<Vec<u8>, HuffmanError> {
        let mut out = Vec::new();
        decode(b, usize::MAX, &mut out).map(|()| out)
    }

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// Canonical code property: sorted by (length, symbol), each code is the
    /// previous one plus one, shifted left when the length grows; the last
    /// is EOS, thirty ones. A mistyped code or length breaks the chain.
    #[test]
    fn table_is_canonical_and_complete() {
        let mut order: Vec<usize> = (0..CODES.len()).collect();
        order.sort_by_key(|&s| (CODES[s].1, s));
        let (mut expect, mut prev_len) = (0u32, CODES[order[0]].1);
        for &s in &order {
            let (code, len) = CODES[s];
            assert!(code < 1 << len, "symbol {s}: code wider than length");
            expect <<= len - prev_len;
            assert_eq!(code, expect, "symbol {s}");
            expect += 1;
            prev_len = len;
        }
        assert_eq!(*order.last().unwrap(), 256);
        assert_eq!(CODES[256], ((1 << 30) - 1, 30));
        // Kraft sum exactly 1: every bit string decodes or is a prefix.
        let kraft: u64 = CODES.iter().map(|&(_, l)| 1u64 << (30 - l)).sum();
        assert_eq!(kraft, 1 << 30);
    }

    //= https://www.rfc-editor.org/rfc/rfc7541#appendix-C.4
    //= https://www.rfc-editor.org/rfc/rfc7541#appendix-C.6
    #[test]
    fn rfc7541_vectors() {
        let cases: &[(&str, &str)] = &[
            ("www.example.com", "f1e3 c2e5 f23a 6ba0 ab90 f4ff"),
            ("no-cache", "a8eb 1064 9cbf"),
            ("custom-key", "25a8 49e9 5ba9 7d7f"),
            ("custom-value", "25a8 49e9 5bb8 e8b4 bf"),
            ("302", "6402"),
            ("private", "aec3 771a 4b"),
            (
                "Mon, 21 Oct 2013 20:13:21 GMT",
                "d07a be94 1054 d444 a820 0595 040b 8166 e082 a62d 1bff",
            ),
            (
                "https://www.example.com",
                "9d29 ad17 1863 c78f 0b97 c8e9 ae82 ae43 d3",
            ),
            ("307", "640e ff"),
            (
                "Mon, 21 Oct 2013 20:13:22 GMT",
                "d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff",
            ),
            ("gzip", "9bd9 ab"),
        ];
        for &(plain, coded) in cases {
            assert_eq!(enc(plain.as_bytes()), hex(coded), "{plain}");
            assert_eq!(dec(&hex(coded)).unwrap(), plain.as_bytes(), "{plain}");
        }
    }

    #[test]
    fn every_byte_round_trips() {
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(dec(&enc(&all)).unwrap(), all);
        for b in 0..=255u8 {
            let one = [b, b, b];
            assert_eq!(dec(&enc(&one)).unwrap(), one, "byte {b}");
        }
        assert_eq!(enc(b""), b"");
        assert_eq!(dec(b"").unwrap(), b"");
    }

    #[test]
    fn bad_padding_and_eos_rejected() {
        // "0" is 00000; padding 000 is not EOS's prefix.
        assert_eq!(dec(&[0b0000_0000]), Err(HuffmanError::Invalid));
        // "0" then padding 111 is fine.
        assert_eq!(dec(&[0b0000_0111]).unwrap(), b"0");
        // Mixed padding bits.
        assert_eq!(dec(&[0b0000_0101]), Err(HuffmanError::Invalid));
        // A whole byte of ones is 8 bits of padding: too long.
        assert_eq!(dec(&[0xff]), Err(HuffmanError::Invalid));
        assert_eq!(dec(&[0x07, 0xff]), Err(HuffmanError::Invalid));
        // EOS (30 ones) spelled out, then padding.
        assert_eq!(dec(&[0xff, 0xff, 0xff, 0xff]), Err(HuffmanError::Invalid));
        // EOS after a real symbol.
        assert_eq!(
            dec(&[0b0000_0111, 0xff, 0xff, 0xff, 0xf8]),
            Err(HuffmanError::Invalid)
        );
    }

    #[test]
    fn limit_is_enforced() {
        let coded = enc(b"www.example.com");
        let mut out = Vec::new();
        assert_eq!(decode(&coded, 15, &mut out), Ok(()));
        out.clear();
        assert_eq!(decode(&coded, 14, &mut out), Err(HuffmanError::TooLong));
        assert!(out.len() <= 14);
    }
}
