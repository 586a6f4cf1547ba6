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
//! On a miss the datagram is dropped (as a network would while resolving; QUIC
//! retransmits) and the kernel is asked to resolve the address: an empty UDP
//! datagram from a kernel socket to the destination's discard port (9), at most
//! once per [`ASK_AGAIN`] per destination. Setups that must not lose the first
//! packets use static neighbours (the `quark xdp` namespaces do).

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::time::{Duration, Instant};

use super::netdev;
use super::wire::Mac;

/// Most dynamic entries; the table is cleared when it is full (the peers are
/// peer-controlled input: this bounds the memory they can claim).
const MAX_ENTRIES: usize = 4096;
/// Shortest time between two reads of the kernel's tables after misses.
const RESCAN: Duration = Duration::from_millis(20);
/// Shortest time between two resolution requests for one destination.
const ASK_AGAIN: Duration = Duration::from_secs(1);

pub(crate) struct Neighbours {
    ifname: String,
    local: Ipv4Addr,
    statics: Vec<(Ipv4Addr, Mac)>,
    dynamic: HashMap<Ipv4Addr, Mac>,
    last_scan: Option<Instant>,
    asked: HashMap<Ipv4Addr, Instant>,
}

impl Neighbours {
    pub(crate) fn new(ifname: &str, local: Ipv4Addr, statics: Vec<(Ipv4Addr, Mac)>) -> Self {
        Self {
            ifname: ifname.to_string(),
            local,
            statics,
            dynamic: HashMap::new(),
            last_scan: None,
            asked: HashMap::new(),
        }
    }

    /// The Ethernet address for `dst`, or `None` (resolution was requested).
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
            .is_none_or(|t| now.duration_since(t) >= RESCAN)
        {
            self.last_scan = Some(now);
            let routes = netdev::read_table("route");
            let hop = netdev::gateway(&routes, &self.ifname, dst).unwrap_or(dst);
            let arp = netdev::read_table("arp");
            let found = netdev::arp_entries(&arp, &self.ifname).find(|(ip, _)| *ip == hop);
            if let Some((_, mac)) = found {
                self.insert(dst, mac);
                return Some(mac);
            }
        }
        self.ask(dst, now);
        None
    }

    /// Makes the kernel resolve `dst` by sending it an empty datagram.
    fn ask(&mut self, dst: Ipv4Addr, now: Instant) {
        if self
            .asked
            .get(&dst)
            .is_some_and(|t| now.duration_since(*t) < ASK_AGAIN)
        {
            return;
        }
        if self.asked.len() >= MAX_ENTRIES {
            self.asked.clear();
        }
        self.asked.insert(dst, now);
        tracing::debug!(%dst, "no Ethernet address known; asking the kernel to resolve it");
        let sent = UdpSocket::bind(SocketAddrV4::new(self.local, 0))
            .and_then(|s| s.send_to(&[], SocketAddrV4::new(dst, 9)));
        if let Err(error) = sent {
            tracing::debug!(%dst, %error, "neighbour resolution request failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statics_win_and_learning_is_bounded() {
        let peer = Ipv4Addr::new(192, 0, 2, 2);
        let mut n = Neighbours::new(
            "no-such-if0",
            Ipv4Addr::LOCALHOST,
            vec![(peer, [2, 0, 0, 0, 0, 1])],
        );
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
    fn a_miss_is_none_and_asks_once() {
        // The "interface" has no ARP entries; the request goes to loopback.
        let mut n = Neighbours::new("no-such-if0", Ipv4Addr::LOCALHOST, Vec::new());
        assert_eq!(n.lookup(Ipv4Addr::LOCALHOST), None);
        let first = n.asked[&Ipv4Addr::LOCALHOST];
        assert_eq!(n.lookup(Ipv4Addr::LOCALHOST), None);
        assert_eq!(n.asked[&Ipv4Addr::LOCALHOST], first);
    }
}
