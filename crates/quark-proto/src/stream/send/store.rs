//! Where a send buffer keeps its bytes: copied into one ring, or, for large
//! writes of the application's own [`Bytes`], held by reference. A shared
//! chunk skips the copy into the ring; its bytes are copied once, into the
//! packet, as the ring's are.

use std::collections::VecDeque;

use bytes::{Buf, BufMut, Bytes};

/// Shared chunks smaller than this are copied into the ring: a run costs more
/// bookkeeping than copying a few bytes.
pub(super) const SHARE_MIN: usize = 4096;

/// A stretch of held bytes, in stream order. Positions count bytes ever
/// pushed (held or drained), so they stay put as the front drains.
#[derive(Debug)]
struct Run {
    /// Position of the run's first byte.
    at: u64,
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    /// `len` ring bytes, the first at this ring position (counting every
    /// byte ever copied into the ring).
    Ring { ring_at: u64, len: usize },
    /// The application's bytes.
    Shared(Bytes),
}

impl Run {
    fn len(&self) -> usize {
        match &self.kind {
            Kind::Ring { len, .. } => *len,
            Kind::Shared(b) => b.len(),
        }
    }

    fn end(&self) -> u64 {
        self.at + self.len() as u64
    }
}

/// The held bytes of a send buffer, oldest first.
#[derive(Debug, Default)]
pub(super) struct Store {
    /// Copied bytes, in stream order.
    ring: VecDeque<u8>,
    /// Ring position of `ring[0]`.
    ring_front: u64,
    /// The held bytes as runs while a shared chunk is held; empty means every
    /// held byte is in `ring` (the common case, which needs no runs).
    runs: VecDeque<Run>,
    /// Shared runs in `runs`.
    shared: usize,
    /// Position of the oldest held byte.
    front: u64,
    /// Bytes held.
    len: usize,
}

impl Store {
    /// An empty store copying into `ring` (emptied first).
    pub(super) fn with_ring(mut ring: VecDeque<u8>) -> Self {
        ring.clear();
        Store {
            ring,
            ..Store::default()
        }
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Position one past the newest held byte.
    fn back(&self) -> u64 {
        self.front + self.len as u64
    }

    /// Append a copy of `data`.
    pub(super) fn push_copy(&mut self, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        let ring_at = self.ring_front + self.ring.len() as u64;
        // Copies with one or two memcpys; allocates only to grow.
        self.ring.extend(data);
        if !self.runs.is_empty() {
            match self.runs.back_mut() {
                Some(Run {
                    kind: Kind::Ring { len, .. },
                    ..
                }) => *len += data.len(),
                _ => {
                    let at = self.back();
                    let kind = Kind::Ring {
                        ring_at,
                        len: data.len(),
                    };
                    self.runs.push_back(Run { at, kind });
                }
            }
        }
        self.len += data.len();
    }

    /// Append `data` by reference (copied when small).
    pub(super) fn push_shared(&mut self, data: Bytes) {
        if data.len() < SHARE_MIN {
            return self.push_copy(&data);
        }
        if self.runs.is_empty() && !self.ring.is_empty() {
            let kind = Kind::Ring {
                ring_at: self.ring_front,
                len: self.ring.len(),
            };
            self.runs.push_back(Run {
                at: self.front,
                kind,
            });
        }
        let at = self.back();
        self.len += data.len();
        self.shared += 1;
        self.runs.push_back(Run {
            at,
            kind: Kind::Shared(data),
        });
    }

    /// Append the held bytes `start..start + len` (counted from the oldest) to
    /// `dst`. The caller checks the range is held.
    pub(super) fn copy<B: BufMut>(&self, start: usize, len: usize, dst: &mut B) {
        debug_assert!(start + len <= self.len);
        if self.runs.is_empty() {
            return copy_ring(&self.ring, start, start + len, dst);
        }
        let (start, end) = (self.front + start as u64, self.front + (start + len) as u64);
        let first = self.runs.partition_point(|r| r.end() <= start);
        for run in self.runs.range(first..) {
            if run.at >= end {
                break;
            }
            let from = (start.max(run.at) - run.at) as usize;
            let to = (end.min(run.end()) - run.at) as usize;
            match &run.kind {
                Kind::Ring { ring_at, .. } => {
                    let base = (ring_at - self.ring_front) as usize;
                    copy_ring(&self.ring, base + from, base + to, dst);
                }
                Kind::Shared(b) => dst.put_slice(&b[from..to]),
            }
        }
    }

    /// Drop the oldest `n` bytes (acknowledged).
    pub(super) fn drain_front(&mut self, n: usize) {
        debug_assert!(n <= self.len);
        let n = n.min(self.len);
        self.len -= n;
        self.front += n as u64;
        if self.runs.is_empty() {
            self.ring.drain(..n);
            self.ring_front += n as u64;
            return;
        }
        let mut left = n;
        while left > 0 {
            let Some(run) = self.runs.front_mut() else {
                break;
            };
            let take = left.min(run.len());
            run.at += take as u64;
            match &mut run.kind {
                Kind::Ring { ring_at, len } => {
                    self.ring.drain(..take);
                    self.ring_front += take as u64;
                    *ring_at += take as u64;
                    *len -= take;
                }
                Kind::Shared(b) => b.advance(take),
            }
            if run.len() == 0 {
                if matches!(run.kind, Kind::Shared(_)) {
                    self.shared -= 1;
                }
                self.runs.pop_front();
            }
            left -= take;
        }
        // Back to ring-only once no shared chunk is held.
        if self.shared == 0 {
            self.runs.clear();
        }
    }

    /// Drop everything, giving up the ring's memory too.
    pub(super) fn clear(&mut self) {
        *self = Store::default();
    }

    /// Nothing held: give the ring's memory back (it grows again on the
    /// next push). For a buffer that lives on idle, as the 1-RTT CRYPTO one.
    pub(super) fn shrink_empty(&mut self) {
        if self.len == 0 && self.ring.is_empty() && self.runs.is_empty() {
            self.ring = VecDeque::new();
            self.runs = VecDeque::new();
        }
    }

    /// The ring's capacity.
    pub(super) fn capacity(&self) -> usize {
        self.ring.capacity()
    }

    /// The ring, for reuse by another stream.
    pub(super) fn into_ring(self) -> VecDeque<u8> {
        self.ring
    }
}

/// Append `ring[start..end]` to `dst`; the ring may wrap, splitting the range
/// between its two slices.
fn copy_ring<B: BufMut>(ring: &VecDeque<u8>, start: usize, end: usize, dst: &mut B) {
    let (a, b) = ring.as_slices();
    if start < a.len() {
        dst.put_slice(&a[start..end.min(a.len())]);
    }
    if end > a.len() {
        dst.put_slice(&b[start.saturating_sub(a.len())..end - a.len()]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (no dependency needed for a test).
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self, below: usize) -> usize {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((self.0 >> 33) as usize) % below.max(1)
        }
    }

    #[test]
    fn mixed_writes_read_back_exactly_through_drains() {
        for seed in 0..200 {
            let mut rng = Lcg(seed);
            let mut store = Store::default();
            // The held bytes as they must read back.
            let mut model: VecDeque<u8> = VecDeque::new();
            let mut next = 0u8;
            for _ in 0..60 {
                match rng.next(4) {
                    0 | 1 => {
                        let len = rng.next(3 * SHARE_MIN);
                        let data: Vec<u8> = (0..len)
                            .map(|_| {
                                next = next.wrapping_add(1);
                                next
                            })
                            .collect();
                        model.extend(&data);
                        if rng.next(2) == 0 {
                            store.push_copy(&data);
                        } else {
                            // A slice of a larger buffer, as applications hand over.
                            let mut whole = vec![0xEE; 7];
                            whole.extend(&data);
                            store.push_shared(Bytes::from(whole).slice(7..));
                        }
                    }
                    2 => {
                        let n = rng.next(model.len() + 1);
                        store.drain_front(n);
                        model.drain(..n);
                    }
                    _ => {}
                }
                assert_eq!(store.len(), model.len());
                let start = rng.next(model.len() + 1);
                let len = rng.next(model.len() - start + 1);
                let mut got = Vec::new();
                store.copy(start, len, &mut got);
                let want: Vec<u8> = model.range(start..start + len).copied().collect();
                assert_eq!(got, want, "seed {seed}");
            }
        }
    }

    #[test]
    fn small_shared_chunks_are_copied_and_large_ones_held() {
        let mut store = Store::default();
        store.push_shared(Bytes::from(vec![1; SHARE_MIN - 1]));
        assert!(store.runs.is_empty());
        assert_eq!(store.ring.len(), SHARE_MIN - 1);
        store.push_shared(Bytes::from(vec![2; SHARE_MIN]));
        assert_eq!(store.ring.len(), SHARE_MIN - 1, "held, not copied");
        assert_eq!((store.runs.len(), store.shared), (2, 1));
        store.drain_front(store.len());
        assert!(store.is_empty());
        assert!(store.runs.is_empty(), "ring-only again");
    }
}
