//! Datagram packetization layer PMTU discovery (DPLPMTUD, RFC 8899 as applied to
//! QUIC by RFC 9000 §14.3): probe larger datagrams with PING + PADDING packets
//! and use the largest size the path acknowledged. On loopback and jumbo-frame
//! paths this lets quark send datagrams of tens of kilobytes, cutting the
//! per-packet costs (system calls, crypto calls, ACKs) by an order of magnitude.

use std::time::{Duration, Instant};

/// The size every QUIC path supports (RFC 9000 §14: BASE_PLPMTU).
pub(crate) const BASE_MTU: u16 = 1200;
/// A common Ethernet-sized payload worth trying early (1500 - IPv6 - UDP headers).
const ETHERNET_MTU: u16 = 1452;
/// Attempts per probe size before it counts as too big (RFC 8899 MAX_PROBES).
const MAX_PROBES: u8 = 3;
/// Stop searching when the bounds are this close.
const SEARCH_GRANULARITY: u16 = 32;
/// Bytes a connection sends before it starts PMTU discovery: short exchanges
/// cannot profit from bigger datagrams.
pub(crate) const MTU_PROBE_AFTER: u64 = 64 * 1024;
/// Search again after this long, in case the path got better (RFC 8899 §5.1.1).
const RAISE_TIMER: Duration = Duration::from_secs(600);

/// Where the search stands.
#[derive(Debug)]
pub(crate) struct MtuDiscovery {
    /// The validated size in use.
    current: u16,
    /// Sizes above this failed (or exceed the limits).
    ceiling: u16,
    /// The probe in flight: its size, packet number, and when it expires.
    probe: Option<Probe>,
    /// Failed attempts at the current candidate.
    attempts: u8,
    /// The largest probe declared lost since one was last acknowledged: a
    /// too-big report that comes after the loss (a router's ICMP can trail
    /// the acknowledgements of later packets) still applies to it. Zero for
    /// none (an `Option` made every connection 16 bytes larger).
    failed: u16,
    /// A packet sent after the probe out was acknowledged: the path carries
    /// smaller packets, so the probe's loss says something about its size.
    path_alive: bool,
    /// An ordinary packet was sent after the probe: the peer had something
    /// to acknowledge, so hearing nothing means the path lost everything.
    sent_after: bool,
    /// The connection's probe timeout fired and nothing was acknowledged
    /// since: the path is not answering at all.
    stalled: bool,
    /// Which candidate comes next.
    phase: Phase,
    /// When the next probe may go (search restarts after RAISE_TIMER).
    not_before: Option<Instant>,
    /// Disabled (e.g. the peer limits datagrams to the base size).
    enabled: bool,
    /// What the endpoint's cache knows of this path from other connections,
    /// used instead of searching if the search has not begun.
    hint: Option<PathMtu>,
    /// What this connection learnt since the endpoint last asked.
    news: Option<PathMtu>,
    /// Bytes sent as of the endpoint's last count of the path's traffic.
    reported: Option<u64>,
    /// The path as a whole carried enough to be worth a search (the endpoint's
    /// count over all its connections): probe below this connection's own
    /// threshold.
    granted: bool,
    /// The size in use came from the endpoint and this connection is not
    /// searching: a larger size learnt later on the path is taken too (the
    /// searching connection reports each step, 1452 before 8896).
    adopted: bool,
    /// Fell back to the base size after a black hole, and nothing was
    /// acknowledged since: not news for the endpoint until the path is seen
    /// to carry small packets. A peer that went away also looks like a black
    /// hole, and told to every later connection on the path it kept them all
    /// at the base size for the endpoint's life.
    black_hole_unconfirmed: bool,
    /// A size from the endpoint's cache was adopted at some point (for
    /// diagnosis: `Connection::mtu_from_cache`).
    from_cache: bool,
}

/// What connections on one path tell each other through the endpoint (see
/// `mtu_cache`). Without it, 144 connections that reached the probing
/// threshold together each sent a 64 KB probe, stalling a request/response run
/// for ~9 ms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PathMtu {
    /// A probe is out until then: wait for its answer rather than probe too.
    Probing(Instant),
    /// This size was validated (the base size after a black hole: forget it).
    Known(u16),
    /// The connection that was probing closed with its probe unanswered:
    /// nobody searches the path any more.
    Abandoned,
}

/// What an offer from the endpoint did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Offer {
    /// A validated size was adopted: the search is over.
    Adopted,
    /// Another connection is probing this path: don't probe now.
    Wait,
}

/// What a too-big report did to the search (`MtuDiscovery::on_too_big`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TooBig {
    /// Not about a size we sent, or discovery is off.
    Ignored,
    /// The probe out, or one lost since the last acknowledged, was too
    /// big: the reported size is probed next.
    ProbeFailed,
    /// The size in use was too big: back to the base size, then the
    /// reported size is probed.
    Fell,
}

/// The search order: optimistic first (loopback, jumbo frames), then a common
/// Ethernet size, then bisection between what worked and what failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Ceiling,
    /// The ceiling, which a too-big report set: probed next, but the search
    /// is under way (no offer from the endpoint replaces it).
    Reported,
    Ethernet,
    Bisect,
}

#[derive(Clone, Copy, Debug)]
struct Probe {
    size: u16,
    pn: u64,
    expires: Instant,
}

impl MtuDiscovery {
    pub(crate) fn new(initial: u16, local_max: u16, enabled: bool) -> Self {
        MtuDiscovery {
            current: initial,
            ceiling: local_max.max(initial),
            probe: None,
            attempts: 0,
            failed: 0,
            path_alive: false,
            sent_after: false,
            stalled: false,
            phase: Phase::Ceiling,
            not_before: None,
            enabled,
            hint: None,
            news: None,
            reported: None,
            granted: false,
            adopted: false,
            black_hole_unconfirmed: false,
            from_cache: false,
        }
    }

    /// Bytes sent since the last call, given the connection's total so far
    /// (nothing on the first call: the endpoint counts from then on).
    pub(crate) fn unreported(&mut self, bytes_out: u64) -> u64 {
        let since = bytes_out.saturating_sub(self.reported.unwrap_or(bytes_out));
        self.reported = Some(bytes_out);
        since
    }

    /// Let this connection search for the whole path.
    pub(crate) fn grant(&mut self) {
        self.granted = true;
    }

    /// Whether the endpoint asked this connection to search for the path.
    pub(crate) fn granted(&self) -> bool {
        self.granted
    }

    /// Whether the search has not begun (so an offer from the endpoint can
    /// replace it).
    pub(crate) fn fresh(&self) -> bool {
        self.enabled
            && self.phase == Phase::Ceiling
            && self.attempts == 0
            && self.probe.is_none()
            && self.not_before.is_none()
    }

    /// Whether the endpoint's offers can still change anything here.
    /// Not after a black hole the path has not confirmed: the size on offer
    /// may be the one that just vanished.
    pub(crate) fn open_to_offers(&self) -> bool {
        !self.black_hole_unconfirmed
            && (self.fresh() || (self.enabled && self.adopted && self.probe.is_none()))
    }

    /// Offer what other connections learnt about the path.
    pub(crate) fn offer(&mut self, hint: PathMtu) {
        self.hint = Some(hint);
    }

    /// What this connection learnt since the last call (for the endpoint's cache).
    pub(crate) fn take_news(&mut self) -> Option<PathMtu> {
        self.news.take()
    }

    /// Use the endpoint's offer instead of searching, if the search has not
    /// begun. A wrong size is caught by black-hole detection, which restarts
    /// the search.
    pub(crate) fn use_offer(&mut self, now: Instant) -> Option<Offer> {
        // Called for every batch: no offer is the common case, answered first.
        self.hint?;
        if !self.open_to_offers() {
            self.hint = None;
            return None;
        }
        match self.hint? {
            PathMtu::Probing(until) if now < until && self.fresh() => Some(Offer::Wait),
            PathMtu::Known(size) if size.min(self.ceiling) > self.current => {
                self.hint = None;
                self.current = size.min(self.ceiling);
                self.phase = Phase::Bisect;
                self.not_before = Some(now + RAISE_TIMER);
                self.adopted = true;
                self.from_cache = true;
                Some(Offer::Adopted)
            }
            _ => {
                self.hint = None;
                None
            }
        }
    }

    /// Whether a size from the endpoint's cache was ever adopted.
    pub(crate) fn adopted_once(&self) -> bool {
        self.from_cache
    }

    /// The datagram size to use now.
    pub(crate) fn current(&self) -> u16 {
        self.current
    }

    /// The peer's max_udp_payload_size bounds the search.
    pub(crate) fn set_peer_max(&mut self, peer_max: u64) {
        let peer_max = u16::try_from(peer_max).unwrap_or(u16::MAX);
        self.ceiling = self.ceiling.min(peer_max).max(self.current);
    }

    /// Whether the search has a size left to try.
    pub(crate) fn searching(&self) -> bool {
        self.next_size().is_some()
    }

    /// The next size to try, if the search is not finished.
    fn next_size(&self) -> Option<u16> {
        if !self.enabled || self.ceiling < self.current.saturating_add(SEARCH_GRANULARITY) {
            return None;
        }
        match self.phase {
            Phase::Ceiling | Phase::Reported => Some(self.ceiling),
            Phase::Ethernet if self.current < ETHERNET_MTU && ETHERNET_MTU < self.ceiling => {
                Some(ETHERNET_MTU)
            }
            _ => Some(self.current + (self.ceiling - self.current) / 2),
        }
    }

    /// If a probe should be sent now, its size. The caller sends it and calls
    /// [`MtuDiscovery::on_probe_sent`].
    pub(crate) fn probe_due(&mut self, now: Instant) -> Option<u16> {
        if self.probe.is_some() || self.stalled || self.not_before.is_some_and(|t| now < t) {
            return None;
        }
        let size = self.next_size();
        if size.is_none() && self.enabled && self.not_before.is_none() {
            // Search done: look again much later.
            self.not_before = Some(now + RAISE_TIMER);
        }
        size
    }

    pub(crate) fn on_probe_sent(&mut self, size: u16, pn: u64, now: Instant, timeout: Duration) {
        self.probe = Some(Probe {
            size,
            pn,
            expires: now + timeout,
        });
        self.news = Some(PathMtu::Probing(now + timeout));
        self.adopted = false;
        self.path_alive = false;
        self.sent_after = false;
    }

    /// The connection is closing: a probe still out will never be answered,
    /// so its claim on the path is withdrawn (others waited for it until its
    /// timeout, in base-size datagrams).
    pub(crate) fn abandon(&mut self) {
        if self.probe.take().is_some() {
            self.news = Some(PathMtu::Abandoned);
        }
    }

    /// Packet `pn` (not a probe) was acknowledged.
    pub(crate) fn on_acked(&mut self, pn: u64) {
        self.stalled = false;
        if self.black_hole_unconfirmed {
            // Small packets get through where large ones did not: now it is
            // the path's news (RFC 8899 §4.3).
            self.black_hole_unconfirmed = false;
            self.news = Some(PathMtu::Known(BASE_MTU));
        }
        if self.probe.is_some_and(|p| pn > p.pn) {
            self.path_alive = true;
        }
    }

    /// The connection's probe timeout fired: the path may be down. No probe
    /// goes out, and the loss of one out says nothing, until something is
    /// acknowledged again.
    pub(crate) fn on_pto(&mut self) {
        self.stalled = true;
    }

    /// Packet `pn` (not a probe) was sent.
    pub(crate) fn on_sent(&mut self, pn: u64) {
        if self.probe.is_some_and(|p| pn > p.pn) {
            self.sent_after = true;
        }
    }

    /// The probe timer, if a probe is out.
    pub(crate) fn timer(&self) -> Option<Instant> {
        self.probe.map(|p| p.expires)
    }

    /// A probe packet was acknowledged: the path carries its size.
    pub(crate) fn on_probe_acked(&mut self, pn: u64) -> bool {
        let Some(probe) = self.probe.filter(|p| p.pn == pn) else {
            return false;
        };
        self.probe = None;
        self.attempts = 0;
        self.failed = 0;
        self.advance_phase();
        if probe.size > self.current {
            self.current = probe.size;
            self.news = Some(PathMtu::Known(self.current));
            return true;
        }
        false
    }

    /// A probe was declared lost or timed out.
    pub(crate) fn on_probe_failed(&mut self, pn: u64) {
        let Some(probe) = self.probe.filter(|p| p.pn == pn) else {
            return;
        };
        self.probe = None;
        self.failed = self.failed.max(probe.size);
        if self.stalled || (self.sent_after && !self.path_alive) {
            // Nothing sent after it was acknowledged either: the path lost
            // everything (an outage), which says nothing of the size. Try
            // again later; counting it made a 2 s outage drive the ceiling
            // down to the base size for the rest of the connection.
            return;
        }
        self.attempts += 1;
        //= https://www.rfc-editor.org/rfc/rfc8899#section-5.1.2
        //# MAX_PROBES: The MAX_PROBES is the maximum value of the PROBE_COUNT
        //# counter ... the probed size is then considered not supported.
        if self.attempts >= MAX_PROBES {
            self.attempts = 0;
            self.ceiling = probe.size.saturating_sub(1).max(self.current);
            self.advance_phase();
        }
    }

    /// An ICMP Packet Too Big (or IPv4 Fragmentation Needed) said the path
    /// carries datagrams of at most `size` bytes (UDP payload), in answer to
    /// one of ours (RFC 8899 §4.6). Returns what it did.
    ///
    /// The report only guides the search, which still confirms every size
    /// with an acknowledged probe: one the probe out (or one lost since the
    /// last acknowledged) exceeds fails it at once and makes `size` the next
    /// probe; one below the size in use drops to the base size and probes
    /// `size` next, as a black hole would after several PTOs. Reports below the base size (RFC 9000 §14.2.1) or above
    /// anything we sent are ignored.
    pub(crate) fn on_too_big(&mut self, size: u16) -> TooBig {
        if !self.enabled || size < BASE_MTU {
            return TooBig::Ignored;
        }
        if size >= self.current {
            //= https://www.rfc-editor.org/rfc/rfc8899#section-4.6.2
            //# If PLPMTU < PL_PTB_SIZE < PROBED_SIZE, the PL can use the
            //# PL_PTB_SIZE as the next search point
            let probed = self.probe.map_or(0, |p| p.size).max(self.failed);
            if size >= probed {
                return TooBig::Ignored;
            }
            self.probe = None;
            self.failed = 0;
            self.attempts = 0;
            self.ceiling = size;
            self.phase = Phase::Reported;
            self.not_before = None;
            return TooBig::ProbeFailed;
        }
        // The size in use no longer fits: what is in flight above `size` is
        // lost, and loss recovery resends it in smaller packets.
        self.on_black_hole();
        self.ceiling = size.max(self.current);
        self.phase = Phase::Reported;
        TooBig::Fell
    }

    fn advance_phase(&mut self) {
        self.phase = match self.phase {
            Phase::Ceiling => Phase::Ethernet,
            Phase::Reported | Phase::Ethernet | Phase::Bisect => Phase::Bisect,
        };
    }

    /// Check the probe timer.
    pub(crate) fn on_timeout(&mut self, now: Instant) {
        if let Some(p) = self.probe {
            if p.expires <= now {
                self.on_probe_failed(p.pn);
            }
        }
    }

    /// Packets of the current size seem to vanish (repeated PTOs): fall back to
    /// the base size and search again (RFC 8899 §4.3 black-hole detection).
    pub(crate) fn on_black_hole(&mut self) -> bool {
        if self.current <= BASE_MTU {
            return false;
        }
        // The ceiling stays: if the size really stopped working, probes of it
        // fail on a path that carries small packets and the search comes
        // down; if the path was only out for a while, the old size comes back
        // with the first probe after it.
        self.current = BASE_MTU;
        self.news = None;
        self.black_hole_unconfirmed = true;
        self.hint = None;
        self.probe = None;
        self.failed = 0;
        self.attempts = 0;
        self.phase = Phase::Ceiling;
        self.not_before = None;
        self.adopted = false;
        true
    }
}

#[cfg(test)]
#[path = "mtu_tests.rs"]
mod tests;
