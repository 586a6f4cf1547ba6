//! The endpoint's half of PMTU discovery. Like the kernel's per-destination
//! MTU cache, what one connection learnt about a path (local IP, remote IP)
//! serves every connection on it. And the traffic of all of them together
//! decides when the path is worth a search: 144 request/response connections of
//! 2 KB each used to reach the 64 KB probing threshold only together, after
//! thousands of requests in 1200-byte datagrams; now one of them searches as
//! soon as the path as a whole carried 64 KB.

use super::Connection;
use super::mtu::{BASE_MTU, MTU_PROBE_AFTER, PathMtu};
use super::path_map::{Path, PathMap};

/// Paths remembered (bounded: peers choose addresses). A full cache forgets
/// an arbitrary path for each new one, so new paths are still learnt.
const MAX_PATHS: usize = 4096;

#[derive(Clone, Copy, Debug)]
enum Entry {
    /// Nothing learnt yet: bytes sent on the path since the last search was
    /// granted, by connections that have not searched.
    Traffic(u64),
    /// What a connection reported.
    Learnt(PathMtu),
}

/// Per-path MTU knowledge and traffic, shared by an endpoint's connections.
#[derive(Debug)]
pub(crate) struct MtuCache {
    paths: PathMap<Entry>,
}

impl Default for MtuCache {
    fn default() -> Self {
        MtuCache {
            paths: PathMap::new(MAX_PATHS),
        }
    }
}

impl MtuCache {
    /// Exchange news with one connection: take what it learnt, or offer what
    /// the others learnt and count its traffic towards a search of the path.
    pub(crate) fn sync(&mut self, conn: &mut Connection) {
        let path = conn.mtu_path();
        if let Some(news) = conn.take_mtu_news() {
            self.learn(path, news);
            return;
        }
        if !conn.wants_mtu_offer() {
            return;
        }
        let sent = conn.mtu.unreported(conn.stats.bytes_out);
        match self.paths.get_mut(&path) {
            Some(Entry::Learnt(hint)) => conn.offer_mtu(*hint),
            Some(Entry::Traffic(total)) => {
                *total += sent;
                if *total >= MTU_PROBE_AFTER {
                    // This connection searches for all: its first probe's news
                    // makes the others wait. If it closes before probing, the
                    // path's next 64 KB grant the search again.
                    *total = 0;
                    conn.mtu.grant();
                }
            }
            None => self.insert(path, Entry::Traffic(sent)),
        }
    }

    fn learn(&mut self, path: Path, news: PathMtu) {
        let entry = self.paths.get(&path).copied();
        if news == PathMtu::Abandoned {
            // The prober closed before its answer (a short download whose
            // client closes on the last byte): the path's traffic grants the
            // search anew, instead of every connection waiting until the
            // probe's timeout in 1 200-byte datagrams.
            if matches!(entry, Some(Entry::Learnt(PathMtu::Probing(_)))) {
                self.insert(path, Entry::Traffic(0));
            }
            return;
        }
        let validated = matches!(entry, Some(Entry::Learnt(PathMtu::Known(k))) if k > BASE_MTU);
        // A probe doesn't displace a size already validated.
        if matches!(news, PathMtu::Probing(_)) && validated {
            return;
        }
        // The base size (a search that found nothing better, or a black hole)
        // is kept too: it is never adopted, and it stops the path's traffic
        // from granting search after search.
        self.insert(path, Entry::Learnt(news));
    }

    fn insert(&mut self, path: Path, entry: Entry) {
        self.paths.insert(path, entry);
    }
}

#[cfg(test)]
mod tests {
    use std::net::{IpAddr, Ipv4Addr};

    use super::*;

    #[test]
    fn the_cache_is_bounded_and_still_learns_new_paths() {
        let mut cache = MtuCache::default();
        let path = |i: u32| (None, IpAddr::V4(Ipv4Addr::from(i)));
        for i in 0..(MAX_PATHS as u32 + 500) {
            cache.learn(path(i), PathMtu::Known(9000));
            assert!(cache.paths.len() <= MAX_PATHS);
            assert!(cache.paths.get(&path(i)).is_some(), "path {i} not learnt");
        }
        // What is already known is updated in place, without evicting.
        let known = *cache.paths.keys().next().unwrap();
        cache.learn(known, PathMtu::Known(1452));
        assert_eq!(cache.paths.len(), MAX_PATHS);
        assert!(matches!(
            cache.paths[&known],
            Entry::Learnt(PathMtu::Known(1452))
        ));
    }

    #[test]
    fn a_probe_does_not_displace_a_validated_size() {
        let mut cache = MtuCache::default();
        let p = (None, IpAddr::V4(Ipv4Addr::LOCALHOST));
        cache.learn(p, PathMtu::Known(9000));
        #[allow(clippy::disallowed_methods)]
        let soon = std::time::Instant::now();
        cache.learn(p, PathMtu::Probing(soon));
        assert!(matches!(
            cache.paths[&p],
            Entry::Learnt(PathMtu::Known(9000))
        ));
        // The base size is no validation: a later search's probe is news.
        cache.learn(p, PathMtu::Known(BASE_MTU));
        cache.learn(p, PathMtu::Probing(soon));
        assert!(matches!(
            cache.paths[&p],
            Entry::Learnt(PathMtu::Probing(_))
        ));
        // The prober closed unanswered: the path's traffic counts anew.
        cache.learn(p, PathMtu::Abandoned);
        assert!(matches!(cache.paths[&p], Entry::Traffic(0)));
        // A validated size is not withdrawn by a later prober's close.
        cache.learn(p, PathMtu::Known(9000));
        cache.learn(p, PathMtu::Abandoned);
        assert!(matches!(
            cache.paths[&p],
            Entry::Learnt(PathMtu::Known(9000))
        ));
    }
}
