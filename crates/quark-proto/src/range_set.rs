//! A set of `u64` values stored as disjoint half-open ranges: received packet
//! numbers for ACK frames, acknowledged stream offsets, and so on.
//!
//! CONTRACT (filled in by the recovery work): public items fixed; representation the
//! implementer's. Inserting at or just above the top (the in-order case) is O(1);
//! anything else is O(log n) in the number of ranges.

use std::ops::Range;

/// Disjoint, non-adjacent half-open ranges, kept merged.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RangeSet {
    // implementer's fields
    _todo: (),
}

impl RangeSet {
    /// An empty set.
    pub fn new() -> Self {
        todo!("range set")
    }

    /// Add `range`; returns true if any value was new.
    pub fn insert(&mut self, range: Range<u64>) -> bool {
        let _ = range;
        todo!("range set")
    }

    /// Add one value; returns true if it was new.
    pub fn insert_one(&mut self, v: u64) -> bool {
        self.insert(v..v + 1)
    }

    /// Remove `range`, splitting ranges as needed.
    pub fn remove(&mut self, range: Range<u64>) {
        let _ = range;
        todo!("range set")
    }

    /// Whether `v` is in the set.
    pub fn contains(&self, v: u64) -> bool {
        let _ = v;
        todo!("range set")
    }

    /// Number of disjoint ranges.
    pub fn len(&self) -> usize {
        todo!("range set")
    }

    /// True if empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Smallest value.
    pub fn min(&self) -> Option<u64> {
        todo!("range set")
    }

    /// Largest value.
    pub fn max(&self) -> Option<u64> {
        todo!("range set")
    }

    /// Ranges in ascending order (reverse it for highest first).
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = Range<u64>> + '_ {
        todo!("range set");
        #[allow(unreachable_code)]
        std::iter::empty()
    }

    /// Remove and return the lowest range.
    pub fn pop_min(&mut self) -> Option<Range<u64>> {
        todo!("range set")
    }

    /// Drop the lowest ranges until at most `max_ranges` remain.
    pub fn truncate_low(&mut self, max_ranges: usize) {
        let _ = max_ranges;
        todo!("range set")
    }
}
