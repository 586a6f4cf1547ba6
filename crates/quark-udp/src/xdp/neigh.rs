//! Which Ethernet address to send each datagram to.
//!
//! AF_XDP frames bypass the kernel's neighbour resolution, so quark keeps its own
//! small table, filled from (in order of precedence):
//!
//! 1. static entries from the configuration (`neigh=IP@MAC`), never replaced;
//! 2. the source addresses of datagrams received (a server learns its clients);
//! 3. the kernel's ARP table (`/proc/thread-self/net/arp`), read again on a miss at
//!    most every [`RESCAN`], for the next hop: the destination itself when it is
//!    on-link, else the gateway of the longest matching route through the
//!    interface (`/proc/thread-self/net/route`).
//!
//! On a miss the caller sends the datagram through its kernel UDP socket, which
//! makes the kernel resolve the address; the next read of the ARP table finds it.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use super::netdev;
use super::wire::Mac;

/// Most dynamic entries; the table is cleared when it is full (the peers are
/// peer-controlled input: this bounds the memory they can claim).
const MAX_ENTRIES: usize = 4096;
/// Shortest time between two reads of the kernel's tables after misses.
const RESCAN: Duration = Duration::from_millis(20);

pub(crate) struct Neighbours {
    ifname: String,
    statics: Vec<(Ipv4Addr, Mac)>,
    dynamic: HashMap<Ipv4Addr, Mac>,
    last_scan: Option<Instant>,
}

impl Neighbours {
    pub(crate) fn new(ifname: &str, statics: Vec<(Ipv4Addr, Mac)>) -> Self {
        Self {
            ifname: ifname.to_string(),
            statics,
            dynamic: HashMap::new(),
            last_scan: None,
        }
    }

    /// The Ethernet address for `dst`, or `None` when it is not known (yet).
    pub(crate) fn lookup(&mut self, dst: Ipv4Addr) -> Option<Mac> {
        if let Some(&(_, mac)) = self.statics.iter().find(|(ip, _)| *ip == dst) {
            return Some(mac);
        }
        if let Some(&mac) = self.dynamic.get(&dst) {
            return Some(mac);
        }
        self.miss(dst, Instant::now())
    }

    /// Records that `ip` sent from `mac`.
    pub(crate) fn learn(&mut self, ip: Ipv4Addr, mac: Mac) {
        if mac[0] & 1 != 0 || ip.is_unspecified() || ip.is_broadcast() || ip.is_multicast() {
            return; // never answer to a group address
        }
        self.insert(ip, mac);
    }

    fn insert(&mut self, ip: Ipv4Addr, mac: Mac) {
        if self.dynamic.len() >= MAX_ENTRIES && !self.dynamic.contains_key(&ip) {
            self.dynamic.clear();
        }
        self.dynamic.insert(ip, mac);
    }

    fn miss(&mut self, dst: Ipv4Addr, now: Instant) -> Option<Mac> {
        if self
            .last_scan
            .is_some_and(|t| now.duration_since(t) < RESCAN)
        {
            return None;
        }
        self.last_scan = Some(now);
        let routes = netdev::read_table("route");
        let hop = netdev::gateway(&routes, &self.ifname, dst).unwrap_or(dst);
        let arp = netdev::read_table("arp");
        let (_, mac) = netdev::arp_entries(&arp, &self.ifname).find(|(ip, _)| *ip == hop)?;
        self.insert(dst, mac);
        Some(mac)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statics_win_and_learning_is_bounded() {
        let peer = Ipv4Addr::new(192, 0, 2, 2);
        let mut n = Neighbours::new("no-such-if0", vec![(peer, [2, 0, 0, 0, 0, 1])]);
        n.learn(peer, [2, 0, 0, 0, 0, 9]);
        assert_eq!(n.lookup(peer), Some([2, 0, 0, 0, 0, 1]));
        let other = Ipv4Addr::new(192, 0, 2, 3);
        n.learn(other, [2, 0, 0, 0, 0, 3]);
        assert_eq!(n.lookup(other), Some([2, 0, 0, 0, 0, 3]));
        // Group addresses are never learned.
        n.learn(Ipv4Addr::new(192, 0, 2, 4), [3, 0, 0, 0, 0, 4]);
        assert!(!n.dynamic.contains_key(&Ipv4Addr::new(192, 0, 2, 4)));
        for i in 0..(MAX_ENTRIES as u32 + 10) {
            n.learn(Ipv4Addr::from(0x0a00_0000 + i), [2, 0, 0, 0, 0, 5]);
        }
        assert!(n.dynamic.len() <= MAX_ENTRIES);
    }

    #[test]
    fn a_miss_reads_the_tables_at_most_every_rescan() {
        let mut n = Neighbours::new("no-such-if0", Vec::new());
        let t0 = Instant::now();
        assert_eq!(n.miss(Ipv4Addr::LOCALHOST, t0), None);
        assert_eq!(n.last_scan, Some(t0));
        assert_eq!(n.miss(Ipv4Addr::LOCALHOST, t0 + RESCAN / 2), None);
        assert_eq!(n.last_scan, Some(t0));
        assert_eq!(n.miss(Ipv4Addr::LOCALHOST, t0 + RESCAN), None);
        assert_eq!(n.last_scan, Some(t0 + RESCAN));
    }
}
