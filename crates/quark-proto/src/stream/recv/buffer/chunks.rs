//! Out-of-order bytes, stored in fixed-size chunks of offset space.
//!
//! A chunk holds `CHUNK` bytes and a bitmap of which of them arrived, so what a
//! buffer holds depends on the span of offsets it covers, never on how the
//! bytes were cut: 1-byte frames at every other offset of 4 MiB once made two
//! million map entries of ~100 bytes each (207 MiB); as chunks they take
//! 4.6 MiB. A bitmap costs 1/8 of the bytes it covers.

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, VecDeque};
use std::fmt;

/// Bytes of offset space per chunk. 4 KiB: faster under reordering than 1 or
/// 2 KiB (1 % of 1200-byte segments 16 late: 51 ns per insert against 59 and
/// 54), the largest whose 64 bitmap words one summary word covers, and a small
/// stream arriving out of order pins little more than it sent.
pub(super) const CHUNK: usize = 4096;
const WORDS: usize = CHUNK / 64;

/// Chunks kept for reuse once drained, so a reordering episode does not
/// allocate afresh each time (more are freed: peak memory is given back).
/// Eight gained 2 ns per insert at 1 % reordering, for 28 KiB more per stream.
const SPARES: usize = 2;

/// Heap per map entry beyond the chunk itself: a B-tree node's share (a node of
/// 11 entries is ~200 bytes, at least half full) and the allocator's header.
const ENTRY_OVERHEAD: usize = 48;

/// A B-tree leaf of (u64, Box) entries: an emptied map keeps its root.
const NODE: usize = 192;

/// `CHUNK` bytes of offset space starting at a multiple of `CHUNK`.
struct Chunk {
    /// Bit `i % 64` of word `i / 64` is set while byte `i` waits: from its
    /// arrival until it moves to contiguous storage.
    present: [u64; WORDS],
    /// Bit `w` is set when word `w` of `present` is all ones: with `any`, finding
    /// the next byte present or missing takes two words, not a scan.
    full: u64,
    /// Bit `w` is set when word `w` of `present` has a bit set.
    any: u64,
    /// Bytes waiting (a chunk at 0 is freed, with no bit set).
    count: usize,
    bytes: [u8; CHUNK],
}

// One summary bit per bitmap word.
const _: () = assert!(WORDS <= 64 && CHUNK % 64 == 0);

/// Bits `from..to` of a word, `from <= to <= 64`.
fn bits(from: usize, to: usize) -> u64 {
    if from >= to {
        0
    } else {
        (!0u64 >> (64 - (to - from))) << from
    }
}

impl Chunk {
    fn new() -> Box<Self> {
        Box::new(Chunk {
            present: [0; WORDS],
            full: 0,
            any: 0,
            count: 0,
            bytes: [0; CHUNK],
        })
    }

    /// The first byte in `from..to` that is present (`want`) or missing
    /// (`!want`), or `to`.
    fn next(&self, from: usize, to: usize, want: bool) -> usize {
        if from >= to {
            return to;
        }
        let flip = if want { 0 } else { !0 };
        let w = from / 64;
        let word = (self.present[w] ^ flip) >> (from % 64);
        if word != 0 {
            return (from + word.trailing_zeros() as usize).min(to);
        }
        // The first later word holding such a byte, from the summaries.
        let words = if want { self.any } else { !self.full } & bits(w + 1, WORDS);
        if words == 0 {
            return to;
        }
        let w = words.trailing_zeros() as usize;
        (w * 64 + (self.present[w] ^ flip).trailing_zeros() as usize).min(to)
    }

    /// Mark bytes `from..to` present or, `!on`, missing.
    fn mark(&mut self, from: usize, to: usize, on: bool) {
        if from >= to {
            return;
        }
        let (first, last) = (from / 64, (to - 1) / 64);
        let end_bit = (to - 1) % 64 + 1;
        if first == last {
            self.mark_word(first, bits(from % 64, end_bit), on);
            return;
        }
        self.mark_word(first, bits(from % 64, 64), on);
        self.mark_word(last, bits(0, end_bit), on);
        if last > first + 1 {
            self.present[first + 1..last].fill(if on { !0 } else { 0 });
            let middle = bits(first + 1, last);
            if on {
                self.full |= middle;
                self.any |= middle;
            } else {
                self.full &= !middle;
                self.any &= !middle;
            }
        }
    }

    /// Set or clear the bits `mask` of word `w`, keeping the summaries.
    fn mark_word(&mut self, w: usize, mask: u64, on: bool) {
        let word = &mut self.present[w];
        *word = if on { *word | mask } else { *word & !mask };
        let (word, bit) = (*word, 1u64 << w);
        self.full = if word == !0 {
            self.full | bit
        } else {
            self.full & !bit
        };
        self.any = if word != 0 {
            self.any | bit
        } else {
            self.any & !bit
        };
    }

    /// Store `src` at `at`, keeping bytes already present (the first copy
    /// received is the one delivered). Returns how many bytes were new.
    fn fill(&mut self, at: usize, src: &[u8]) -> usize {
        let end = at + src.len();
        let mut added = 0;
        let mut i = at;
        while i < end {
            let absent = self.next(i, end, false);
            if absent == end {
                break;
            }
            let present = self.next(absent, end, true);
            self.bytes[absent..present].copy_from_slice(&src[absent - at..present - at]);
            self.mark(absent, present, true);
            added += present - absent;
            i = present;
        }
        self.count += added;
        added
    }
}

/// Out-of-order bytes by chunk. Every chunk in the map holds at least one byte
/// at or above the contiguous end, so at most `span / CHUNK + 2` chunks exist
/// for the `span` of offsets between the contiguous end and the highest byte.
#[derive(Default)]
pub(super) struct Chunks {
    /// Chunks by offset / `CHUNK`.
    map: BTreeMap<u64, Box<Chunk>>,
    /// Drained chunks, cleared, ready for reuse (at most `SPARES`).
    spare: Vec<Box<Chunk>>,
    /// Bytes present in all chunks (at or above the contiguous end).
    bytes: usize,
    /// The map has allocated its root (it keeps it when emptied).
    rooted: bool,
}

impl fmt::Debug for Chunks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Chunks")
            .field("chunks", &self.map.len())
            .field("spare", &self.spare.len())
            .field("bytes", &self.bytes)
            .finish()
    }
}

impl Chunks {
    pub(super) fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Chunks holding bytes.
    pub(super) fn len(&self) -> usize {
        self.map.len()
    }

    /// Bytes held.
    pub(super) fn bytes(&self) -> usize {
        self.bytes
    }

    /// The offset of the lowest byte waiting.
    pub(super) fn first_offset(&self) -> Option<u64> {
        let (&key, chunk) = self.map.first_key_value()?;
        Some(key * CHUNK as u64 + chunk.next(0, CHUNK, true) as u64)
    }

    /// Store `data` at `offset`: the caller's contiguous end is at or below it.
    /// Bytes already present are kept.
    pub(super) fn insert(&mut self, mut offset: u64, mut data: &[u8]) {
        while !data.is_empty() {
            let at = (offset % CHUNK as u64) as usize;
            let n = data.len().min(CHUNK - at);
            let chunk = match self.map.entry(offset / CHUNK as u64) {
                Entry::Occupied(e) => e.into_mut(),
                Entry::Vacant(e) => {
                    self.rooted = true;
                    e.insert(self.spare.pop().unwrap_or_else(Chunk::new))
                }
            };
            self.bytes += chunk.fill(at, &data[..n]);
            offset += n as u64;
            data = &data[n..];
        }
    }

    /// Move the bytes present from `at` (the contiguous end) on, up to the first
    /// one missing, to the end of `out`. Chunks left empty are freed.
    pub(super) fn drain_into(&mut self, mut at: u64, out: &mut VecDeque<u8>) {
        while let Some(mut entry) = self.map.first_entry() {
            let base = *entry.key() * CHUNK as u64;
            if base > at {
                return;
            }
            // Within the chunk: it holds a byte at or above `at` (and none below).
            let from = (at - base) as usize;
            let chunk = entry.get_mut();
            let to = chunk.next(from, CHUNK, false);
            append(out, &chunk.bytes[from..to]);
            chunk.mark(from, to, false);
            chunk.count -= to - from;
            self.bytes -= to - from;
            at += (to - from) as u64;
            if chunk.count > 0 {
                return; // A byte is missing before its next ones.
            }
            let chunk = entry.remove();
            self.recycle(chunk);
        }
    }

    /// Keep an emptied chunk (no bit set) for reuse, or free it.
    fn recycle(&mut self, chunk: Box<Chunk>) {
        debug_assert!(chunk.count == 0 && chunk.any == 0 && chunk.full == 0);
        if self.spare.len() < SPARES {
            self.spare.push(chunk);
        }
    }

    /// Drop every chunk, spares too.
    pub(super) fn clear(&mut self) {
        *self = Chunks::default();
    }

    /// Heap held: chunks, spares and an estimate of the map's nodes.
    pub(super) fn allocated(&self) -> usize {
        let map = match self.map.len() {
            0 if self.rooted => NODE,
            n => n * ENTRY_OVERHEAD,
        };
        (self.map.len() + self.spare.len()) * size_of::<Chunk>()
            + map
            + self.spare.capacity() * size_of::<Box<Chunk>>()
    }
}

/// `out.extend(bytes)` for the out-of-order path, through the element-wise
/// route (vectorized all the same): with the slice route called from here
/// too, the compiler stopped inlining it into the in-order path (20
/// instructions more per in-order insert).
#[inline(never)]
pub(super) fn append(out: &mut VecDeque<u8>, bytes: &[u8]) {
    out.extend(bytes.iter().copied());
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// The bitmap and its summaries against a plain array of flags.
        #[test]
        fn bitmap_matches_flags(
            ranges in proptest::collection::vec((0..CHUNK, 0..CHUNK, any::<bool>()), 1..40),
            probes in proptest::collection::vec((0..=CHUNK, 0..=CHUNK), 1..40),
        ) {
            let mut chunk = Chunk::new();
            let mut flags = vec![false; CHUNK];
            for (a, b, on) in ranges {
                let (from, to) = (a.min(b), a.max(b));
                chunk.mark(from, to, on);
                flags[from..to].fill(on);
            }
            for (w, &word) in chunk.present.iter().enumerate() {
                prop_assert_eq!(chunk.full >> w & 1 == 1, word == !0);
                prop_assert_eq!(chunk.any >> w & 1 == 1, word != 0);
            }
            for (from, to) in probes {
                for want in [true, false] {
                    let expected = (from..to).find(|&i| flags[i] == want).unwrap_or(to);
                    prop_assert_eq!(chunk.next(from, to, want), expected);
                }
            }
        }
    }
}
