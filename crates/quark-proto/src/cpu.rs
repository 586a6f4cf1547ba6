//! Where the CPU goes: cheap, always-compiled counters for the per-packet
//! breakdown the thesis measured (crypto, ACK handling; the system calls are
//! counted by quark-udp). Off by default: then each measuring point costs one
//! relaxed atomic load and a branch. When on, one call in eight, chosen at
//! random, is timed (two clock reads) and counts eight times: the lab keeps the
//! counters on, and timing every call cost quark ≈ 10 clock reads per request
//! and side that the stacks it is compared with do not pay.
//!
//! Reading the clock here is measurement only: nothing the protocol does
//! depends on these numbers, so the core stays clock-free in behaviour.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

/// One call in `SAMPLE_EVERY` is timed, and counts that many times.
const SAMPLE_EVERY: u64 = 8;

thread_local! {
    /// xorshift32 state: random, not periodic, choice of the calls timed (the
    /// measuring points run in a fixed cycle per packet, which a counter would
    /// alias with).
    static DICE: Cell<u32> = const { Cell::new(0x9e37_79b9) };
}

/// Whether to time this call.
#[inline]
fn sampled() -> bool {
    DICE.with(|d| {
        let mut x = d.get();
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        d.set(x);
        u64::from(x) % SAMPLE_EVERY == 0
    })
}

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
    if !ENABLED.load(Ordering::Relaxed) || !sampled() {
        return f();
    }
    #[allow(clippy::disallowed_methods)] // measurement only, see the module docs
    let start = Instant::now();
    let r = f();
    let ns = start.elapsed().as_nanos() as u64 * SAMPLE_EVERY;
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
        #[allow(clippy::disallowed_methods)] // the test's own clock
        let start = Instant::now();
        // 64 calls of at least 200 µs: about eight are timed, each counting eight.
        for _ in 0..64 {
            measure(Work::Ack, || {
                std::thread::sleep(std::time::Duration::from_micros(200))
            });
        }
        let wall = start.elapsed().as_nanos() as u64;
        count_packet();
        let after = snapshot();
        set_enabled(false);
        let ns = after.ack_ns - before.ack_ns;
        // No upper bound in absolute time: on a loaded machine a 200 µs sleep
        // takes far longer (a fixed 60 ms bound failed under CI load). What
        // is counted is at most eight times the time spent, plus what other
        // tests' threads add meanwhile (at most as much again per thread).
        assert!(
            ns >= 4_000_000 && ns <= 4 * SAMPLE_EVERY * wall,
            "{ns} ns for 64 × 200 µs in {wall} ns"
        );
        assert!(after.packets > before.packets);
    }
}
