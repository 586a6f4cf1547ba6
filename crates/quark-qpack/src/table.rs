//! The dynamic table (RFC 9204 §3.2): a FIFO of field lines, sized with
//! 32 bytes of overhead per entry, addressed by absolute index.
//!
//= https://www.rfc-editor.org/rfc/rfc9204#section-3.2.1
//# The size of an entry is the sum of its name's length in bytes, its
//# value's length in bytes, and 32 additional bytes.

use std::collections::VecDeque;

use crate::field::FIELD_OVERHEAD;

/// One dynamic table entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) name: Box<[u8]>,
    pub(crate) value: Box<[u8]>,
}

impl Entry {
    pub(crate) fn size(&self) -> u64 {
        entry_size(&self.name, &self.value)
    }
}

/// The RFC 9204 §3.2.1 size of an entry.
pub(crate) fn entry_size(name: &[u8], value: &[u8]) -> u64 {
    name.len() as u64 + value.len() as u64 + FIELD_OVERHEAD
}

/// The table both sides keep in step: the encoder's copy and the decoder's.
#[derive(Debug, Default)]
pub(crate) struct Table {
    /// Oldest first; the newest has absolute index `inserted - 1`.
    entries: VecDeque<Entry>,
    /// Sum of entry sizes.
    size: u64,
    /// The current capacity (Set Dynamic Table Capacity).
    capacity: u64,
    /// Insert Count: entries ever inserted.
    inserted: u64,
}

impl Table {
    pub(crate) fn capacity(&self) -> u64 {
        self.capacity
    }

    pub(crate) fn size(&self) -> u64 {
        self.size
    }

    /// Insert Count (RFC 9204 §3.2.4): the number of entries ever inserted.
    pub(crate) fn insert_count(&self) -> u64 {
        self.inserted
    }

    /// Absolute index of the oldest entry still in the table.
    pub(crate) fn first_index(&self) -> u64 {
        self.inserted - self.entries.len() as u64
    }

    /// The entry at absolute index `abs`, if still in the table.
    pub(crate) fn get(&self, abs: u64) -> Option<&Entry> {
        let i = abs.checked_sub(self.first_index())?;
        self.entries.get(usize::try_from(i).ok()?)
    }

    /// Absolute indices oldest to newest with their entries.
    pub(crate) fn iter(&self) -> impl DoubleEndedIterator<Item = (u64, &Entry)> {
        let first = self.first_index();
        self.entries
            .iter()
            .enumerate()
            .map(move |(i, e)| (first + i as u64, e))
    }

    /// How many of the oldest entries must go for `needed` more bytes to fit
    /// under `capacity`; `None` if even an empty table is too small.
    pub(crate) fn evictions_for(&self, needed: u64, capacity: u64) -> Option<usize> {
        if needed > capacity {
            return None;
        }
        let mut size = self.size;
        let mut n = 0;
        while size + needed > capacity {
            size -= self.entries.get(n)?.size();
            n += 1;
        }
        Some(n)
    }

    /// Sets the capacity, evicting the oldest entries to fit. The caller has
    /// checked the value against its limit (and, for the encoder, that the
    /// evicted entries are evictable).
    pub(crate) fn set_capacity(&mut self, capacity: u64) {
        self.capacity = capacity;
        self.evict_to(capacity);
    }

    /// Inserts an entry, evicting as needed; `false` (nothing changed) if the
    /// entry is larger than the capacity.
    //= https://www.rfc-editor.org/rfc/rfc9204#section-3.2.2
    //# It is an error if the encoder attempts to add an entry that is larger
    //# than the dynamic table capacity
    pub(crate) fn insert(&mut self, name: Box<[u8]>, value: Box<[u8]>) -> bool {
        let size = entry_size(&name, &value);
        if size > self.capacity {
            return false;
        }
        self.evict_to(self.capacity - size);
        self.entries.push_back(Entry { name, value });
        self.size += size;
        self.inserted += 1;
        true
    }

    fn evict_to(&mut self, limit: u64) {
        while self.size > limit {
            let Some(e) = self.entries.pop_front() else {
                break;
            };
            self.size -= e.size();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Box<[u8]> {
        s.as_bytes().into()
    }

    #[test]
    fn sizes_eviction_and_indices() {
        let mut t = Table::default();
        assert!(!t.insert(b("a"), b("b")), "capacity 0 holds nothing");
        t.set_capacity(220);
        assert!(t.insert(b(":authority"), b("www.example.com")));
        assert!(t.insert(b(":path"), b("/sample/path")));
        assert_eq!((t.size(), t.insert_count(), t.first_index()), (106, 2, 0));
        assert!(t.insert(b("custom-key"), b("custom-value")));
        assert!(t.insert(b(":authority"), b("www.example.com")));
        assert_eq!(t.size(), 217);
        assert_eq!(t.evictions_for(55, 220), Some(1));
        assert_eq!(t.evictions_for(221, 220), None);
        assert!(t.insert(b("custom-key"), b("custom-value2")));
        assert_eq!((t.size(), t.first_index()), (215, 1));
        assert!(t.get(0).is_none());
        assert_eq!(&*t.get(4).unwrap().value, b"custom-value2");
        assert!(t.get(5).is_none());
        t.set_capacity(60);
        assert_eq!((t.size(), t.first_index(), t.insert_count()), (55, 4, 5));
    }
}
