//! Memory and content under fragment patterns a peer chooses: what the buffer
//! holds follows the span of offsets, never the number of fragments, and the
//! bytes delivered are the first received at each offset.

use super::chunks::CHUNK;
use super::*;
use proptest::prelude::*;

/// What `allocated()` may count per chunk: its bytes, its bitmap (1/8) and a
/// little for the map's node and the allocator.
const CHUNK_HEAP: usize = CHUNK + CHUNK / 8 + 128;

/// The byte a well-behaved sender has at `offset`.
fn byte(offset: u64) -> u8 {
    (offset * 31 % 251) as u8
}

fn bytes(from: u64, len: usize) -> Vec<u8> {
    (from..from + len as u64).map(byte).collect()
}

/// Out-of-order bytes may take 1.15 x the span from the contiguous end to the
/// highest byte, plus the chunks at either end and two spares.
fn assert_within_span(b: &RecvBuffer) {
    let span = (b.max_offset() - b.contiguous_end()) as usize;
    let held = b.allocated() - b.data.capacity();
    assert!(
        held <= span + span * 15 / 100 + 4 * CHUNK_HEAP,
        "{held} bytes held for a span of {span}"
    );
    assert!(b.pending_segments() <= span / CHUNK + 2);
}

/// Read everything readable, checking it against `byte`.
fn read_and_check(b: &mut RecvBuffer) {
    let from = b.read_offset();
    let mut out = Vec::new();
    b.read_into(&mut Append {
        out: &mut out,
        max: usize::MAX,
    });
    assert_eq!(out, bytes(from, out.len()), "bytes from offset {from}");
}

#[test]
fn one_byte_fragments_at_every_other_offset_take_the_span_not_entries() {
    const SPAN: u64 = 4 << 20;
    let mut b = RecvBuffer::new();
    for o in (1..SPAN).step_by(2) {
        b.insert(o, &[byte(o)]);
    }
    assert_eq!(b.buffered() as u64, SPAN / 2);
    assert_eq!(b.readable(), 0);
    // Two million entries of ~100 bytes each once; now 1.14 x the span.
    let held = b.allocated();
    assert!(
        held as u64 <= SPAN * 12 / 10 + 4 * CHUNK_HEAP as u64,
        "{held} bytes held for 4 MiB"
    );
    assert_within_span(&b);
    // The holes, 1 KiB at a time over the bytes already there.
    for o in (0..SPAN).step_by(1024) {
        b.insert(o, &bytes(o, 1024));
        // Up to the next hole: the byte at o + 1024 is even, not yet received.
        assert_eq!(b.contiguous_end(), o + 1024);
        if o % 65_536 == 0 {
            read_and_check(&mut b);
        }
    }
    read_and_check(&mut b);
    assert_eq!(b.read_offset(), SPAN);
    assert_eq!(b.buffered(), 0);
    assert_eq!(b.pending_segments(), 0);
    // Drained chunks are freed but for a couple kept for reuse (and the map's
    // root node and the list of spares).
    assert!(b.pending.allocated() <= 2 * CHUNK_HEAP + 256);
}

#[test]
fn one_byte_per_chunk_pins_at_most_the_span() {
    // The sparsest pattern: one byte at the end of each chunk.
    const SPAN: u64 = 256 * CHUNK as u64;
    let mut b = RecvBuffer::new();
    for o in (CHUNK as u64 - 1..SPAN).step_by(CHUNK) {
        b.insert(o, &[byte(o)]);
        assert_within_span(&b);
    }
    assert_eq!(b.pending_segments(), 256);
    b.insert(0, &bytes(0, SPAN as usize));
    read_and_check(&mut b);
    assert_eq!(b.read_offset(), SPAN);
    assert_eq!(b.pending_segments(), 0);
}

#[test]
fn reversed_segments_read_back_identical() {
    let mut b = RecvBuffer::new();
    let len = 300_000u64;
    let mut end = len;
    while end > 0 {
        let start = end.saturating_sub(977);
        b.insert(start, &bytes(start, (end - start) as usize));
        assert_within_span(&b);
        end = start;
    }
    assert_eq!(b.readable() as u64, len);
    read_and_check(&mut b);
    assert_eq!(b.read_offset(), len);
}

#[test]
fn random_fragments_stay_within_the_span_then_read_back() {
    const SPAN: u64 = 512 * 1024;
    let mut b = RecvBuffer::new();
    // xorshift: fragments of 1..64 bytes anywhere in the span, with reads.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for i in 0..20_000 {
        let o = next() % SPAN;
        let len = (1 + next() % 64).min(SPAN - o) as usize;
        b.insert(o, &bytes(o, len));
        assert_within_span(&b);
        if i % 100 == 0 {
            read_and_check(&mut b);
        }
    }
    // Fill every hole with one segment covering the rest.
    let from = b.read_offset();
    b.insert(from, &bytes(from, (SPAN - from) as usize));
    read_and_check(&mut b);
    assert_eq!(b.read_offset(), SPAN);
    assert_eq!(b.buffered(), 0);
}

#[test]
fn the_first_copy_received_is_the_one_delivered() {
    let mut b = RecvBuffer::new();
    // Out of order, then a longer conflicting copy around it.
    b.insert(10, b"AAAA");
    b.insert(8, b"bbbbbbbb");
    // Contiguous bytes, then a conflicting copy over them.
    b.insert(0, b"xy");
    b.insert(0, b"zzzz");
    // A copy filling the gap across the waiting bytes.
    b.insert(2, b"qqqqqqqqqqqqqqqq");
    let mut out = [0; 32];
    let n = b.read(&mut out);
    assert_eq!(&out[..n], b"xyzzqqqqbbAAAAbbqq");
    // Conflicting bytes after they were read change nothing.
    b.insert(0, b"################");
    assert_eq!(b.readable(), 0);
    assert_eq!(b.buffered(), 0);
}

#[test]
fn a_chunk_filled_from_both_ends_is_freed_when_read_through() {
    let mut b = RecvBuffer::new();
    let c = CHUNK as u64;
    b.insert(c + 10, &bytes(c + 10, 100));
    b.insert(3 * c - 5, &bytes(3 * c - 5, 10));
    assert_eq!(b.pending_segments(), 3);
    b.insert(0, &bytes(0, c as usize + 10));
    // Chunk 1 is read through and freed; chunks 2 and 3 wait.
    assert_eq!(b.readable() as u64, c + 110);
    assert_eq!(b.pending_segments(), 2);
    // Up to the bytes waiting in chunk 2 straight to contiguous storage, then
    // through chunks 2 and 3.
    b.insert(c + 110, &bytes(c + 110, 2 * c as usize));
    assert_eq!(b.pending_segments(), 0);
    assert_eq!(b.readable() as u64, 3 * c + 110);
    read_and_check(&mut b);
}

#[test]
fn shed_and_discard_free_the_chunks() {
    let mut b = RecvBuffer::new();
    b.insert(1, &bytes(1, 100_000));
    assert!(b.allocated() > 100_000);
    b.shed();
    assert_eq!(b.allocated(), 0);
    assert_eq!(b.buffered(), 0);
    b.insert(200_000, b"x");
    b.discard_all(300_000);
    assert_eq!(b.allocated(), 0);
}

/// One step of a random exchange.
#[derive(Clone, Debug)]
enum Op {
    /// Bytes at an offset, each `tag ^ offset` so that overlapping copies differ.
    Insert {
        offset: u64,
        len: usize,
        tag: u8,
    },
    Read(usize),
}

const MODEL_SPAN: u64 = 3 * CHUNK as u64 + 100;

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..MODEL_SPAN, 1usize..8, any::<u8>())
            .prop_map(|(offset, len, tag)| Op::Insert { offset, len, tag }),
        3 => (0..MODEL_SPAN, 0usize..2500, any::<u8>())
            .prop_map(|(offset, len, tag)| Op::Insert { offset, len, tag }),
        1 => (0usize..3000).prop_map(Op::Read),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Against a model where each offset holds the first byte received there.
    #[test]
    fn matches_a_first_copy_wins_model(ops in proptest::collection::vec(op(), 1..80)) {
        let mut b = RecvBuffer::new();
        let mut model: Vec<Option<u8>> = vec![None; (MODEL_SPAN + 2500) as usize];
        let mut read = 0usize;
        let mut held = 0usize;
        let mut max = 0u64;
        for op in ops {
            match op {
                Op::Insert { offset, len, tag } => {
                    let data: Vec<u8> = (offset..offset + len as u64)
                        .map(|o| tag ^ o as u8)
                        .collect();
                    let grown = b.insert(offset, &data);
                    let end = offset + len as u64;
                    if len == 0 {
                        prop_assert_eq!(grown, 0); // No byte: not even the offset counts.
                    } else {
                        prop_assert_eq!(grown, end.saturating_sub(max));
                        max = max.max(end);
                    }
                    for (slot, &v) in model[offset as usize..end as usize].iter_mut().zip(&data) {
                        if slot.is_none() {
                            *slot = Some(v);
                            held += 1;
                        }
                    }
                }
                Op::Read(n) => {
                    let mut out = vec![0; n];
                    let got = b.read(&mut out);
                    let want: Vec<u8> = model[read..]
                        .iter()
                        .take(n)
                        .map_while(|v| *v)
                        .collect();
                    prop_assert_eq!(&out[..got], &want[..]);
                    read += got;
                    held -= got;
                }
            }
            let readable = model[read..].iter().take_while(|v| v.is_some()).count();
            prop_assert_eq!(b.read_offset(), read as u64);
            prop_assert_eq!(b.readable(), readable);
            prop_assert_eq!(b.buffered(), held);
            prop_assert_eq!(b.max_offset(), max);
            assert_within_span(&b);
        }
    }
}
