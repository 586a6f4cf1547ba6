//! Zero-copy receive: in-order stream bytes kept in the datagrams they arrived
//! in, as [`Bytes`] slices, instead of copied into the stream's storage.
//!
//! A slice pins the whole receive buffer it came from. What that may cost is
//! bounded where the buffers are made (the driver stops lending them past a
//! budget, and the connection then copies); here each stream bounds only the
//! bytes it holds, through flow control, as for copied bytes.

use std::collections::VecDeque;

use bytes::{Buf, Bytes};

/// Frames smaller than this are copied: a slice costs a queue entry and two
/// atomic reference-count updates, about what copying a few hundred bytes
/// costs, and would pin a whole receive buffer for a few bytes.
pub const MIN_SHARED: usize = 1024;

/// Copied bytes waiting before a frame that could be kept in place are
/// moved into a segment of their own (copied once more) when there are at
/// most this many; more, and the frame is copied too until a read empties
/// them.
pub const MAX_MOVED: usize = 16 * 1024;

/// Slices of received datagrams, in stream order.
#[derive(Debug, Default)]
pub(super) struct Shared {
    segments: VecDeque<Bytes>,
    /// Bytes in `segments`.
    len: usize,
}

/// `part` as a slice of `owner`, if it lies inside it (it always does when
/// the frame was parsed from `owner`; otherwise the caller copies).
pub(super) fn slice_of(owner: &Bytes, part: &[u8]) -> Option<Bytes> {
    let base = owner.as_ptr() as usize;
    let start = (part.as_ptr() as usize).checked_sub(base)?;
    let end = start.checked_add(part.len())?;
    (end <= owner.len()).then(|| owner.slice(start..end))
}

impl Shared {
    pub(super) fn push(&mut self, bytes: Bytes) {
        self.len += bytes.len();
        self.segments.push_back(bytes);
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Heap bytes held: the slices' bytes (a lower bound on what they pin)
    /// and the queue.
    pub(super) fn allocated(&self) -> usize {
        self.len + self.segments.capacity() * size_of::<Bytes>()
    }

    /// Up to `max` bytes from the front, as pieces (at most `limit` of them),
    /// appended to `out`; returns how many bytes, and whether every byte held
    /// was taken.
    pub(super) fn pieces<'a>(
        &'a self,
        max: usize,
        limit: usize,
        out: &mut impl Extend<&'a [u8]>,
    ) -> (usize, bool) {
        let mut n = 0;
        for (i, seg) in self.segments.iter().enumerate() {
            if n == max || i == limit {
                return (n, false);
            }
            let take = seg.len().min(max - n);
            out.extend([&seg[..take]]);
            n += take;
        }
        (n, n == self.len)
    }

    /// The first `max` bytes or fewer, without a copy: the front slice, or
    /// its head.
    pub(super) fn take_front(&mut self, max: usize) -> Option<Bytes> {
        let front = self.segments.front_mut()?;
        let bytes = if front.len() <= max {
            self.segments.pop_front()?
        } else {
            front.split_to(max)
        };
        self.len -= bytes.len();
        Some(bytes)
    }

    /// Drop the first `n` bytes (at most `len`); returns how many.
    pub(super) fn consume(&mut self, mut n: usize) -> usize {
        let asked = n;
        while n > 0 {
            let Some(front) = self.segments.front_mut() else {
                break;
            };
            if front.len() <= n {
                n -= front.len();
                self.len -= front.len();
                self.segments.pop_front();
            } else {
                front.advance(n);
                self.len -= n;
                n = 0;
            }
        }
        asked - n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_part_outside_its_owner_is_not_sliced() {
        let owner = Bytes::from(vec![7u8; 100]);
        let inside = slice_of(&owner, &owner[10..30]).unwrap();
        assert_eq!(inside.len(), 20);
        assert_eq!(inside.as_ptr(), owner[10..].as_ptr());
        let other = [7u8; 100];
        assert!(slice_of(&owner, &other[..10]).is_none());
        assert!(slice_of(&owner, &owner[90..]).is_some());
        let tail = owner.slice(50..);
        assert!(slice_of(&tail, &owner[40..60]).is_none());
    }

    #[test]
    fn consume_and_take_cross_segments() {
        let mut s = Shared::default();
        s.push(Bytes::from_static(b"abcd"));
        s.push(Bytes::from_static(b"efgh"));
        assert_eq!(s.len(), 8);
        let mut out: Vec<&[u8]> = Vec::new();
        assert_eq!(s.pieces(6, 8, &mut out), (6, false));
        assert_eq!(out, [&b"abcd"[..], &b"ef"[..]]);
        let mut out: Vec<&[u8]> = Vec::new();
        assert_eq!(s.pieces(100, 1, &mut out), (4, false));
        let mut out: Vec<&[u8]> = Vec::new();
        assert_eq!(s.pieces(100, 8, &mut out), (8, true));
        assert_eq!(s.consume(5), 5);
        assert_eq!(s.len(), 3);
        assert_eq!(s.take_front(2).unwrap(), Bytes::from_static(b"fg"));
        assert_eq!(s.take_front(9).unwrap(), Bytes::from_static(b"h"));
        assert_eq!(s.take_front(9), None);
        assert_eq!(s.consume(4), 0);
    }
}
