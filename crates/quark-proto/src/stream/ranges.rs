//! A small sorted set of disjoint byte ranges for the send buffer's bookkeeping
//! (acknowledged-out-of-order and lost ranges).
//!
//! Stored in a `VecDeque` sorted by start: the common operations (append at the back
//! as losses and acknowledgements arrive in increasing order, take from the front when
//! retransmitting or when the acknowledged prefix advances) are O(1) and never
//! allocate once the deque has grown. Inserting in the middle shifts elements; the
//! number of ranges is bounded by the bytes in flight, and in practice stays small.

use std::collections::VecDeque;
use std::ops::Range;

/// Disjoint, non-adjacent half-open ranges of stream offsets, sorted.
#[derive(Debug, Default)]
pub(super) struct Ranges {
    ranges: VecDeque<Range<u64>>,
}

impl Ranges {
    pub(super) fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.ranges.len()
    }

    pub(super) fn clear(&mut self) {
        self.ranges.clear();
    }

    /// Index of the first range that ends at or after `x` (could touch or contain it).
    fn first_touching(&self, x: u64) -> usize {
        self.ranges.partition_point(|r| r.end < x)
    }

    /// Index of the first range that ends after `x` (overlaps `x..`).
    fn first_after(&self, x: u64) -> usize {
        self.ranges.partition_point(|r| r.end <= x)
    }

    /// The part at or above `x` of the first range that ends after `x`.
    pub(super) fn first_from(&self, x: u64) -> Option<Range<u64>> {
        let r = self.ranges.get(self.first_after(x))?;
        Some(r.start.max(x)..r.end)
    }

    /// Add `start..end`, merging with overlapping or adjacent ranges.
    pub(super) fn insert(&mut self, start: u64, end: u64) {
        if start >= end {
            return;
        }
        // Fast path: beyond the last range (or touching it).
        match self.ranges.back_mut() {
            None => {
                self.ranges.push_back(start..end);
                return;
            }
            Some(last) if last.end < start => {
                self.ranges.push_back(start..end);
                return;
            }
            Some(last) if last.start <= start => {
                last.end = last.end.max(end);
                return;
            }
            Some(_) => {}
        }
        let i = self.first_touching(start);
        let mut j = i;
        let (mut s, mut e) = (start, end);
        while j < self.ranges.len() && self.ranges[j].start <= e {
            s = s.min(self.ranges[j].start);
            e = e.max(self.ranges[j].end);
            j += 1;
        }
        if i == j {
            self.ranges.insert(i, s..e);
        } else {
            self.ranges[i] = s..e;
            self.ranges.drain(i + 1..j);
        }
    }

    /// Remove `start..end` from the set, splitting ranges as needed.
    #[inline]
    pub(super) fn remove(&mut self, start: u64, end: u64) {
        // Every acknowledgement removes its range from the lost set, which
        // in bulk is empty: that check inline, the call skipped (issue #30).
        if start < end && !self.ranges.is_empty() {
            self.remove_nonempty(start, end);
        }
    }

    fn remove_nonempty(&mut self, start: u64, end: u64) {
        let mut i = self.first_after(start);
        while i < self.ranges.len() && self.ranges[i].start < end {
            let r = self.ranges[i].clone();
            if r.start < start {
                // Keep the part below `start`, and the part above `end` if any.
                self.ranges[i].end = start;
                if r.end > end {
                    self.ranges.insert(i + 1, end..r.end);
                    return;
                }
                i += 1;
            } else if r.end > end {
                self.ranges[i].start = end;
                return;
            } else {
                self.ranges.remove(i);
            }
        }
    }

    /// Take at most `max` bytes from the front of the lowest range.
    pub(super) fn pop_front(&mut self, max: u64) -> Option<Range<u64>> {
        let r = self.ranges.front_mut()?;
        let end = r.end.min(r.start.saturating_add(max));
        let taken = r.start..end;
        if end == r.end {
            self.ranges.pop_front();
        } else {
            r.start = end;
        }
        Some(taken)
    }

    /// If the lowest range starts at or below `x`, remove it and return its end.
    pub(super) fn pop_reaching(&mut self, x: u64) -> Option<u64> {
        let r = self.ranges.front()?;
        if r.start > x {
            return None;
        }
        let end = r.end;
        self.ranges.pop_front();
        Some(end)
    }

    /// Call `f` for each part of `start..end` not covered by the set.
    pub(super) fn for_each_gap(&self, start: u64, end: u64, mut f: impl FnMut(u64, u64)) {
        let mut cur = start;
        let mut i = self.first_after(start);
        while cur < end && i < self.ranges.len() && self.ranges[i].start < end {
            let r = &self.ranges[i];
            if r.start > cur {
                f(cur, r.start);
            }
            cur = cur.max(r.end);
            i += 1;
        }
        if cur < end {
            f(cur, end);
        }
    }

    #[cfg(test)]
    pub(super) fn to_vec(&self) -> Vec<Range<u64>> {
        self.ranges.iter().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn model_set(ops: &[(bool, u64, u64)]) -> Vec<bool> {
        let mut m = vec![false; 256];
        for &(add, s, e) in ops {
            for b in &mut m[s as usize..e as usize] {
                *b = add;
            }
        }
        m
    }

    fn as_bits(r: &Ranges) -> Vec<bool> {
        let mut m = vec![false; 256];
        for x in r.to_vec() {
            for b in &mut m[x.start as usize..x.end as usize] {
                *b = true;
            }
        }
        m
    }

    fn check_invariants(r: &Ranges) {
        let v = r.to_vec();
        for w in v.windows(2) {
            assert!(
                w[0].end < w[1].start,
                "not disjoint and non-adjacent: {v:?}"
            );
        }
        for x in &v {
            assert!(x.start < x.end, "empty range: {v:?}");
        }
    }

    #[test]
    fn insert_merges_neighbours() {
        let mut r = Ranges::default();
        r.insert(10, 20);
        r.insert(30, 40);
        r.insert(0, 5);
        assert_eq!(r.to_vec(), vec![0..5, 10..20, 30..40]);
        r.insert(20, 30);
        assert_eq!(r.to_vec(), vec![0..5, 10..40]);
        r.insert(3, 12);
        assert_eq!(r.to_vec(), vec![0..40]);
        r.insert(5, 5);
        assert_eq!(r.len(), 1);
    }

    #[test]
    fn remove_splits() {
        let mut r = Ranges::default();
        r.insert(0, 100);
        r.remove(10, 20);
        assert_eq!(r.to_vec(), vec![0..10, 20..100]);
        r.remove(0, 10);
        assert_eq!(r.to_vec(), vec![20..100]);
        r.remove(90, 200);
        assert_eq!(r.to_vec(), vec![20..90]);
        r.remove(0, 1000);
        assert!(r.is_empty());
    }

    #[test]
    fn pop_and_gaps() {
        let mut r = Ranges::default();
        r.insert(10, 20);
        r.insert(30, 40);
        let mut gaps = vec![];
        r.for_each_gap(0, 50, |s, e| gaps.push(s..e));
        assert_eq!(gaps, vec![0..10, 20..30, 40..50]);
        gaps.clear();
        r.for_each_gap(12, 18, |s, e| gaps.push(s..e));
        assert!(gaps.is_empty());
        assert_eq!(r.pop_front(4), Some(10..14));
        assert_eq!(r.pop_reaching(13), None);
        assert_eq!(r.pop_reaching(14), Some(20));
        assert_eq!(r.to_vec(), vec![30..40]);
    }

    proptest! {
        #[test]
        fn matches_a_bitmap(ops in proptest::collection::vec(
            (any::<bool>(), 0u64..256, 0u64..64), 0..60)
        ) {
            let ops: Vec<_> = ops.into_iter().map(|(a, s, l)| (a, s, (s + l).min(256))).collect();
            let mut r = Ranges::default();
            for &(add, s, e) in &ops {
                if add { r.insert(s, e) } else { r.remove(s, e) }
                check_invariants(&r);
            }
            prop_assert_eq!(as_bits(&r), model_set(&ops));
            let mut gaps = vec![false; 256];
            r.for_each_gap(0, 256, |s, e| for b in &mut gaps[s as usize..e as usize] { *b = true });
            let inverse: Vec<bool> = model_set(&ops).iter().map(|b| !b).collect();
            prop_assert_eq!(gaps, inverse);
        }
    }
}
