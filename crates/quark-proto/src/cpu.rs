//! Where the CPU goes: cheap, always-compiled counters for the per-packet
//! breakdown the thesis measured (crypto, ACK handling; the system calls are
//! counted by quark-udp). Off by default: then each measuring point costs one
//! relaxed atomic load and a branch. When on, each adds two clock reads.
//!
//! Reading the clock here is measurement only: nothing the protocol does
//! depends on these numbers, so the core stays clock-free in behaviour.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

static ENABLED: AtomicBool = AtomicBool::new(false);
static CRYPTO_NS: AtomicU64 = AtomicU64::new(0);
static ACK_NS: AtomicU64 = AtomicU64::new(0);
static PACKETS: AtomicU64 = AtomicU64::new(0);

/// What the protocol core counted so far (cumulative, process-wide).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuCounters {
    /// Packet protection and header protection, both directions.
    pub crypto_ns: u64,
    /// Processing ACK frames (loss detection and congestion control included).
    pub ack_ns: u64,
    /// QUIC packets sent and received.
    pub packets: u64,
}

/// Turn the counters on or off (process-wide).
pub fn set_enabled(on: bool) {
    ENABLED.store(on, Ordering::Relaxed);
}

/// Whether the counters run.
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// The counters so far.
pub fn snapshot() -> CpuCounters {
    CpuCounters {
        crypto_ns: CRYPTO_NS.load(Ordering::Relaxed),
        ack_ns: ACK_NS.load(Ordering::Relaxed),
        packets: PACKETS.load(Ordering::Relaxed),
    }
}

/// A category of work.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Work {
    Crypto,
    Ack,
}

/// Time `f` under `work` when counting is on.
#[inline]
pub(crate) fn measure<R>(work: Work, f: impl FnOnce() -> R) -> R {
    if !ENABLED.load(Ordering::Relaxed) {
        return f();
    }
    #[allow(clippy::disallowed_methods)] // measurement only, see the module docs
    let start = Instant::now();
    let r = f();
    let ns = start.elapsed().as_nanos() as u64;
    let counter = match work {
        Work::Crypto => &CRYPTO_NS,
        Work::Ack => &ACK_NS,
    };
    counter.fetch_add(ns, Ordering::Relaxed);
    r
}

/// Count one packet sent or received.
#[inline]
pub(crate) fn count_packet() {
    if ENABLED.load(Ordering::Relaxed) {
        PACKETS.fetch_add(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_only_when_enabled() {
        // Other tests in this process may run protocol code concurrently, so
        // check only that our own work is added.
        set_enabled(false);
        let before = snapshot();
        measure(Work::Crypto, || std::hint::black_box(1 + 1));
        count_packet();
        let after = snapshot();
        assert_eq!(after.packets, before.packets);
        set_enabled(true);
        let before = snapshot();
        measure(Work::Ack, || {
            std::thread::sleep(std::time::Duration::from_millis(2))
        });
        count_packet();
        let after = snapshot();
        set_enabled(false);
        assert!(after.ack_ns >= before.ack_ns + 2_000_000);
        assert!(after.packets > before.packets);
    }
}
