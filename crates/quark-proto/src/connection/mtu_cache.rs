//! The endpoint's half of PMTU discovery. Like the kernel's per-destination
//! MTU cache, what one connection learnt about a path (local IP, remote IP)
//! serves every connection on it. And the traffic of all of them together
//! decides when the path is worth a search: 144 request/response connections of
//! 2 KB each used to reach the 64 KB probing threshold only together, after
//! thousands of requests in 1200-byte datagrams; now one of them searches as
//! soon as the path as a whole carried 64 KB.

use std::collections::HashMap;
use std::net::IpAddr;

use super::Connection;
use super::mtu::{BASE_MTU, MTU_PROBE_AFTER, PathMtu};

type Path = (Option<IpAddr>, IpAddr);

/// Paths remembered (bounded: peers choose addresses).
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
#[derive(Debug, Default)]
pub(crate) struct MtuCache {
    paths: HashMap<Path, Entry>,
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
        let sent = conn.unreported_mtu_traffic();
        let room = self.paths.len() < MAX_PATHS;
        match self.paths.get_mut(&path) {
            Some(Entry::Learnt(hint)) => conn.offer_mtu(*hint),
            Some(Entry::Traffic(total)) => {
                *total += sent;
                if *total >= MTU_PROBE_AFTER {
                    // This connection searches for all: its first probe's news
                    // makes the others wait. If it closes before probing, the
                    // path's next 64 KB grant the search again.
                    *total = 0;
                    conn.grant_mtu_search();
                }
            }
            None if room => {
                self.paths.insert(path, Entry::Traffic(sent));
            }
            None => {}
        }
    }

    fn learn(&mut self, path: Path, news: PathMtu) {
        let entry = self.paths.get(&path).copied();
        let validated = matches!(entry, Some(Entry::Learnt(PathMtu::Known(k))) if k > BASE_MTU);
        // A probe doesn't displace a size already validated.
        if matches!(news, PathMtu::Probing(_)) && validated {
            return;
        }
        if entry.is_none() && self.paths.len() >= MAX_PATHS {
            return;
        }
        // The base size (a search that found nothing better, or a black hole)
        // is kept too: it is never adopted, and it stops the path's traffic
        // from granting search after search.
        self.paths.insert(path, Entry::Learnt(news));
    }
}
