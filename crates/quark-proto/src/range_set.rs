//! A set of `u64` values stored as disjoint half-open ranges: received packet
//! numbers for ACK frames, acknowledged stream offsets, and so on.
//!
//! Inserting at or just above the top (the in-order case) is O(1); anything else is
//! O(log n) in the number of ranges (plus the ranges it merges or splits).
//!
//! Representation: the highest range lives in `top`, every other range in a
//! `BTreeMap<start, end>`. In-order traffic only ever touches `top`, so it never
//! walks the tree; out-of-order traffic pays the tree's O(log n). A sorted `Vec`
//! would make the middle-insert case O(n) memmoves, which a peer sending every other
//! packet (thousands of ranges) could turn into quadratic work.

use std::collections::BTreeMap;
use std::ops::Range;

/// Disjoint, non-adjacent half-open ranges, kept merged.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RangeSet {
    /// The highest range; `None` only when the set is empty.
    top: Option<Range<u64>>,
    /// All other ranges, start → end; every one lies strictly below `top` with a gap.
    rest: BTreeMap<u64, u64>,
}

impl RangeSet {
    /// Heap held (an estimate of the B-tree's nodes).
    pub(crate) fn heap_bytes(&self) -> usize {
        btree_bytes(self.rest.len(), std::mem::size_of::<(u64, u64)>())
    }

    /// An empty set.
    pub fn new() -> Self {
        RangeSet::default()
    }

    /// Add `range`; returns true if any value was new.
    pub fn insert(&mut self, range: Range<u64>) -> bool {
        if range.is_empty() {
            return false;
        }
        let Some(top) = &mut self.top else {
            self.top = Some(range);
            return true;
        };
        // Fast path: the new range starts inside or just after the top range.
        if range.start >= top.start && range.start <= top.end {
            if range.end <= top.end {
                return false;
            }
            top.end = range.end;
            return true;
        }
        // A new top above a gap: the old top joins the tree.
        if range.start > top.end {
            let old = std::mem::replace(top, range);
            self.rest.insert(old.start, old.end);
            return true;
        }
        // Below the top's start: do the work in the tree, then lift the highest out.
        self.sink_top();
        let new = tree_insert(&mut self.rest, range.start, range.end);
        self.lift_top();
        new
    }

    /// Add one value; returns true if it was new.
    pub fn insert_one(&mut self, v: u64) -> bool {
        self.insert(v..v + 1)
    }

    /// Remove `range`, splitting ranges as needed.
    pub fn remove(&mut self, range: Range<u64>) {
        let Some(top) = &mut self.top else { return };
        if range.is_empty() || range.start >= top.end {
            return;
        }
        // Cutting into `top` alone (forgetting acknowledged packet numbers is
        // "remove everything up to n" on a set that is mostly one range) needs no
        // tree work: the tree's node allocations showed in per-packet profiles.
        if range.start >= top.start {
            let (low, high) = (top.start..range.start, range.end..top.end);
            match (low.is_empty(), high.is_empty()) {
                (_, false) => {
                    if !low.is_empty() {
                        self.rest.insert(low.start, low.end);
                    }
                    *top = high;
                }
                (false, true) => *top = low,
                (true, true) => self.lift_top(),
            }
            return;
        }
        if self.rest.is_empty() {
            if range.end >= top.end {
                self.top = None;
            } else if range.end > top.start {
                top.start = range.end;
            }
            return;
        }
        self.sink_top();
        tree_remove(&mut self.rest, range.start, range.end);
        self.lift_top();
    }

    /// Whether `v` is in the set.
    pub fn contains(&self, v: u64) -> bool {
        match &self.top {
            None => false,
            Some(top) if v >= top.start => v < top.end,
            Some(_) => self
                .rest
                .range(..=v)
                .next_back()
                .is_some_and(|(_, &end)| v < end),
        }
    }

    /// Number of disjoint ranges.
    pub fn len(&self) -> usize {
        self.rest.len() + usize::from(self.top.is_some())
    }

    /// True if empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Smallest value.
    pub fn min(&self) -> Option<u64> {
        match self.rest.first_key_value() {
            Some((&start, _)) => Some(start),
            None => self.top.as_ref().map(|r| r.start),
        }
    }

    /// Largest value.
    pub fn max(&self) -> Option<u64> {
        self.top.as_ref().map(|r| r.end - 1)
    }

    /// Ranges in ascending order (reverse it for highest first).
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = Range<u64>> + '_ {
        self.rest
            .iter()
            .map(|(&start, &end)| start..end)
            .chain(self.top.clone())
    }

    /// Remove and return the lowest range.
    pub fn pop_min(&mut self) -> Option<Range<u64>> {
        match self.rest.pop_first() {
            Some((start, end)) => Some(start..end),
            None => self.top.take(),
        }
    }

    /// Drop the lowest ranges until at most `max_ranges` remain.
    pub fn truncate_low(&mut self, max_ranges: usize) {
        while self.len() > max_ranges {
            self.pop_min();
        }
    }

    /// Move `top` into the tree so a general operation can see every range.
    fn sink_top(&mut self) {
        if let Some(top) = self.top.take() {
            self.rest.insert(top.start, top.end);
        }
    }

    /// Restore the invariant: the highest range lives in `top`.
    fn lift_top(&mut self) {
        self.top = self.rest.pop_last().map(|(start, end)| start..end);
    }
}

/// Insert `[start, end)` into a merged tree; true if any value was new.
fn tree_insert(tree: &mut BTreeMap<u64, u64>, mut start: u64, mut end: u64) -> bool {
    // A range beginning at or before `start` may contain, overlap or touch it.
    if let Some((&s, &e)) = tree.range(..=start).next_back() {
        if e >= end {
            // Ranges are merged and non-adjacent, so a covered interval lies inside one.
            return false;
        }
        if e >= start {
            tree.remove(&s);
            start = s;
        }
    }
    // Ranges beginning inside or just after the new one merge into it.
    while let Some((&s, &e)) = tree.range(start..=end).next() {
        tree.remove(&s);
        end = end.max(e);
    }
    tree.insert(start, end);
    true
}

/// Remove `[start, end)` from a merged tree.
fn tree_remove(tree: &mut BTreeMap<u64, u64>, start: u64, end: u64) {
    // A range beginning below `start` keeps its low part and maybe a high part.
    if let Some((&s, &e)) = tree.range(..start).next_back() {
        if e > start {
            tree.insert(s, start);
            if e > end {
                tree.insert(end, e);
                return;
            }
        }
    }
    while let Some((&s, &e)) = tree.range(start..end).next() {
        tree.remove(&s);
        if e > end {
            tree.insert(end, e);
            break;
        }
    }
}

/// Heap of a B-tree map with `len` entries of `entry` bytes: leaves of up to
/// 11 entries, with a little header each (std's layout, estimated).
pub(crate) fn btree_bytes(len: usize, entry: usize) -> usize {
    len.div_ceil(11) * (11 * entry + 16)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    fn ranges(set: &RangeSet) -> Vec<Range<u64>> {
        set.iter().collect()
    }

    #[test]
    fn in_order_inserts_stay_one_range() {
        let mut s = RangeSet::new();
        for v in 0..10_000 {
            assert!(s.insert_one(v));
        }
        assert_eq!(ranges(&s), vec![0..10_000]);
        assert!(!s.insert_one(5));
        assert!(!s.insert(9_000..10_000));
        assert_eq!((s.min(), s.max(), s.len()), (Some(0), Some(9_999), 1));
    }

    #[test]
    fn gaps_merge_and_split() {
        let mut s = RangeSet::new();
        s.insert(10..20);
        s.insert(30..40);
        s.insert(0..5);
        assert_eq!(ranges(&s), vec![0..5, 10..20, 30..40]);
        assert!(s.insert(5..10)); // adjacent on both sides
        assert_eq!(ranges(&s), vec![0..20, 30..40]);
        assert!(s.insert(15..35));
        assert_eq!(ranges(&s), vec![0..40]);
        s.remove(10..12);
        assert_eq!(ranges(&s), vec![0..10, 12..40]);
        s.remove(0..100);
        assert!(s.is_empty());
        assert_eq!((s.min(), s.max()), (None, None));
    }

    #[test]
    fn highest_first_iteration_and_truncation() {
        let mut s = RangeSet::new();
        for i in 0..100u64 {
            s.insert_one(i * 2);
        }
        assert_eq!(s.len(), 100);
        let desc: Vec<_> = s.iter().rev().take(2).collect();
        assert_eq!(desc, vec![198..199, 196..197]);
        s.truncate_low(10);
        assert_eq!(s.len(), 10);
        assert_eq!(s.min(), Some(180));
        assert_eq!(s.pop_min(), Some(180..181));
        assert!(!s.contains(180));
        assert!(s.contains(198));
    }

    #[test]
    fn thousands_of_ranges_stay_cheap() {
        // Every other packet, then the holes filled in reverse order: each step is a
        // tree operation, never a scan.
        let mut s = RangeSet::new();
        for i in 0..20_000u64 {
            s.insert_one(i * 2);
        }
        assert_eq!(s.len(), 20_000);
        for i in (0..19_999u64).rev() {
            assert!(s.insert_one(i * 2 + 1));
        }
        assert_eq!(ranges(&s), vec![0..39_999]);
    }

    #[test]
    fn empty_ranges_are_ignored() {
        let mut s = RangeSet::new();
        #[allow(clippy::reversed_empty_ranges)]
        let backwards = 5..3;
        assert!(!s.insert(backwards));
        assert!(!s.insert(4..4));
        s.remove(0..0);
        assert!(s.is_empty());
    }

    #[derive(Clone, Debug)]
    enum Op {
        Insert(u64, u64),
        Remove(u64, u64),
        PopMin,
        Truncate(usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => (0u64..300, 0u64..12).prop_map(|(s, l)| Op::Insert(s, s + l)),
            2 => (0u64..300, 0u64..30).prop_map(|(s, l)| Op::Remove(s, s + l)),
            // Forgetting everything below a value, as ACK state does.
            1 => (0u64..320).prop_map(|e| Op::Remove(0, e)),
            1 => Just(Op::PopMin),
            1 => (0usize..8).prop_map(Op::Truncate),
        ]
    }

    fn check_against(set: &RangeSet, model: &BTreeSet<u64>) {
        let rs = ranges(set);
        // Sorted, non-empty, disjoint and non-adjacent.
        for w in rs.windows(2) {
            assert!(w[0].end < w[1].start, "not merged: {rs:?}");
        }
        assert!(rs.iter().all(|r| !r.is_empty()));
        let flat: BTreeSet<u64> = rs.iter().flat_map(|r| r.clone()).collect();
        assert_eq!(&flat, model);
        assert_eq!(set.min(), model.first().copied());
        assert_eq!(set.max(), model.last().copied());
        assert_eq!(set.is_empty(), model.is_empty());
        for v in 0..320 {
            assert_eq!(set.contains(v), model.contains(&v), "contains({v})");
        }
        let rev: Vec<_> = set.iter().rev().collect();
        assert_eq!(rev, rs.iter().rev().cloned().collect::<Vec<_>>());
    }

    proptest! {
        #[test]
        fn matches_naive_model(ops in proptest::collection::vec(op(), 1..80)) {
            let mut set = RangeSet::new();
            let mut model = BTreeSet::new();
            for op in ops {
                match op {
                    Op::Insert(s, e) => {
                        let mut new = false;
                        for v in s..e {
                            new |= model.insert(v);
                        }
                        prop_assert_eq!(set.insert(s..e), new);
                    }
                    Op::Remove(s, e) => {
                        for v in s..e {
                            model.remove(&v);
                        }
                        set.remove(s..e);
                    }
                    Op::PopMin => {
                        let got = set.pop_min();
                        if let Some(r) = &got {
                            for v in r.clone() {
                                prop_assert!(model.remove(&v));
                            }
                            // The whole lowest run went, nothing else.
                            prop_assert!(!model.contains(&r.end));
                            prop_assert!(model.first().is_none_or(|&m| m > r.end));
                        } else {
                            prop_assert!(model.is_empty());
                        }
                    }
                    Op::Truncate(n) => {
                        set.truncate_low(n);
                        prop_assert!(set.len() <= n);
                        let keep: BTreeSet<u64> =
                            set.iter().flatten().collect();
                        // Only the lowest values were dropped.
                        if let Some(low) = keep.first() {
                            prop_assert!(model.range(low..).eq(keep.iter()));
                        }
                        model = keep;
                    }
                }
                check_against(&set, &model);
            }
        }
    }
}
