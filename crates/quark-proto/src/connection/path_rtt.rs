//! The endpoint's RTT estimate per path (local IP, remote IP), from every
//! connection's Application Data samples (`TransportConfig::shared_path_rtt`).
//!
//! 5 000 connections set up one by one on an idle path each hold an RTT of
//! a few hundred microseconds (a PTO of ~26 ms). When they all send at once,
//! the last of them waits for the peer to work through the others, hundreds
//! of milliseconds, and each fired log2(wait / 26 ms) PTOs, every probe one
//! more datagram for the busy peer to read and acknowledge (issue #33). The
//! answers the others get meanwhile measure that queue: a due PTO first
//! takes the path's estimate, and waits while it says the answer is not late.
//! RFC 9040 (TCP control block interdependence) shares RTT among concurrent connections to one host in TCP
//! for the same reason ("ensemble sharing").

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::Connection;
use super::path_map::{Path, PathMap};
use crate::recovery::rtt::GRANULARITY;

/// Paths remembered (bounded: peers choose addresses). A full cache forgets
/// an arbitrary path for each new one.
const MAX_PATHS: usize = 4096;

/// The most the path's estimate may raise a PTO base to: that of a
/// connection with no RTT sample at all (RFC 9002 §6.2.2: kInitialRtt
/// 333 ms, rttvar half of it, so 999 ms). Another connection from the same
/// address (behind one NAT) that holds back its ACKs can then delay this
/// one's loss recovery no more than knowing nothing about the path would.
const MAX_BASE: Duration = Duration::from_millis(999);

/// One path's estimate: RFC 9002 §5.3's smoothing over every connection's
/// latest_rtt (ack_delay left in: it errs towards a later PTO, not an
/// earlier one).
#[derive(Clone, Copy, Debug)]
struct Estimate {
    smoothed: Duration,
    var: Duration,
    /// When the last sample was taken.
    at: Instant,
}

impl Estimate {
    /// smoothed + max(4·var, kGranularity), as `RttEstimator::pto_base`.
    fn pto_base(&self) -> Duration {
        self.smoothed
            .saturating_add(self.var.saturating_mul(4).max(GRANULARITY))
    }
}

/// Per-path RTT shared by an endpoint's connections.
#[derive(Debug)]
pub(crate) struct PathRtts {
    paths: PathMap<Estimate>,
}

impl Default for PathRtts {
    fn default() -> Self {
        PathRtts {
            paths: PathMap::new(MAX_PATHS),
        }
    }
}

/// A per-path RTT cache that several endpoints of one process may share
/// ([`crate::Endpoint::share_path_rtts`]): a client spreading its
/// connections over sockets (an endpoint each) otherwise learns the path
/// once per socket, and the sockets whose requests the peer serves last see
/// no fresh answer of their own at a burst's start.
#[derive(Clone, Debug, Default)]
pub struct PathRttCache(Arc<Mutex<PathRtts>>);

impl PathRttCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, PathRtts> {
        // A panic elsewhere while holding it leaves estimates, not broken
        // invariants: keep using them.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether `self` and `other` are one cache (shared, not copied).
    pub fn is_shared_with(&self, other: &PathRttCache) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// `PathRtts::sync` under the lock, taken only when there is news.
    pub(crate) fn sync(&self, conn: &mut Connection) {
        if let Some((rtt, at)) = conn.take_rtt_news() {
            self.lock().sample(conn.mtu_path(), rtt, at);
        }
    }

    /// `PathRtts::offer` under the lock, taken only for a due loss timer.
    pub(crate) fn offer(&self, conn: &mut Connection, now: Instant) {
        if conn.wants_path_rtt(now).is_some() {
            self.lock().offer(conn, now);
        }
    }
}

impl PathRtts {
    /// Before a connection's due loss-detection timer fires: offer the
    /// path's PTO base, if its last sample is fresh (taken within the path's
    /// PTO period, base + max_ack_delay: the peer is answering the others).
    /// A stale one offers nothing: when the answers stop for everyone, the
    /// path may have failed, and every connection's own PTO fires. (Within
    /// the base alone was too strict: at a burst's start the base is still
    /// the idle path's ~1 ms, and a client busy sending its requests reads
    /// the first answers later than that.)
    fn offer(&self, conn: &mut Connection, now: Instant) {
        let Some(max_ack_delay) = conn.wants_path_rtt(now) else {
            return;
        };
        let base = self
            .paths
            .get(&conn.mtu_path())
            .map(|e| (e.pto_base(), e.at))
            .filter(|&(base, at)| {
                now.saturating_duration_since(at) <= base.saturating_add(max_ack_delay)
            })
            .map_or(Duration::ZERO, |(base, _)| base.min(MAX_BASE));
        conn.offer_path_pto(base, now);
    }

    fn sample(&mut self, path: Path, rtt: Duration, at: Instant) {
        if let Some(e) = self.paths.get_mut(&path) {
            //= https://www.rfc-editor.org/rfc/rfc9002#section-5.3
            //# smoothed_rtt = 7/8 * smoothed_rtt + 1/8 * adjusted_rtt
            //# rttvar_sample = abs(smoothed_rtt - adjusted_rtt)
            //# rttvar = 3/4 * rttvar + 1/4 * rttvar_sample
            e.smoothed = (e.smoothed * 7 + rtt) / 8;
            e.var = (e.var * 3 + e.smoothed.abs_diff(rtt)) / 4;
            e.at = e.at.max(at);
            return;
        }
        let e = Estimate {
            smoothed: rtt,
            var: rtt / 2,
            at,
        };
        self.paths.insert(path, e);
    }
}

#[cfg(test)]
mod tests {
    use std::net::{IpAddr, Ipv4Addr};

    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn the_estimate_follows_a_growing_queue_and_is_bounded() {
        let mut rtts = PathRtts::default();
        #[allow(clippy::disallowed_methods)]
        let t0 = Instant::now();
        let p = (None, IpAddr::V4(Ipv4Addr::LOCALHOST));
        // Answers to a burst sent at t0 come back one per ms: sample i at
        // t0 + i ms measures i ms.
        for i in 1..=200u32 {
            rtts.sample(p, MS * i, t0 + MS * i);
        }
        let e = rtts.paths[&p];
        assert!(e.smoothed > 190 * MS && e.smoothed < 200 * MS, "{e:?}");
        // Its PTO base covers the next answers' RTT.
        assert!(e.pto_base() > 201 * MS, "{e:?}");
        assert_eq!(e.at, t0 + 200 * MS);
        for i in 0..(MAX_PATHS as u32 + 100) {
            rtts.sample((None, IpAddr::V4(Ipv4Addr::from(i))), MS, t0);
            assert!(rtts.paths.len() <= MAX_PATHS);
        }
    }

    #[test]
    fn endpoints_sharing_a_cache_see_each_others_samples() {
        #[allow(clippy::disallowed_methods)]
        let t0 = Instant::now();
        let p = (None, IpAddr::V4(Ipv4Addr::LOCALHOST));
        let first = PathRttCache::default();
        let second = first.clone();
        first.lock().sample(p, 80 * MS, t0);
        let e = second.lock().paths[&p];
        assert_eq!((e.smoothed, e.var, e.at), (80 * MS, 40 * MS, t0));
        // An endpoint's own cache is its own.
        assert_eq!(PathRttCache::default().lock().paths.len(), 0);
    }
}
