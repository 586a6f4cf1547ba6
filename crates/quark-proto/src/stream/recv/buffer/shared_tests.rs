//! Zero-copy receive in the reassembly buffer: which bytes stay as slices of
//! their datagram, and that reads see one byte stream whatever the mix.

use bytes::Bytes;

use super::{MAX_MOVED, MIN_SHARED, RecvBuffer};

/// A datagram-like buffer of `len` bytes counting up from `seed`.
fn owner(len: usize, seed: u8) -> Bytes {
    (0..len).map(|i| seed.wrapping_add(i as u8)).collect()
}

fn read_all(b: &mut RecvBuffer) -> Vec<u8> {
    let mut out = vec![0; b.readable()];
    assert_eq!(b.read(&mut out), out.len());
    out
}

#[test]
fn in_order_frames_stay_in_their_datagram_and_read_back_whole() {
    let mut b = RecvBuffer::new();
    let d1 = owner(3000, 1);
    let d2 = owner(3000, 2);
    // Frames at the datagrams' offset 100 (after a header).
    b.insert_from(0, &d1[100..2100], Some(&d1));
    b.insert_from(2000, &d2[100..2600], Some(&d2));
    assert_eq!(b.shared_bytes(), 4500);
    assert_eq!(b.readable(), 4500);
    assert_eq!(b.contiguous_end(), 4500);
    let mut want = d1[100..2100].to_vec();
    want.extend_from_slice(&d2[100..2600]);
    assert_eq!(read_all(&mut b), want);
    assert_eq!(b.shared_bytes(), 0);
    assert_eq!(b.all_read_at(), Some(4500));
}

#[test]
fn read_bytes_hands_over_the_slice_itself() {
    let mut b = RecvBuffer::new();
    let d = owner(4000, 3);
    b.insert_from(0, &d[50..3050], Some(&d));
    let first = b.read_bytes(1000).unwrap();
    assert_eq!(first.as_ptr(), d[50..].as_ptr(), "not copied");
    assert_eq!(&first[..], &d[50..1050]);
    let rest = b.read_bytes(usize::MAX).unwrap();
    assert_eq!(rest.as_ptr(), d[1050..].as_ptr());
    assert_eq!(rest.len(), 2000);
    assert_eq!(b.read_bytes(10), None);
    assert_eq!(b.read_offset(), 3000);
}

#[test]
fn small_frames_and_foreign_slices_are_copied() {
    let mut b = RecvBuffer::new();
    let d = owner(8000, 4);
    // Too small to share.
    b.insert_from(0, &d[..MIN_SHARED - 1], Some(&d));
    assert_eq!(b.shared_bytes(), 0);
    assert_eq!(b.readable(), MIN_SHARED - 1);
    read_all(&mut b);
    // Not inside its owner: copied.
    let other = owner(3000, 5);
    let end = b.contiguous_end();
    b.insert_from(end, &other[..2000], Some(&d));
    assert_eq!(b.shared_bytes(), 0);
    assert_eq!(read_all(&mut b), &other[..2000]);
}

#[test]
fn a_few_copied_bytes_move_aside_for_a_frame_kept_in_place() {
    let mut b = RecvBuffer::new();
    let d = owner(8000, 9);
    b.insert_from(0, &d[..100], Some(&d)); // small: copied
    b.insert_from(100, &d[100..3000], Some(&d)); // kept; the 100 bytes move
    assert_eq!(b.shared_bytes(), 3000);
    b.insert_from(3000, &d[3000..3050], None); // copied after the slices
    assert_eq!(b.readable(), 3050);
    assert_eq!(read_all(&mut b), &d[..3050]);
}

#[test]
fn many_copied_bytes_keep_the_next_frames_copied_until_read() {
    let mut b = RecvBuffer::new();
    let big = owner(MAX_MOVED + 5000, 10);
    b.insert_from(0, &big[..MAX_MOVED + 1], None); // a receive not lent
    b.insert_from(MAX_MOVED as u64 + 1, &big[MAX_MOVED + 1..], Some(&big));
    assert_eq!(b.shared_bytes(), 0, "not copied twice");
    assert_eq!(read_all(&mut b), &big[..]);
    let end = b.contiguous_end();
    b.insert_from(end, &big[..2000], Some(&big));
    assert_eq!(b.shared_bytes(), 2000, "kept once the reader caught up");
}

#[test]
fn shared_then_copied_then_out_of_order_is_one_stream() {
    let mut b = RecvBuffer::new();
    let d = owner(10_000, 6);
    let stream = &d[..9000];
    b.insert_from(0, &stream[..3000], Some(&d)); // shared
    b.insert_from(3000, &stream[3000..3500], Some(&d)); // small: copied
    b.insert_from(6000, &stream[6000..9000], Some(&d)); // ahead: waits in chunks
    b.insert_from(3500, &stream[3500..6000], Some(&d)); // fills the gap: copied
    assert_eq!(b.shared_bytes(), 3000);
    assert_eq!(b.readable(), 9000);
    // Read in odd pieces across the boundaries.
    let mut got = Vec::new();
    let mut piece = [0u8; 1234];
    while b.readable() > 0 {
        let n = b.read(&mut piece);
        got.extend_from_slice(&piece[..n]);
    }
    assert_eq!(got, stream);
}

#[test]
fn discarding_lets_go_of_the_datagrams() {
    let mut b = RecvBuffer::new();
    let d = owner(3000, 7);
    b.insert_from(0, &d[..2000], Some(&d));
    assert!(!d.is_unique(), "a slice holds the datagram");
    let allocated = b.allocated();
    assert!(allocated >= 2000, "counted: {allocated}");
    b.discard_all(5000);
    assert!(d.is_unique(), "released");
    assert_eq!(b.readable(), 0);
    assert_eq!(b.read_offset(), 5000);
}

#[test]
fn a_read_of_many_slices_stops_at_the_piece_limit_and_goes_on() {
    let mut b = RecvBuffer::new();
    let d = owner(2000, 8);
    let mut want = Vec::new();
    for i in 0..100u64 {
        b.insert_from(i * 1500, &d[..1500], Some(&d));
        want.extend_from_slice(&d[..1500]);
    }
    assert_eq!(b.shared_bytes(), 150_000);
    let mut out = vec![0; 150_000];
    let first = b.read(&mut out);
    assert!((60 * 1500..150_000).contains(&first), "{first}");
    let second = b.read(&mut out[first..]);
    assert_eq!(first + second, 150_000);
    assert_eq!(out, want);
}

#[test]
fn read_bytes_copies_across_the_rings_wrap() {
    let mut b = RecvBuffer::new();
    let d = owner(10_000, 11);
    // Copied (no owner), read partly, then more: the ring wraps around.
    b.insert(0, &d[..600]);
    let mut first = [0u8; 500];
    assert_eq!(b.read(&mut first), 500);
    b.insert(600, &d[600..1500]);
    let mut got = first.to_vec();
    while let Some(bytes) = b.read_bytes(333) {
        assert!(bytes.len() <= 333);
        got.extend_from_slice(&bytes);
    }
    assert_eq!(got, &d[..1500]);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(400))]

    /// Frames of a stream, each from a datagram it lies in or copied (no
    /// owner), of sizes around the sharing thresholds, duplicated,
    /// overlapping and shuffled, read between inserts by `read` and by
    /// `read_bytes` in pieces of random sizes: the reader gets the stream
    /// byte for byte, the counts agree at every step, and when everything
    /// is read no datagram is held.
    #[test]
    fn slices_and_copies_in_any_order_read_as_one_stream(
        len in 1usize..40_000,
        sizes in proptest::collection::vec(1usize..(2 * MIN_SHARED + 300), 1..40),
        extra in proptest::collection::vec((proptest::prelude::any::<u32>(), 1usize..6000), 0..20),
        swaps in proptest::collection::vec(proptest::prelude::any::<u32>(), 0..60),
        lent in proptest::collection::vec(proptest::prelude::any::<bool>(), 1..32),
        reads in proptest::collection::vec((0u8..4, 1usize..5000), 1..32),
    ) {
        let stream: Vec<u8> = (0..len).map(|i| (i * 131 + i / 977) as u8).collect();
        // A cover of the stream by the sizes (repeated), plus extra frames
        // anywhere: duplicates and overlaps.
        let frames = super::tests::shuffled_cover(len, &sizes, &extra, &swaps);
        let mut b = RecvBuffer::new();
        let mut got = Vec::new();
        let mut owners = Vec::new();
        for (i, &(s, e)) in frames.iter().enumerate() {
            // The frame inside a datagram of its own, after a header.
            let mut datagram = vec![0xee; 40];
            datagram.extend_from_slice(&stream[s..e]);
            datagram.extend_from_slice(&[0xdd; 16]);
            let datagram = Bytes::from(datagram);
            let frame = &datagram[40..40 + (e - s)];
            let owner = lent[i % lent.len()].then_some(&datagram);
            b.insert_from(s as u64, frame, owner);
            owners.push(datagram.clone());
            proptest::prop_assert!(b.shared_bytes() <= b.readable());
            proptest::prop_assert_eq!(b.read_offset() + b.readable() as u64, b.contiguous_end());
            let (how, max) = reads[i % reads.len()];
            match how {
                0 => {}
                1 => {
                    let mut piece = vec![0; max];
                    let n = b.read(&mut piece);
                    got.extend_from_slice(&piece[..n]);
                }
                _ => {
                    if let Some(bytes) = b.read_bytes(max) {
                        proptest::prop_assert!(!bytes.is_empty() && bytes.len() <= max);
                        got.extend_from_slice(&bytes);
                    }
                }
            }
            proptest::prop_assert_eq!(&got[..], &stream[..got.len()]);
            proptest::prop_assert_eq!(b.read_offset(), got.len() as u64);
        }
        while let Some(bytes) = b.read_bytes(7777) {
            got.extend_from_slice(&bytes);
        }
        proptest::prop_assert_eq!(got, stream);
        proptest::prop_assert_eq!(b.readable(), 0);
        proptest::prop_assert_eq!(b.shared_bytes(), 0);
        // Once read, no datagram is held by the buffer.
        proptest::prop_assert!(owners.iter_mut().all(|d| d.is_unique()));
        drop(b);
    }
}
