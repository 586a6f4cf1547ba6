//! N-bit prefix integers.
//!
//= https://www.rfc-editor.org/rfc/rfc7541#section-5.1
//# If the integer value is small enough, i.e., strictly less than 2^N-1, it
//# is encoded within the N-bit prefix.
//
//= https://www.rfc-editor.org/rfc/rfc9204#section-4.1.1
//# QPACK implementations MUST be able to decode integers up to and
//# including 62 bits long.

/// The largest integer we accept: 62 bits, as in QUIC. Larger values are a
/// decoding error rather than silently wrapping.
pub(crate) const MAX: u64 = (1 << 62) - 1;

/// Why a prefix integer could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IntError {
    /// The input ended before the last byte of the integer.
    Truncated,
    /// The value exceeds [`MAX`].
    Overflow,
}

/// Appends `value` with an `n`-bit prefix (`1..=8`); `flags` carries the bits
/// above the prefix in the first byte and must not overlap it.
pub(crate) fn encode(out: &mut Vec<u8>, flags: u8, n: u8, value: u64) {
    debug_assert!((1..=8).contains(&n));
    let max_prefix = prefix_mask(n);
    if value < u64::from(max_prefix) {
        // Lossless: value < max_prefix <= 255.
        out.push(flags | value as u8);
        return;
    }
    out.push(flags | max_prefix);
    let mut rest = value - u64::from(max_prefix);
    while rest >= 0x80 {
        out.push(0x80 | (rest & 0x7f) as u8);
        rest >>= 7;
    }
    out.push(rest as u8);
}

/// Reads an `n`-bit prefix integer (`1..=8`) from the start of `buf`, ignoring
/// the bits above the prefix. Returns the value and the bytes it used.
pub(crate) fn decode(buf: &[u8], n: u8) -> Result<(u64, usize), IntError> {
    let max_prefix = prefix_mask(n);
    let first = *buf.first().ok_or(IntError::Truncated)?;
    let mut value = u64::from(first & max_prefix);
    if value < u64::from(max_prefix) {
        return Ok((value, 1));
    }
    let mut shift = 0u32;
    for (i, &b) in buf.iter().enumerate().skip(1) {
        // Nine continuation bytes carry 63 bits, more than MAX needs; a longer
        // run (even of zero padding) is refused so the loop stays bounded.
        if shift > 56 {
            return Err(IntError::Overflow);
        }
        // shift <= 56 and the payload < 2^7, so this is < 2^63 and, added to
        // value <= MAX < 2^62, cannot overflow a u64.
        value += u64::from(b & 0x7f) << shift;
        if value > MAX {
            return Err(IntError::Overflow);
        }
        if b & 0x80 == 0 {
            return Ok((value, i + 1));
        }
        shift += 7;
    }
    Err(IntError::Truncated)
}

/// `2^n - 1` for `n` in `1..=8`, computed without shifting a u8 by 8.
fn prefix_mask(n: u8) -> u8 {
    (0xffu16 >> (8 - n.clamp(1, 8))) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(flags: u8, n: u8, v: u64) -> Vec<u8> {
        let mut out = Vec::new();
        encode(&mut out, flags, n, v);
        out
    }

    //= https://www.rfc-editor.org/rfc/rfc7541#appendix-C.1
    #[test]
    fn rfc7541_c1_examples() {
        assert_eq!(enc(0, 5, 10), [0x0a]);
        assert_eq!(enc(0, 5, 1337), [0x1f, 0x9a, 0x0a]);
        assert_eq!(enc(0, 8, 42), [0x2a]);
        assert_eq!(decode(&[0xea], 5), Ok((10, 1)), "high bits ignored");
        assert_eq!(decode(&[0x1f, 0x9a, 0x0a, 0xff], 5), Ok((1337, 3)));
        assert_eq!(decode(&[0x2a], 8), Ok((42, 1)));
    }

    #[test]
    fn boundaries() {
        // 2^N - 1 itself needs a zero continuation byte.
        assert_eq!(enc(0x20, 5, 31), [0x3f, 0x00]);
        assert_eq!(decode(&[0x3f, 0x00], 5), Ok((31, 2)));
        assert_eq!(enc(0, 8, 255), [0xff, 0x00]);
        assert_eq!(enc(0x80, 1, 0), [0x80]);
        for n in 1..=8 {
            for v in [0, 1, 126, 127, 128, 255, 256, 16_383, 1 << 40, MAX] {
                let bytes = enc(0, n, v);
                assert_eq!(decode(&bytes, n), Ok((v, bytes.len())), "n={n} v={v}");
            }
        }
    }

    #[test]
    fn truncated_and_overflow() {
        assert_eq!(decode(&[], 5), Err(IntError::Truncated));
        assert_eq!(decode(&[0x1f], 5), Err(IntError::Truncated));
        assert_eq!(decode(&[0x1f, 0x9a], 5), Err(IntError::Truncated));
        let mut too_big = enc(0, 8, MAX);
        assert_eq!(decode(&too_big, 8), Ok((MAX, too_big.len())));
        // MAX + 1: bump the least significant continuation payload.
        too_big[1] += 1;
        assert_eq!(decode(&too_big, 8), Err(IntError::Overflow));
        // Endless zero padding is refused, not looped over.
        let mut padded = vec![0xff];
        padded.extend([0x80; 20]);
        padded.push(0);
        assert_eq!(decode(&padded, 8), Err(IntError::Overflow));
        // u64::MAX-sized values fail cleanly.
        let mut huge = vec![0xff];
        huge.extend([0xff; 9]);
        huge.push(0x7f);
        assert_eq!(decode(&huge, 8), Err(IntError::Overflow));
    }
}
