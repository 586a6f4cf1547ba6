//! A connection's memory by component (issues #30, #33: small idle
//! connections), and giving back what an idle connection does not need.
//!
//! Inline sizes come from `size_of`; heap parts from the capacities of the
//! buffers that hold them (B-trees and boxed keys estimated from their
//! layout). O(streams): for tests and diagnostics, not per packet.

use std::collections::VecDeque;
use std::fmt;
use std::mem::size_of;

use std::time::Instant;

use super::Connection;
use super::timers::Timer;
use crate::types::SpaceId;

/// Bytes a connection holds, by component. `inline` is the `Connection`
/// struct itself (the endpoint boxes it), the rest is heap it owns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryBreakdown {
    /// The `Connection` struct.
    pub inline: usize,
    /// rustls' session while it lives (an estimate; dropped after the handshake).
    pub tls: usize,
    /// CRYPTO send and receive buffers of the three packet spaces.
    pub crypto: usize,
    /// Stream map, reassembly and send buffers, kept rings, stream queues.
    pub streams: usize,
    /// Sent-packet records, lost-packet history, congestion controller.
    pub recovery: usize,
    /// 1-RTT packet and header-protection keys.
    pub keys: usize,
    /// Connection-ID tables, ours and the peer's.
    pub cids: usize,
    /// Packet-number ranges to acknowledge.
    pub acks: usize,
    /// Scratch vectors reused per batch (ACK processing, sealing, decryption).
    pub scratch: usize,
    /// Event, CID-event and PATH_RESPONSE queues.
    pub queues: usize,
    /// Unreliable datagrams queued.
    pub datagrams: usize,
    /// 0-RTT state.
    pub early: usize,
    /// qlog events waiting.
    pub qlog: usize,
    /// The random generator, while in use.
    pub rng: usize,
}

impl MemoryBreakdown {
    fn rows(&self) -> [(&'static str, usize); 14] {
        [
            ("inline", self.inline),
            ("tls", self.tls),
            ("crypto", self.crypto),
            ("streams", self.streams),
            ("recovery", self.recovery),
            ("keys", self.keys),
            ("cids", self.cids),
            ("acks", self.acks),
            ("scratch", self.scratch),
            ("queues", self.queues),
            ("datagrams", self.datagrams),
            ("early", self.early),
            ("qlog", self.qlog),
            ("rng", self.rng),
        ]
    }

    /// The sum.
    pub fn total(&self) -> usize {
        self.rows().iter().map(|(_, b)| b).sum()
    }
}

impl fmt::Display for MemoryBreakdown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (name, bytes) in self.rows() {
            writeln!(f, "  {name:<10} {bytes:>7}")?;
        }
        write!(f, "  {:<10} {:>7}", "total", self.total())
    }
}

fn vec_bytes<T>(v: &Vec<T>) -> usize {
    v.capacity() * size_of::<T>()
}

fn deque_bytes<T>(v: &VecDeque<T>) -> usize {
    v.capacity() * size_of::<T>()
}

/// rustls' session with its handshake buffers and transcript.
const TLS_ESTIMATE: usize = 8 * 1024;
/// Bytes in flight per byte of sent-packet records (a record with its frames
/// is about 100 bytes, a packet at least 1 200).
const IN_FLIGHT_PER_RECORD_BYTE: u64 = 12;

impl Connection {
    /// What this connection holds, by component (see [`MemoryBreakdown`]).
    pub fn memory_breakdown(&self) -> MemoryBreakdown {
        MemoryBreakdown {
            inline: size_of::<Self>(),
            tls: self.tls_memory(),
            crypto: self.crypto_memory(),
            streams: self.streams.heap_bytes(),
            recovery: self.recovery.heap_bytes(),
            keys: self.one_rtt.as_ref().map_or(0, |k| k.heap_bytes()),
            rng: self.rng.heap_bytes(),
            cids: self.local_cids.heap_bytes() + self.peer_cids.heap_bytes(),
            acks: self.spaces.iter().map(|s| s.ack.ranges.heap_bytes()).sum(),
            scratch: vec_bytes(&self.seal_jobs) + vec_bytes(&self.crypto_scratch),
            queues: deque_bytes(&self.events)
                + deque_bytes(&self.cid_events)
                + deque_bytes(&self.path_responses),
            datagrams: self.datagrams.memory(),
            early: self.early_memory(),
            qlog: self.qlog.as_ref().map_or(0, |q| q.memory()),
        }
    }

    /// The estimate memory budgets charge (see [`Connection::memory`]):
    /// what a peer can make grow, cheap enough to ask often.
    pub(super) fn budget_memory(&self) -> usize {
        let sent = (self.recovery.bytes_in_flight() / IN_FLIGHT_PER_RECORD_BYTE) as usize;
        size_of::<Self>()
            + self.tls_memory()
            + self.crypto_memory()
            + self.streams.memory()
            + self.datagrams.memory()
            + sent
            + self.early_memory()
            + self.qlog.as_ref().map_or(0, |q| q.memory())
    }

    /// Quiet for a while (`TransportConfig::idle_trim`): give back the
    /// storage only a busy connection needs. Everything freed here is
    /// allocated again on first use; what is in use is kept. While packets
    /// are still in flight (a PMTU probe), it tries again later.
    pub(super) fn trim_idle(&mut self, now: Instant) {
        if self.is_closed() {
            return;
        }
        self.streams.shrink_idle();
        if !self.recovery.shrink_idle() {
            self.timers.set(Timer::Trim, now + self.config.idle_trim);
        }
        self.release_scratch();
        self.crypto_scratch = Vec::new();
        self.datagrams.shrink_idle();
        self.rng.park();
        self.spaces.release_early();
        // A client's TLS session: its tickets have had a quiet second to
        // arrive (they are stored in the client config, not the session).
        if self.side.is_client() && self.handshake_confirmed {
            self.tls.shed_after_handshake(self.side);
        }
        // Tickets sent and acknowledged: only the offsets matter now.
        self.spaces[SpaceId::Data.index()].park_crypto();
        if let Some(keys) = self.one_rtt.as_mut() {
            keys.park();
        }
        if self.events.is_empty() {
            self.events = VecDeque::new();
        }
        if self.cid_events.is_empty() {
            self.cid_events = VecDeque::new();
        }
        if self.path_responses.is_empty() {
            self.path_responses = VecDeque::new();
        }
    }

    fn tls_memory(&self) -> usize {
        if self.tls.is_shed() { 0 } else { TLS_ESTIMATE }
    }

    fn crypto_memory(&self) -> usize {
        self.spaces.iter().map(|s| s.crypto_memory()).sum()
    }
}

#[cfg(test)]
mod tests {
    use std::mem::size_of;

    use super::super::*;

    /// Every established connection carries these inline, idle or not: upper
    /// bounds so that growth shows up here (issue #30). Measured 2026-11-29
    /// (x86_64): Connection 6 576 before boxing the rarely used parts, 5 296
    /// after, 4 560 once the Initial and Handshake spaces (here and in
    /// recovery) went into boxes dropped after the handshake, 4 400 with the
    /// datagram queues and the closing states' details boxed, 4 416 with
    /// `ConnectionStats::probes_out` (issue #33) and with the 1-RTT keys'
    /// reserve (they sleep when idle, 1.6 KiB less on the heap), 4 432 with
    /// the pacer's memory of a late wake-up (recovery/pacer.rs), 4 464 with
    /// the path's shared RTT (`connection/path_rtt.rs`: the sample to
    /// report, the PTO floor offered, a counter), 4 480 with the pacer's
    /// burst size kept per rate (recovery/pacer.rs: a 128-bit division less
    /// per packet sent); Recovery 816 -> 848 with both. 4 288 with the
    /// scratch vectors in the thread's pool and the rare counters boxed
    /// (issue #33: serving memory); still 4 288 with the spin bit and the
    /// greased QUIC bit's six bytes, the connection ID length kept in a byte,
    /// and the stall pings' count (in `Streams`' slack).
    #[test]
    fn struct_sizes_stay_bounded() {
        let sizes = [
            ("Connection", size_of::<Connection>(), 4_288),
            ("PacketSpace", size_of::<PacketSpace>(), 248),
            ("Recovery", size_of::<Recovery<SentFrames>>(), 848),
            ("Streams", size_of::<Streams>(), 820),
            ("TlsSession", size_of::<TlsSession>(), 160),
            ("Migration", size_of::<migration::Migration>(), 128),
            ("OneRttKeys", size_of::<OneRttKeys>(), 360),
            ("LazyRng", size_of::<lazy_rng::LazyRng>(), 40),
            ("TransportParameters", size_of::<TransportParameters>(), 340),
        ];
        for (name, size, bound) in sizes {
            eprintln!("{name}: {size} bytes (bound {bound})");
            assert!(size <= bound, "{name} is {size} bytes, over {bound}");
        }
    }
}
