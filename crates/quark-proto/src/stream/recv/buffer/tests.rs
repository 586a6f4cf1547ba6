use super::*;
use proptest::prelude::*;

fn read_all(b: &mut RecvBuffer) -> Vec<u8> {
    let mut out = vec![0; b.readable() + 7];
    let n = b.read(&mut out);
    out.truncate(n);
    out
}

#[test]
fn in_order_takes_the_fast_path() {
    let mut b = RecvBuffer::new();
    assert_eq!(b.insert(0, b"hello "), 6);
    assert_eq!(b.insert(6, b"world"), 5);
    assert_eq!(b.readable(), 11);
    assert_eq!(b.path_counts(), (2, 0));
    assert_eq!(read_all(&mut b), b"hello world");
    assert_eq!(b.read_offset(), 11);
    assert_eq!(b.buffered(), 0);
}

#[test]
fn append_reads_at_most_max_across_the_ring_seam() {
    let mut b = RecvBuffer::new();
    // Read some, then insert more, so the ring's contents wrap around.
    b.insert(0, &[1u8; 100]);
    assert_eq!(read_all(&mut b).len(), 100);
    let data: Vec<u8> = (0..200u8).collect();
    b.insert(100, &data);
    let mut out = vec![9u8];
    assert_eq!(
        b.read_into(&mut Append {
            out: &mut out,
            max: 150
        }),
        150
    );
    assert_eq!(out[0], 9, "appends, keeps what was there");
    assert_eq!(&out[1..], &data[..150]);
    assert_eq!(
        b.read_into(&mut Append {
            out: &mut out,
            max: 1000
        }),
        50
    );
    assert_eq!(&out[1..], &data[..]);
    assert_eq!(
        b.read_into(&mut Append {
            out: &mut out,
            max: 1000
        }),
        0
    );
}

#[test]
fn gap_fill_moves_waiting_segments() {
    let mut b = RecvBuffer::new();
    assert_eq!(b.insert(10, b"klmno"), 15);
    assert_eq!(b.insert(5, b"fghij"), 0);
    assert_eq!(b.readable(), 0);
    assert_eq!(b.buffered(), 10);
    assert_eq!(b.max_offset(), 15);
    assert_eq!(b.insert(0, b"abcde"), 0);
    assert_eq!(b.readable(), 15);
    assert_eq!(b.buffered(), 15);
    assert_eq!(read_all(&mut b), b"abcdefghijklmno");
    let (fast, slow) = b.path_counts();
    assert_eq!((fast, slow), (0, 3));
}

#[test]
fn overlaps_are_trimmed_not_double_counted() {
    let mut b = RecvBuffer::new();
    let data: Vec<u8> = (0..100).collect();
    b.insert(20, &data[20..40]);
    b.insert(60, &data[60..70]);
    // Covers both, and beyond.
    b.insert(15, &data[15..80]);
    assert_eq!(b.buffered(), 65);
    // Entirely inside a stored segment.
    b.insert(30, &data[30..35]);
    assert_eq!(b.buffered(), 65);
    // Overlaps the left neighbour's end and the right one's start.
    b.insert(78, &data[78..90]);
    b.insert(85, &data[85..95]);
    assert_eq!(b.buffered(), 80);
    b.insert(0, &data[0..16]);
    assert_eq!(b.readable(), 95);
    assert_eq!(read_all(&mut b), &data[..95]);
    // Old data after reading is dropped.
    assert_eq!(b.insert(10, &data[10..50]), 0);
    assert_eq!(b.buffered(), 0);
    assert_eq!(b.insert(90, &data[90..100]), 5);
    assert_eq!(read_all(&mut b), &data[95..]);
}

#[test]
fn a_burst_after_a_hole_fills_chunks_not_entries() {
    let mut b = RecvBuffer::new();
    let data: Vec<u8> = (0..=255).cycle().take(10_000).collect();
    for o in (100..10_000).step_by(100) {
        b.insert(o as u64, &data[o..o + 100]);
    }
    // 99 segments over offsets 100..10 000: three 4 KiB chunks.
    assert_eq!(b.pending_segments(), 3);
    // Overlapping pieces in the hole share the first chunk.
    b.insert(50, &data[50..60]);
    b.insert(55, &data[55..70]);
    assert_eq!(b.pending_segments(), 3);
    assert_eq!(b.buffered(), 9900 + 20);
    b.insert(0, &data[..100]);
    assert_eq!(b.pending_segments(), 0);
    assert_eq!(read_all(&mut b), data);
}

#[test]
fn empty_segments_change_nothing() {
    let mut b = RecvBuffer::new();
    assert_eq!(b.insert(1000, &[]), 0);
    assert_eq!(b.max_offset(), 0);
    assert_eq!(b.buffered(), 0);
}

#[test]
fn offsets_near_the_top_do_not_overflow() {
    let mut b = RecvBuffer::new();
    assert_eq!(b.insert(u64::MAX - 2, b"abcdef"), u64::MAX);
    assert_eq!(b.buffered(), 2);
}

#[test]
fn partial_reads() {
    let mut b = RecvBuffer::new();
    b.insert(0, b"abcdef");
    let mut out = [0; 4];
    assert_eq!(b.read(&mut out), 4);
    assert_eq!(&out, b"abcd");
    assert_eq!(b.read(&mut out), 2);
    assert_eq!(&out[..2], b"ef");
    assert_eq!(b.read(&mut out), 0);
    assert_eq!(b.read(&mut []), 0);
}

#[test]
fn ten_thousand_in_order_segments_all_fast() {
    let mut b = RecvBuffer::new();
    let mut offset = 0u64;
    let seg = [0xabu8; 1200];
    let mut out = vec![0; 4096];
    for i in 0..10_000u64 {
        offset += b.insert(offset, &seg[..100 + (i % 1000) as usize]);
        if i % 3 == 0 {
            while b.read(&mut out) > 0 {}
        }
    }
    assert_eq!(b.path_counts(), (10_000, 0));
    assert_eq!(b.max_offset(), offset);
}

#[test]
fn shuffled_segments_mostly_take_the_map_and_read_back_identical() {
    let data: Vec<u8> = (0..200_000u32).map(|i| (i * 31 % 251) as u8).collect();
    let mut segs: Vec<(u64, usize)> = (0..data.len())
        .step_by(1000)
        .map(|o| (o as u64, 1000))
        .collect();
    // A deterministic shuffle (xorshift).
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for i in (1..segs.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        segs.swap(i, (x % (i as u64 + 1)) as usize);
    }
    let mut b = RecvBuffer::new();
    for &(o, l) in &segs {
        b.insert(o, &data[o as usize..o as usize + l]);
        assert!(b.buffered() <= data.len());
    }
    let (fast, slow) = b.path_counts();
    assert_eq!(fast + slow, segs.len() as u64);
    assert!(slow > segs.len() as u64 * 9 / 10, "fast {fast} slow {slow}");
    assert_eq!(read_all(&mut b), data);
}

#[test]
fn no_allocation_in_order_once_grown() {
    let mut b = RecvBuffer::new();
    b.insert(0, &[0; 8192]);
    let mut out = vec![0; 8192];
    b.read(&mut out);
    let cap = b.data.capacity();
    for i in 0..1000u64 {
        b.insert(8192 + i * 1000, &[1; 1000]);
        assert_eq!(b.read(&mut out), 1000);
    }
    assert_eq!(b.data.capacity(), cap);
}

#[test]
fn discard_all_moves_the_read_offset() {
    let mut b = RecvBuffer::new();
    b.insert(0, b"abc");
    b.insert(10, b"xyz");
    b.discard_all(20);
    assert_eq!(b.read_offset(), 20);
    assert_eq!(b.buffered(), 0);
    assert_eq!(b.readable(), 0);
    assert_eq!(b.max_offset(), 20);
}

/// Segments `(start, end)` of a stream of `len` bytes: a cover of all of it
/// in pieces of `sizes` (taken in turn), then `extra` ones (start modulo
/// `len`, length) that overlap and duplicate, shuffled by swapping entry `i`
/// with entry `swaps[i]` (both modulo the count).
pub(super) fn shuffled_cover(
    len: usize,
    sizes: &[usize],
    extra: &[(u32, usize)],
    swaps: &[u32],
) -> Vec<(usize, usize)> {
    let mut segs = Vec::new();
    let mut at = 0;
    for size in sizes.iter().cycle() {
        if at >= len {
            break;
        }
        let end = (at + size).min(len);
        segs.push((at, end));
        at = end;
    }
    for &(start, l) in extra {
        let s = start as usize % len;
        segs.push((s, (s + l).min(len)));
    }
    for (i, &k) in swaps.iter().enumerate() {
        let n = segs.len();
        segs.swap(i % n, k as usize % n);
    }
    segs
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn random_overlapping_duplicated_shuffled_segments(
        len in 1usize..3000,
        cuts in proptest::collection::vec((any::<u16>(), 0usize..400), 0..60),
        order in proptest::collection::vec(any::<u32>(), 0..200),
        read_every in 1usize..20,
    ) {
        let data: Vec<u8> = (0..len).map(|i| (i * 7 + i / 256) as u8).collect();
        // A cover of the whole stream in fixed pieces, plus random extra (overlapping,
        // duplicate) segments.
        let cuts: Vec<(u32, usize)> = cuts.iter().map(|&(at, l)| (at.into(), l)).collect();
        let segs = shuffled_cover(len, &[97], &cuts, &order);
        let mut b = RecvBuffer::new();
        let mut out = Vec::new();
        let mut max = 0u64;
        for (i, &(s, e)) in segs.iter().enumerate() {
            let grown = b.insert(s as u64, &data[s..e]);
            if e > s {
                prop_assert_eq!(grown, (e as u64).saturating_sub(max));
                max = max.max(e as u64);
            }
            prop_assert_eq!(b.max_offset(), max);
            // Never more than the distinct unread bytes.
            prop_assert!(b.buffered() as u64 <= max - b.read_offset());
            if i % read_every == 0 {
                out.extend(read_all(&mut b));
            }
        }
        out.extend(read_all(&mut b));
        prop_assert_eq!(out, data);
        prop_assert_eq!(b.buffered(), 0);
    }
}
