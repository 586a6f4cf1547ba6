//! A bounded map keyed by path (local IP, remote IP), for what an endpoint's
//! connections share per path (`mtu_cache`, `path_rtt`).
//!
//! The path inserted last is held outside the hash table: an endpoint's
//! connections mostly share one path (a client's server, a lab's one peer),
//! and the endpoint consults the map on every sync, several times per
//! request. Comparing two addresses costs a fraction of hashing them; the
//! table keeps std's keyed SipHash, because peers choose their addresses.

use std::collections::HashMap;
use std::net::IpAddr;

pub(crate) type Path = (Option<IpAddr>, IpAddr);

#[derive(Debug)]
pub(crate) struct PathMap<V> {
    /// The path inserted last, and its value.
    hot: Option<(Path, V)>,
    /// Every other path.
    cold: HashMap<Path, V>,
    /// Paths held at most, hot one included: a full map forgets an
    /// arbitrary path for each new one.
    max: usize,
}

impl<V> PathMap<V> {
    pub(crate) fn new(max: usize) -> Self {
        PathMap {
            hot: None,
            cold: HashMap::new(),
            max: max.max(1),
        }
    }

    pub(crate) fn get(&self, path: &Path) -> Option<&V> {
        match &self.hot {
            Some((p, v)) if p == path => Some(v),
            _ => self.cold.get(path),
        }
    }

    pub(crate) fn get_mut(&mut self, path: &Path) -> Option<&mut V> {
        match &mut self.hot {
            Some((p, v)) if p == path => Some(v),
            _ => self.cold.get_mut(path),
        }
    }

    /// Sets `path`'s value; a new path becomes the hot one.
    pub(crate) fn insert(&mut self, path: Path, value: V) {
        if let Some(v) = self.get_mut(&path) {
            *v = value;
            return;
        }
        if self.len() >= self.max {
            // `max` ≥ 1 and the hot slot holds one: a full map has a cold one
            // when max > 1; with max 1 the hot one is replaced below.
            if let Some(old) = self.cold.keys().next().copied() {
                self.cold.remove(&old);
            } else {
                self.hot = None;
            }
        }
        if let Some((p, v)) = self.hot.replace((path, value)) {
            self.cold.insert(p, v);
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.cold.len() + usize::from(self.hot.is_some())
    }

    #[cfg(test)]
    pub(crate) fn keys(&self) -> impl Iterator<Item = &Path> {
        self.hot.iter().map(|(p, _)| p).chain(self.cold.keys())
    }
}

impl<V> Default for PathMap<V> {
    fn default() -> Self {
        PathMap::new(usize::MAX)
    }
}

#[cfg(test)]
impl<V> std::ops::Index<&Path> for PathMap<V> {
    type Output = V;
    fn index(&self, path: &Path) -> &V {
        self.get(path).expect("no such path")
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use super::*;

    fn path(i: u32) -> Path {
        (None, IpAddr::V4(Ipv4Addr::from(i)))
    }

    #[test]
    fn every_path_keeps_its_value_across_the_hot_slot_and_the_bound_holds() {
        let mut map = PathMap::new(8);
        for i in 0..8 {
            map.insert(path(i), i);
        }
        // Updating a cold path keeps the hot one where it is.
        map.insert(path(2), 20);
        *map.get_mut(&path(7)).unwrap() += 70;
        assert_eq!(map.len(), 8);
        assert_eq!(map[&path(2)], 20);
        assert_eq!(map[&path(7)], 77);
        for i in [0, 1, 3, 4, 5, 6] {
            assert_eq!(map[&path(i)], i, "path {i}");
        }
        // New paths evict, never past the bound; the newest is always kept.
        for i in 100..140 {
            map.insert(path(i), i);
            assert_eq!(map.len(), 8);
            assert_eq!(map[&path(i)], i);
        }
        let mut one = PathMap::new(1);
        one.insert(path(1), 1);
        one.insert(path(2), 2);
        assert_eq!((one.len(), one.get(&path(1)), one[&path(2)]), (1, None, 2));
    }
}
