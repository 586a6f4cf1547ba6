//! ACK frames: decoding with full range validation, iterating the ranges without
//! allocating, and encoding straight from a descending range iterator.
//!
//= https://www.rfc-editor.org/rfc/rfc9000#section-19.3
//# ACK Frame { Type (i) = 0x02..0x03, Largest Acknowledged (i),
//# ACK Delay (i), ACK Range Count (i), First ACK Range (i),
//# ACK Range (..) ..., [ECN Counts (..)] }

use std::ops::{Range, RangeInclusive};

use bytes::BufMut;
use smallvec::SmallVec;

use super::{Ack, EcnCounts, FrameError};
use crate::coding::Reader;
use crate::varint::{VarInt, put_varint, varint_size};

/// The most bytes of (Gap, ACK Range Length) pairs [`encode_ack`] writes. The range
/// count precedes the ranges on the wire, so they are staged (on the stack for a few) before
/// being written; 2 KiB holds over a thousand typical ranges, far more than any
/// useful ACK (and more than fits a 1500-byte packet).
const MAX_RANGE_BYTES: usize = 2048;

/// Decode the body of an ACK frame (after the type).
pub(super) fn decode<'a>(r: &mut Reader<'a>, with_ecn: bool) -> Result<Ack<'a>, FrameError> {
    let largest = r.varint()?;
    let delay = r.varint()?;
    let range_count = r.varint()?;
    let first_range = r.varint()?;
    // Each (Gap, ACK Range Length) pair takes at least two bytes, so a count the
    // rest of the packet cannot hold is rejected before looping over it.
    //= https://www.rfc-editor.org/rfc/rfc9000#section-20.1
    //# FRAME_ENCODING_ERROR (0x07):  An endpoint received a frame that was
    //# badly formatted -- for instance, a frame of an unknown type or an ACK
    //# frame that has more acknowledgment ranges than the remainder of the
    //# packet could carry.
    if range_count > (r.remaining() / 2) as u64 {
        return Err(FrameError::malformed("ACK range count exceeds the packet"));
    }
    //= https://www.rfc-editor.org/rfc/rfc9000#section-19.3.1
    //# If any computed packet number is negative, an endpoint MUST generate a
    //# connection error of type FRAME_ENCODING_ERROR.
    let mut smallest = largest
        .checked_sub(first_range)
        .ok_or(FrameError::malformed("first ACK range below zero"))?;
    let mut probe = r.clone();
    for _ in 0..range_count {
        let gap = probe.varint()?;
        let len = probe.varint()?;
        smallest = next_range(smallest, gap, len)
            .ok_or(FrameError::malformed("ACK range below zero"))?
            .0;
    }
    let ranges = r.bytes(probe.position() - r.position())?;
    //= https://www.rfc-editor.org/rfc/rfc9000#section-19.3.2
    //# ECN Counts { ECT0 Count (i), ECT1 Count (i), ECN-CE Count (i) }
    let ecn = if with_ecn {
        Some(EcnCounts {
            ect0: r.varint()?,
            ect1: r.varint()?,
            ce: r.varint()?,
        })
    } else {
        None
    };
    Ok(Ack {
        largest,
        delay,
        first_range,
        ranges,
        range_count,
        ecn,
    })
}

/// The `(smallest, largest)` of the range after the one starting at `prev_smallest`,
/// or `None` if it would go below zero.
//= https://www.rfc-editor.org/rfc/rfc9000#section-19.3.1
//# largest = previous_smallest - gap - 2
//# smallest = largest - ack_range
fn next_range(prev_smallest: u64, gap: u64, len: u64) -> Option<(u64, u64)> {
    let largest = prev_smallest.checked_sub(gap)?.checked_sub(2)?;
    Some((largest.checked_sub(len)?, largest))
}

impl Ack<'_> {
    /// The acknowledged ranges, highest first, as inclusive `(smallest, largest)` pairs.
    pub fn iter(&self) -> AckIter<'_> {
        AckIter {
            r: Reader::new(self.ranges),
            left: self.range_count,
            next: self
                .largest
                .checked_sub(self.first_range)
                .map(|smallest| (smallest, self.largest)),
        }
    }

    /// The smallest packet number acknowledged.
    pub fn smallest(&self) -> u64 {
        self.iter().last().map_or_else(
            || self.largest.saturating_sub(self.first_range),
            |r| *r.start(),
        )
    }
}

/// Iterator over an ACK frame's ranges, highest first.
///
/// Decoded frames were validated, so this yields every range. For an `Ack` built
/// by hand with inconsistent fields it stops early instead of panicking.
pub struct AckIter<'a> {
    r: Reader<'a>,
    /// (Gap, Length) pairs not yet read.
    left: u64,
    /// The range to yield next, as `(smallest, largest)`.
    next: Option<(u64, u64)>,
}

impl Iterator for AckIter<'_> {
    type Item = RangeInclusive<u64>;

    fn next(&mut self) -> Option<Self::Item> {
        let (smallest, largest) = self.next.take()?;
        if self.left > 0 {
            self.left -= 1;
            self.next = match (self.r.varint(), self.r.varint()) {
                (Ok(gap), Ok(len)) => next_range(smallest, gap, len),
                _ => None,
            };
        }
        Some(smallest..=largest)
    }
}

/// Encode an ACK (or ACK_ECN when `ecn` is given) from half-open packet-number
/// ranges given highest first. Writes at most `max_ranges` ranges (dropping the
/// lowest) and stops adding ranges before the frame would exceed `max_len` bytes.
/// Returns the bytes written, or 0 (writing nothing) if not even the first range fits.
///
/// Ranges must be non-empty, descending and separated by at least one missing
/// packet (as a range set yields them); adding stops at the first that is not.
/// At most 2 KiB of range fields are written. `delay` is clamped to 2^62-1.
pub fn encode_ack<B: BufMut>(
    buf: &mut B,
    mut ranges_desc: impl Iterator<Item = Range<u64>>,
    delay: u64,
    ecn: Option<&EcnCounts>,
    max_ranges: usize,
    max_len: usize,
) -> usize {
    if max_ranges == 0 {
        return 0;
    }
    let Some(first) = ranges_desc.next() else {
        return 0;
    };
    // Packet numbers are below 2^62.
    if first.start >= first.end || first.end - 1 > VarInt::MAX.into_inner() {
        debug_assert!(false, "bad ACK range {first:?}");
        return 0;
    }
    let largest = first.end - 1;
    let first_range = largest - first.start;
    let delay = delay.min(VarInt::MAX.into_inner());
    let ty = if ecn.is_some() { 0x03 } else { 0x02 };
    let ecn_len = ecn.map_or(0, |e| {
        varint_size(e.ect0) + varint_size(e.ect1) + varint_size(e.ce)
    });
    // Everything but the range count and the extra ranges.
    let fixed = 1 + varint_size(largest) + varint_size(delay) + varint_size(first_range) + ecn_len;
    if fixed + 1 > max_len {
        return 0;
    }

    // Most ACKs have one range: don't zero a large scratch buffer for them.
    let mut scratch: SmallVec<[u8; 64]> = SmallVec::new();
    let mut count = 0u64;
    let mut prev_smallest = first.start;
    for range in ranges_desc {
        if count as usize + 1 >= max_ranges {
            break;
        }
        // At least one unacknowledged packet must separate it from the previous range.
        if range.start >= range.end || range.end >= prev_smallest {
            debug_assert!(false, "ACK ranges not descending and disjoint: {range:?}");
            break;
        }
        let gap = prev_smallest - range.end - 1;
        let len = range.end - 1 - range.start;
        let pair = varint_size(gap) + varint_size(len);
        let used = scratch.len();
        if used + pair > MAX_RANGE_BYTES || fixed + varint_size(count + 1) + used + pair > max_len {
            break;
        }
        let (bytes, n) = varints([gap, len]);
        scratch.extend_from_slice(&bytes[..n]);
        count += 1;
        prev_smallest = range.start;
    }

    let (head, n) = varints([ty, largest, delay, count, first_range]);
    buf.put_slice(&head[..n]);
    buf.put_slice(&scratch);
    if let Some(e) = ecn {
        let (tail, n) = varints([e.ect0, e.ect1, e.ce]);
        buf.put_slice(&tail[..n]);
    }
    fixed + varint_size(count) + scratch.len()
}

/// Up to five varints (`N` ≤ 5) encoded into a stack array, and the bytes used: the
/// fields then reach the frame in one copy (a `put` per field cost a bounds
/// check and a `memcpy` call each, on every ACK).
#[inline(always)]
fn varints<const N: usize>(values: [u64; N]) -> ([u8; 40], usize) {
    let mut out = [0u8; 40];
    let mut w = &mut out[..];
    for v in values {
        put_varint(&mut w, v);
    }
    let n = 40 - w.len();
    (out, n)
}
