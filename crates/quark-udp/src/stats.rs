//! Global counters of datagram I/O, for the lab's CPU breakdown (seed 000: how much
//! of the transport's time goes to `sendmsg` and `recvmsg`).
//!
//! Off by default. When off, each system call pays one relaxed atomic load. When on,
//! it pays four relaxed `fetch_add`s on a cache line per direction, and one batch
//! of calls in eight, chosen at random, reads the monotonic clock twice; its time
//! counts eight times (calls, datagrams and bytes are all counted). The lab keeps
//! the counters on: timing every call was a cost the stacks compared with quark
//! don't pay. Every socket is non-blocking, so the wall time inside
//! a call is its CPU time unless the thread is preempted there: rare with the
//! peer on another CPU, common with both on one (a send wakes the peer, which
//! may run inside the call), so the lab reports no breakdown then.
//!
//! Why not the thread CPU clock (it was used first): `CLOCK_THREAD_CPUTIME_ID` is
//! a real system call, not a vDSO read. In this VM it cost about 1 µs per read, and
//! with four reads per request it took 17 % off quark's request rate for 2 KiB
//! messages (16.2k vs 19.3k req/s, `quark bench -s persistent --sizes 2KiB`). The
//! monotonic clock is read in user space (TSC) in tens of nanoseconds.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

/// One batch in `SAMPLE_EVERY` is timed, and its time counts that many times.
const SAMPLE_EVERY: u64 = 8;

thread_local! {
    /// xorshift32 state: a random choice of the batches timed, since sends and
    /// receives alternate in a fixed cycle that a counter would alias with.
    static DICE: Cell<u32> = const { Cell::new(0x9e37_79b9) };
}

/// Whether to time this batch.
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
static SEND: Direction = Direction::new();
static RECV: Direction = Direction::new();

/// Counters of one direction, on their own cache line so that a sending and a
/// receiving thread don't contend.
#[repr(align(64))]
struct Direction {
    syscalls: AtomicU64,
    datagrams: AtomicU64,
    bytes: AtomicU64,
    nanos: AtomicU64,
}

impl Direction {
    const fn new() -> Self {
        Self {
            syscalls: AtomicU64::new(0),
            datagrams: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            nanos: AtomicU64::new(0),
        }
    }

    fn add(&self, nanos: u64, syscalls: usize, datagrams: usize, bytes: usize) {
        self.syscalls.fetch_add(syscalls as u64, Relaxed);
        self.datagrams.fetch_add(datagrams as u64, Relaxed);
        self.bytes.fetch_add(bytes as u64, Relaxed);
        self.nanos.fetch_add(nanos, Relaxed);
    }

    fn reset(&self) {
        self.syscalls.store(0, Relaxed);
        self.datagrams.store(0, Relaxed);
        self.bytes.store(0, Relaxed);
        self.nanos.store(0, Relaxed);
    }
}

/// A copy of the counters at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Send system calls made (`sendmmsg`, or each `sendmsg` of the fallback),
    /// including those that failed.
    pub send_syscalls: u64,
    /// Datagrams sent (a GSO message counts each segment).
    pub send_datagrams: u64,
    /// UDP payload bytes sent.
    pub send_bytes: u64,
    /// Thread CPU nanoseconds spent in send system calls.
    pub send_nanos: u64,
    /// Receive system calls made, including those that found nothing.
    pub recv_syscalls: u64,
    /// Datagrams received (a GRO buffer counts each segment).
    pub recv_datagrams: u64,
    /// UDP payload bytes received.
    pub recv_bytes: u64,
    /// Thread CPU nanoseconds spent in receive system calls.
    pub recv_nanos: u64,
}

impl Stats {
    /// The counts between `earlier` and `self` (saturating, in case of a
    /// [`reset`] in between).
    pub fn since(&self, earlier: &Stats) -> Stats {
        Stats {
            send_syscalls: self.send_syscalls.saturating_sub(earlier.send_syscalls),
            send_datagrams: self.send_datagrams.saturating_sub(earlier.send_datagrams),
            send_bytes: self.send_bytes.saturating_sub(earlier.send_bytes),
            send_nanos: self.send_nanos.saturating_sub(earlier.send_nanos),
            recv_syscalls: self.recv_syscalls.saturating_sub(earlier.recv_syscalls),
            recv_datagrams: self.recv_datagrams.saturating_sub(earlier.recv_datagrams),
            recv_bytes: self.recv_bytes.saturating_sub(earlier.recv_bytes),
            recv_nanos: self.recv_nanos.saturating_sub(earlier.recv_nanos),
        }
    }
}

/// Turns counting on or off for the whole process.
pub fn set_enabled(enabled: bool) {
    ENABLED.store(enabled, Relaxed);
}

/// Whether counting is on.
pub fn enabled() -> bool {
    ENABLED.load(Relaxed)
}

/// Reads all counters (each one atomically; not a consistent cut while I/O runs).
pub fn snapshot() -> Stats {
    Stats {
        send_syscalls: SEND.syscalls.load(Relaxed),
        send_datagrams: SEND.datagrams.load(Relaxed),
        send_bytes: SEND.bytes.load(Relaxed),
        send_nanos: SEND.nanos.load(Relaxed),
        recv_syscalls: RECV.syscalls.load(Relaxed),
        recv_datagrams: RECV.datagrams.load(Relaxed),
        recv_bytes: RECV.bytes.load(Relaxed),
        recv_nanos: RECV.nanos.load(Relaxed),
    }
}

/// Sets all counters to zero.
pub fn reset() {
    SEND.reset();
    RECV.reset();
}

/// Times one batch of system calls when counting is on: `None` when off,
/// `Some(None)` when on but this batch is not timed.
pub(crate) struct Timer(Option<Option<std::time::Instant>>);

impl Timer {
    /// Starts timing if counting is on: the only cost when it is off.
    #[inline]
    pub(crate) fn start() -> Self {
        Self(enabled().then(|| sampled().then(std::time::Instant::now)))
    }

    /// Stops the clock, right after the system calls.
    #[inline]
    pub(crate) fn stop(self) -> Elapsed {
        Elapsed(
            self.0
                .map(|start| start.map_or(0, |s| s.elapsed().as_nanos() as u64 * SAMPLE_EVERY)),
        )
    }
}

/// The time a batch of system calls took, when counting is on.
pub(crate) struct Elapsed(Option<u64>);

impl Elapsed {
    /// Whether this records anything (so callers skip summing what it won't use).
    #[inline]
    pub(crate) fn counting(&self) -> bool {
        self.0.is_some()
    }

    /// Records send system calls and what they sent.
    #[inline]
    pub(crate) fn sent(self, syscalls: usize, datagrams: usize, bytes: usize) {
        if let Some(nanos) = self.0 {
            SEND.add(nanos, syscalls, datagrams, bytes);
        }
    }

    /// Records receive system calls and what they received.
    #[inline]
    pub(crate) fn received(self, syscalls: usize, datagrams: usize, bytes: usize) {
        if let Some(nanos) = self.0 {
            RECV.add(nanos, syscalls, datagrams, bytes);
        }
    }
}
