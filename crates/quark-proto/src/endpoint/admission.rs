//! Admission control: which client Initials may make the server hold state.
//!
//! A server connection is "half-open" from its first Initial until its
//! handshake completes or it closes. Half-open connections are what an
//! unauthenticated peer can make a server hold, so they are counted, in all and
//! per source; past [`HandshakeLimits`] the server asks for address validation
//! (Retry) or refuses, and returns to accepting directly as the count falls.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};

use crate::config::HandshakeLimits;

/// Where connections come from, for per-source limits: an IPv4 address, or
/// the /64 prefix of an IPv6 one (one host usually has a whole /64).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Source(u128);

impl Source {
    pub(crate) fn of(addr: &SocketAddr) -> Self {
        match addr.ip() {
            IpAddr::V4(v4) => Source(u128::from(u32::from(v4))),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => Source(u128::from(u32::from(v4))),
                // Tagged so an IPv6 prefix never equals an IPv4 address.
                None => Source((u128::from(v6) & !((1u128 << 64) - 1)) | 1),
            },
        }
    }
}

/// What to do with a client's first Initial.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Create the connection.
    Accept,
    /// Answer with a Retry: the address must be validated first.
    Retry,
    /// Answer with CONNECTION_REFUSED, keeping no state.
    Refuse,
}

/// The half-open connections of an endpoint, in all and per source.
#[derive(Debug, Default)]
pub(crate) struct Admission {
    half_open: usize,
    /// Only sources with half-open connections have an entry, so the map is
    /// bounded by the half-open count.
    by_source: HashMap<Source, usize>,
}

impl Admission {
    /// What to do with an Initial from `source`, `validated` if it carried a
    /// valid token; `always_retry` is the server's standing policy.
    pub(crate) fn verdict(
        &self,
        limits: &HandshakeLimits,
        source: Source,
        validated: bool,
        always_retry: bool,
    ) -> Verdict {
        let from_source = self.by_source.get(&source).copied().unwrap_or(0);
        if self.half_open >= limits.max_half_open || from_source >= limits.max_half_open_per_source
        {
            return Verdict::Refuse;
        }
        if !validated && (always_retry || self.half_open >= limits.retry_above) {
            return Verdict::Retry;
        }
        Verdict::Accept
    }

    /// A half-open connection from `source` was made.
    pub(crate) fn open(&mut self, source: Source) {
        self.half_open += 1;
        *self.by_source.entry(source).or_insert(0) += 1;
    }

    /// A half-open connection from `source` completed its handshake or went.
    pub(crate) fn release(&mut self, source: Source) {
        self.half_open = self.half_open.saturating_sub(1);
        if let Some(n) = self.by_source.get_mut(&source) {
            *n -= 1;
            if *n == 0 {
                self.by_source.remove(&source);
            }
        }
    }

    /// Half-open connections now, and the sources they come from.
    pub(crate) fn counts(&self) -> (usize, usize) {
        (self.half_open, self.by_source.len())
    }
}

#[cfg(test)]
mod tests {
    use std::net::{Ipv4Addr, Ipv6Addr};

    use super::*;

    fn v4(last: u8, port: u16) -> Source {
        Source::of(&(Ipv4Addr::new(10, 0, 0, last), port).into())
    }

    #[test]
    fn sources_are_addresses_and_v6_prefixes() {
        assert_eq!(v4(1, 1000), v4(1, 2000), "the port does not matter");
        assert_ne!(v4(1, 1000), v4(2, 1000));
        let a: Ipv6Addr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: Ipv6Addr = "2001:db8:1:2:bbbb::7".parse().unwrap();
        let c: Ipv6Addr = "2001:db8:1:3::1".parse().unwrap();
        let of = |ip: Ipv6Addr| Source::of(&(ip, 443).into());
        assert_eq!(of(a), of(b), "one /64");
        assert_ne!(of(a), of(c));
        let mapped = Ipv4Addr::new(10, 0, 0, 1).to_ipv6_mapped();
        assert_eq!(of(mapped), v4(1, 5), "v4-mapped is the v4 address");
        assert_ne!(
            of(Ipv6Addr::UNSPECIFIED),
            Source::of(&(Ipv4Addr::UNSPECIFIED, 1).into())
        );
    }

    #[test]
    fn retry_then_refuse_and_back() {
        let limits = HandshakeLimits {
            max_half_open: 6,
            max_half_open_per_source: 3,
            retry_above: 4,
        };
        let mut a = Admission::default();
        let verdict =
            |a: &Admission, last, validated| a.verdict(&limits, v4(last, 1), validated, false);
        for last in 1..=4 {
            assert_eq!(verdict(&a, last, false), Verdict::Accept);
            a.open(v4(last, 1));
        }
        // Four half-open: the unvalidated must prove their address first.
        assert_eq!(verdict(&a, 9, false), Verdict::Retry);
        assert_eq!(verdict(&a, 9, true), Verdict::Accept);
        a.open(v4(9, 1));
        a.open(v4(9, 1));
        assert_eq!(a.counts(), (6, 5));
        assert_eq!(
            verdict(&a, 8, true),
            Verdict::Refuse,
            "all half-open slots taken"
        );
        a.release(v4(1, 1));
        assert_eq!(verdict(&a, 9, true), Verdict::Accept);
        a.open(v4(9, 1));
        assert_eq!(verdict(&a, 1, true), Verdict::Refuse, "full again");
        a.release(v4(2, 1));
        assert_eq!(
            verdict(&a, 9, true),
            Verdict::Refuse,
            "source 9 has its three"
        );
        assert_eq!(verdict(&a, 2, true), Verdict::Accept);
        // Load falls: direct accepts again.
        for last in [3, 4, 9, 9, 9] {
            a.release(v4(last, 1));
        }
        assert_eq!(a.counts(), (0, 0), "no entry outlives its connections");
        assert_eq!(verdict(&a, 5, false), Verdict::Accept);
        assert_eq!(a.verdict(&limits, v4(5, 1), false, true), Verdict::Retry);
    }
}
