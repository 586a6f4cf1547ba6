//! A map keyed by sequence number, as a sorted vector: the connection-ID
//! tables hold a handful of entries (active_connection_id_limit, 4 by
//! default), for which a B-tree's first node (11 slots) is mostly empty
//! space on every connection. Operations are O(n); `n` is bounded by the
//! tables' limits (RFC 9000 §5.1.1).

/// Entries sorted by key.
pub(crate) struct SeqMap<V> {
    entries: Vec<(u64, V)>,
}

impl<V> Default for SeqMap<V> {
    fn default() -> Self {
        SeqMap {
            entries: Vec::new(),
        }
    }
}

impl<V> SeqMap<V> {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    fn find(&self, key: u64) -> Result<usize, usize> {
        self.entries.binary_search_by_key(&key, |(k, _)| *k)
    }

    /// Insert or replace; returns the value replaced.
    pub(crate) fn insert(&mut self, key: u64, value: V) -> Option<V> {
        match self.find(key) {
            Ok(i) => Some(std::mem::replace(&mut self.entries[i].1, value)),
            Err(i) => {
                self.entries.insert(i, (key, value));
                None
            }
        }
    }

    pub(crate) fn get(&self, key: &u64) -> Option<&V> {
        self.find(*key).ok().map(|i| &self.entries[i].1)
    }

    pub(crate) fn get_mut(&mut self, key: &u64) -> Option<&mut V> {
        self.find(*key).ok().map(|i| &mut self.entries[i].1)
    }

    pub(crate) fn remove(&mut self, key: &u64) -> Option<V> {
        self.find(*key).ok().map(|i| self.entries.remove(i).1)
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// In key order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&u64, &V)> {
        self.entries.iter().map(|(k, v)| (k, v))
    }

    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = (&u64, &mut V)> {
        self.entries.iter_mut().map(|(k, v)| (&*k, v))
    }

    pub(crate) fn values(&self) -> impl Iterator<Item = &V> {
        self.entries.iter().map(|(_, v)| v)
    }

    /// Heap held.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.entries.capacity() * std::mem::size_of::<(u64, V)>()
    }
}

#[cfg(test)]
mod tests {
    use super::SeqMap;

    #[test]
    fn behaves_as_a_sorted_map() {
        let mut m = SeqMap::new();
        assert!(m.is_empty());
        assert_eq!(m.insert(5, "e"), None);
        assert_eq!(m.insert(1, "a"), None);
        assert_eq!(m.insert(3, "c"), None);
        assert_eq!(m.insert(3, "C"), Some("c"));
        assert_eq!(m.len(), 3);
        let keys: Vec<u64> = m.iter().map(|(k, _)| *k).collect();
        assert_eq!(keys, [1, 3, 5]);
        assert_eq!(m.get(&3), Some(&"C"));
        *m.get_mut(&5).unwrap() = "E";
        assert_eq!(m.values().copied().collect::<Vec<_>>(), ["a", "C", "E"]);
        assert_eq!(m.remove(&1), Some("a"));
        assert_eq!(m.remove(&1), None);
        assert_eq!(m.get(&2), None);
        assert_eq!(m.iter().next(), Some((&3, &"C")));
    }
}
