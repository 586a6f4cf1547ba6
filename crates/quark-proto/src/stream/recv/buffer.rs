//! The reassembly buffer: O(1) per frame in order, O(log n) out of order.
//!
//! Measurements of picoquic (seed 001) found a linear list 1.5x faster than a splay
//! tree for in-order data and the tree 3x faster with 0.1 % reordering. We keep both
//! paths: a segment that starts at (or before) the contiguous end while nothing waits
//! out of order is appended straight to contiguous storage; anything else goes into
//! an ordered map of fixed-size chunks of offset space, each with a bitmap of the
//! bytes present (so memory follows the offsets covered, not the number of
//! fragments), and moves over when the gap fills. In-order frames parsed from a
//! shared receive buffer may stay where they arrived (`shared.rs`: zero-copy
//! receive).

use std::collections::VecDeque;

use bytes::{Bytes, BytesMut};
use chunks::Chunks;
use shared::{Shared, slice_of};
use smallvec::SmallVec;

mod chunks;
mod shared;

pub use shared::{MAX_MOVED, MIN_SHARED};

/// Most pieces one read hands over (shared slices, then the two halves of
/// the copied storage); a read stops short of a longer run of slices.
const MAX_PIECES: usize = 64;

/// Where a read puts its bytes: a slice (filled from its start) or the end of a
/// `Vec` (appended, so nothing is zeroed first).
pub trait ReadInto {
    /// The most bytes this destination takes.
    fn room(&self) -> usize;
    /// Store the bytes read, `pieces` in order, together at most `room()`.
    fn put(&mut self, pieces: &[&[u8]]);
}

impl ReadInto for [u8] {
    fn room(&self) -> usize {
        self.len()
    }

    fn put(&mut self, pieces: &[&[u8]]) {
        let mut at = 0;
        for piece in pieces {
            self[at..at + piece.len()].copy_from_slice(piece);
            at += piece.len();
        }
    }
}

/// Appends at most `max` bytes to a `Vec`.
pub struct Append<'a> {
    /// Where the bytes go.
    pub out: &'a mut Vec<u8>,
    /// The most bytes to append.
    pub max: usize,
}

/// Hands at most `max` bytes to a function, in place: no copy, no allocation.
pub struct Visit<F> {
    /// Called with each contiguous piece (one or two per read).
    pub f: F,
    /// The most bytes to hand over.
    pub max: usize,
}

impl<F: FnMut(&[u8])> ReadInto for Visit<F> {
    fn room(&self) -> usize {
        self.max
    }

    fn put(&mut self, pieces: &[&[u8]]) {
        for piece in pieces {
            if !piece.is_empty() {
                (self.f)(piece);
            }
        }
    }
}

impl ReadInto for Append<'_> {
    fn room(&self) -> usize {
        self.max
    }

    fn put(&mut self, pieces: &[&[u8]]) {
        self.out.reserve(pieces.iter().map(|p| p.len()).sum());
        for piece in pieces {
            self.out.extend_from_slice(piece);
        }
    }
}

/// Reassembles bytes received at arbitrary offsets into an in-order byte stream.
/// In-order data is appended to contiguous storage directly; out-of-order bytes
/// wait in chunks of offset space until the gap before them fills. Where copies
/// overlap, the first received is kept. The caller bounds the offsets (flow
/// control, or a crypto buffer limit), and memory follows the span they cover,
/// whatever the fragments: see [`allocated`](Self::allocated).
#[derive(Debug, Default)]
pub struct RecvBuffer {
    /// Contiguous bytes not yet read, still in the datagrams they came in:
    /// `read_offset..` up to `data`. Made on first use, kept while the
    /// stream lives.
    shared: Option<Box<Shared>>,
    /// Contiguous bytes after `shared`, up to `contiguous_end()`, copied.
    data: VecDeque<u8>,
    /// Bytes consumed by reads (or discarded) so far.
    read_offset: u64,
    /// Bytes above the contiguous end.
    pending: Chunks,
    /// One past the highest byte received.
    max_offset: u64,
    /// Inserts handled without the chunks (appended, or dropped as duplicates).
    /// 32 bits keep the buffer's size (the counts only inform).
    fast: u32,
    /// Inserts that went through the chunks.
    slow: u32,
}

impl RecvBuffer {
    /// An empty buffer.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty buffer that stores into `storage` (emptied first), typically a
    /// freed stream's, so a new stream need not allocate.
    pub fn with_storage(mut storage: VecDeque<u8>) -> Self {
        storage.clear();
        RecvBuffer {
            data: storage,
            ..Self::default()
        }
    }

    /// An empty buffer where every byte before `offset` was received and
    /// read: a CRYPTO stream taken up again after
    /// [`all_read_at`](Self::all_read_at).
    pub fn resumed_at(offset: u64) -> Self {
        RecvBuffer {
            read_offset: offset,
            max_offset: offset,
            ..Self::default()
        }
    }

    /// Where the stream ends if everything received was read; only its
    /// offset is then worth keeping.
    pub fn all_read_at(&self) -> Option<u64> {
        (self.readable() == 0 && self.pending.is_empty() && self.max_offset == self.read_offset)
            .then_some(self.read_offset)
    }

    /// The contiguous byte storage, for reuse by another stream.
    pub fn into_storage(self) -> VecDeque<u8> {
        self.data
    }

    /// Capacity of the contiguous byte storage.
    pub fn storage_capacity(&self) -> usize {
        self.data.capacity()
    }

    /// The byte storage, once everything received was read (empty
    /// otherwise): the stream keeps only its offsets.
    pub fn take_storage(&mut self) -> VecDeque<u8> {
        match self.all_read_at() {
            Some(_) => std::mem::take(&mut self.data),
            None => VecDeque::new(),
        }
    }

    /// One past the last contiguous byte received.
    pub fn contiguous_end(&self) -> u64 {
        self.read_offset + self.readable() as u64
    }

    /// Store `data` at `offset`. Returns how much the highest received offset grew.
    pub fn insert(&mut self, offset: u64, data: &[u8]) -> u64 {
        self.insert_from(offset, data, None)
    }

    /// [`insert`](Self::insert), where `data` may lie in `owner`, a shared
    /// receive buffer: in-order bytes then stay there as a slice of it when
    /// there are enough of them ([`MIN_SHARED`]) and few copied bytes wait
    /// before them ([`MAX_MOVED`]); otherwise they are copied.
    pub fn insert_from(&mut self, offset: u64, data: &[u8], owner: Option<&Bytes>) -> u64 {
        if data.is_empty() {
            return 0; // No byte received: nothing moves.
        }
        // Offsets come from varints (< 2^62); clip rather than overflow regardless.
        let data = &data[..data.len().min((u64::MAX - offset) as usize)];
        let end = offset + data.len() as u64;
        let grown = end.saturating_sub(self.max_offset);
        self.max_offset = self.max_offset.max(end);

        let contiguous_end = self.contiguous_end();
        if end <= contiguous_end {
            //= https://www.rfc-editor.org/rfc/rfc9000#section-2.2
            //# An endpoint could receive data for a stream at the same stream offset
            //# multiple times.  Data that has already been received can be
            //# discarded.
            self.fast = self.fast.wrapping_add(1);
            return grown;
        }
        if offset <= contiguous_end && self.pending.is_empty() {
            self.fast = self.fast.wrapping_add(1);
            let new = &data[(contiguous_end - offset) as usize..];
            let slice = owner
                .filter(|_| new.len() >= MIN_SHARED && self.data.len() <= MAX_MOVED)
                .and_then(|owner| slice_of(owner, new));
            match slice {
                Some(slice) => self.push_shared(slice),
                None => self.data.extend(new),
            }
            return grown;
        }
        self.slow = self.slow.wrapping_add(1);
        self.insert_waiting(offset, data);
        grown
    }

    /// Keep `slice` as it is. Copied bytes waiting before it (a few: see
    /// [`MAX_MOVED`]) become a segment of their own first, copied once more,
    /// so that one small frame does not make the rest of a transfer copied
    /// until the next read.
    #[inline(never)]
    fn push_shared(&mut self, slice: Bytes) {
        let shared = self.shared.get_or_insert_default();
        if !self.data.is_empty() {
            shared.push(copied_bytes(&self.data, usize::MAX));
            self.data.clear();
        }
        shared.push(slice);
    }

    /// The out-of-order path, for `data` that ends past the contiguous end: kept
    /// out of line so that the in-order path stays small (its copy inlined).
    #[inline(never)]
    fn insert_waiting(&mut self, offset: u64, data: &[u8]) {
        let contiguous_end = self.contiguous_end();
        if offset > contiguous_end {
            self.pending.insert(offset, data);
            return;
        }
        // This may fill the gap before waiting bytes. Up to the lowest of them the
        // bytes go straight to contiguous storage; the rest meets the bytes already
        // there (which it must not replace), then all that joined moves over.
        let new = &data[(contiguous_end - offset) as usize..];
        let first = self.pending.first_offset().unwrap_or(u64::MAX);
        let direct = first.saturating_sub(contiguous_end).min(new.len() as u64) as usize;
        chunks::append(&mut self.data, &new[..direct]);
        if direct < new.len() {
            self.pending
                .insert(contiguous_end + direct as u64, &new[direct..]);
        }
        let at = self.contiguous_end();
        self.pending.drain_into(at, &mut self.data);
    }

    /// Copy contiguous bytes into `buf`; returns how many.
    pub fn read(&mut self, buf: &mut [u8]) -> usize {
        self.read_into(buf)
    }

    /// Copy contiguous bytes into `dst`, as many as it has room for (within
    /// 64 pieces); returns how many.
    pub fn read_into<D: ReadInto + ?Sized>(&mut self, dst: &mut D) -> usize {
        let room = dst.room();
        let Some(shared) = self.shared.as_ref().filter(|s| s.len() > 0) else {
            // Only copied bytes (every read of a request): the two halves of
            // their ring, no list of pieces.
            let pieces = copied_front(&self.data, room);
            let n = pieces[0].len() + pieces[1].len();
            dst.put(&pieces);
            self.consume(n);
            return n;
        };
        let mut pieces: SmallVec<[&[u8]; MAX_PIECES]> = SmallVec::new();
        let (mut n, all) = shared.pieces(room, MAX_PIECES - 2, &mut pieces);
        if all {
            let [a, b] = copied_front(&self.data, room - n);
            n += a.len() + b.len();
            pieces.extend([a, b]);
        }
        dst.put(&pieces);
        drop(pieces);
        self.consume(n);
        n
    }

    /// Up to `max` contiguous bytes (at least one if any is readable) without
    /// a copy when they are held as a slice of a receive buffer; copied from
    /// the stream's storage otherwise.
    pub fn read_bytes(&mut self, max: usize) -> Option<Bytes> {
        if max == 0 {
            return None;
        }
        let bytes = match self.shared.as_mut().and_then(|s| s.take_front(max)) {
            Some(bytes) => bytes,
            None => {
                if self.data.is_empty() {
                    return None;
                }
                let bytes = copied_bytes(&self.data, max);
                self.data.drain(..bytes.len());
                bytes
            }
        };
        self.read_offset += bytes.len() as u64;
        Some(bytes)
    }

    /// Drop `n` readable bytes as if read.
    fn consume(&mut self, n: usize) {
        let from_shared = self.shared.as_mut().map_or(0, |s| s.consume(n));
        self.data.drain(..n - from_shared);
        self.read_offset += n as u64;
    }

    /// Drop every readable byte as if read (the application stopped reading).
    /// Returns how many.
    pub(in crate::stream) fn discard_readable(&mut self) -> usize {
        let n = self.readable();
        self.consume(n);
        n
    }

    /// Nothing more will arrive (the connection closed): out-of-order segments
    /// can never be read, and the storage shrinks to what is left to read.
    pub(in crate::stream) fn shed(&mut self) {
        self.pending.clear();
        self.data.shrink_to_fit();
    }

    /// Drop everything and move the read offset to `offset` (a reset stream's final
    /// size), releasing the storage.
    pub(in crate::stream) fn discard_all(&mut self, offset: u64) {
        self.shared = None;
        self.data = VecDeque::new();
        self.pending.clear();
        self.read_offset = self.read_offset.max(offset);
        self.max_offset = self.max_offset.max(offset);
    }

    /// Chunks of out-of-order bytes waiting for a gap to fill (for metrics and
    /// tests): each covers 4 KiB of offsets, however many segments filled it.
    pub fn pending_segments(&self) -> usize {
        self.pending.len()
    }

    /// Contiguous bytes ready to read.
    pub fn readable(&self) -> usize {
        self.shared.as_ref().map_or(0, |s| s.len()) + self.data.len()
    }

    /// Readable bytes held as slices of receive buffers (zero-copy).
    pub fn shared_bytes(&self) -> usize {
        self.shared.as_ref().map_or(0, |s| s.len())
    }

    /// Bytes consumed by reads so far.
    pub fn read_offset(&self) -> u64 {
        self.read_offset
    }

    /// One past the highest byte received.
    pub fn max_offset(&self) -> u64 {
        self.max_offset
    }

    /// Bytes held, in order and out of order (for memory bounds and tests).
    pub fn buffered(&self) -> usize {
        self.readable() + self.pending.bytes()
    }

    /// Heap bytes this buffer holds (for memory accounting; O(1)): the contiguous
    /// storage's capacity, the chunks of out-of-order bytes with their bitmaps and
    /// an estimate of the map's share. Out-of-order bytes take at most
    /// 1.14 x the span from the contiguous end to the highest byte, plus four
    /// chunks of 4.5 KiB (both ends, and two kept for reuse).
    pub fn allocated(&self) -> usize {
        let shared = self
            .shared
            .as_ref()
            .map_or(0, |s| size_of::<Shared>() + s.allocated());
        self.data.capacity() + self.pending.allocated() + shared
    }

    /// How many inserts took the in-order fast path and how many the out-of-order path.
    pub fn path_counts(&self) -> (u64, u64) {
        (self.fast.into(), self.slow.into())
    }
}

/// The first `n` bytes of `data` (all, if fewer), as its ring's two pieces.
fn copied_front(data: &VecDeque<u8>, n: usize) -> [&[u8]; 2] {
    let n = n.min(data.len());
    let (a, b) = data.as_slices();
    let from_a = n.min(a.len());
    [&a[..from_a], &b[..n - from_a]]
}

/// The first `n` bytes of `data` (all, if fewer), copied into one `Bytes`.
fn copied_bytes(data: &VecDeque<u8>, n: usize) -> Bytes {
    let [a, b] = copied_front(data, n);
    let mut bytes = BytesMut::with_capacity(a.len() + b.len());
    bytes.extend_from_slice(a);
    bytes.extend_from_slice(b);
    bytes.freeze()
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod fragment_tests;

#[cfg(test)]
mod shared_tests;
