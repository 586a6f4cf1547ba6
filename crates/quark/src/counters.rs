//! The per-packet CPU breakdown the thesis measured, from counters built into
//! quark: crypto and ACK handling (protocol core) and the send and receive system
//! calls (datagram I/O). Off by default; when off each measuring point costs a
//! relaxed atomic load.

/// Cumulative, process-wide counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Breakdown {
    /// Packet and header protection, both directions.
    pub crypto_ns: u64,
    /// ACK frame processing (loss detection, congestion control).
    pub ack_ns: u64,
    /// Time inside `sendmmsg`/`sendmsg`.
    pub send_ns: u64,
    /// Time inside `recvmmsg`/`recvmsg`.
    pub recv_ns: u64,
    /// QUIC packets sent and received.
    pub packets: u64,
    /// Send and receive system calls.
    pub syscalls: u64,
}

/// Turn every counter on or off.
pub fn set_enabled(on: bool) {
    quark_proto::cpu::set_enabled(on);
    quark_udp::stats::set_enabled(on);
}

/// The counters so far.
pub fn snapshot() -> Breakdown {
    let p = quark_proto::cpu::snapshot();
    let u = quark_udp::stats::snapshot();
    Breakdown {
        crypto_ns: p.crypto_ns,
        ack_ns: p.ack_ns,
        send_ns: u.send_nanos,
        recv_ns: u.recv_nanos,
        packets: p.packets,
        syscalls: u.send_syscalls + u.recv_syscalls,
    }
}

/// What the drivers of this process did (issue #33: is a side late?).
/// Counted while [`set_enabled`] is on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DriverCounters {
    /// Driver rounds (a read, timers, a transmit).
    pub rounds: u64,
    /// Reads that filled every buffer offered: the socket may hold more.
    pub full_reads: u64,
    /// Connections whose due timers fired.
    pub timers_fired: u64,
    /// Of those, fired more than [`LATE`] after their deadline.
    pub timers_late: u64,
    /// The latest a timer fired after its deadline, in ns.
    pub max_late_ns: u64,
    /// Due loss-detection timers held for unread datagrams (`defer`).
    pub timers_held: u64,
    /// Of `timers_fired`, those whose loss-detection timer was due (the
    /// rest: ACK delay, idle, pacing, keep-alive, trim, ...).
    pub loss_timers_fired: u64,
    /// Entries pushed on the drivers' deadline heaps.
    pub heap_pushes: u64,
    /// Times a driver went to sleep (each a wake-up later).
    pub parks: u64,
    /// Receives of at least `quark_proto::MIN_SHARED_RECEIVE` bytes whose
    /// buffer was lent to the connections (zero-copy receive).
    pub lent_receives: u64,
    /// Reads whose buffers were not lent: too many were held by unread data.
    pub unlent_reads: u64,
    /// The most receive buffers one driver had held by unread data at once.
    pub most_parked: u64,
    /// Error reports read from the sockets' error queues (ICMP unreachable
    /// or too big, local errors).
    pub error_reports: u64,
    /// Of those, the reports that ended a connection in its handshake.
    pub unreachable_closes: u64,
    /// Of those, the Packet Too Big reports a connection took as a hint for
    /// its path MTU search.
    pub too_big_hints: u64,
}

/// A timer fired this long after its deadline counts as late.
pub const LATE: std::time::Duration = std::time::Duration::from_millis(5);

pub(crate) mod driver {
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
    use std::time::Duration;

    pub(crate) static ROUNDS: AtomicU64 = AtomicU64::new(0);
    pub(crate) static FULL_READS: AtomicU64 = AtomicU64::new(0);
    pub(crate) static FIRED: AtomicU64 = AtomicU64::new(0);
    pub(crate) static LATE: AtomicU64 = AtomicU64::new(0);
    pub(crate) static MAX_LATE_NS: AtomicU64 = AtomicU64::new(0);
    pub(crate) static HELD: AtomicU64 = AtomicU64::new(0);
    pub(crate) static LOSS_FIRED: AtomicU64 = AtomicU64::new(0);
    pub(crate) static HEAP_PUSHES: AtomicU64 = AtomicU64::new(0);
    pub(crate) static PARKS: AtomicU64 = AtomicU64::new(0);
    pub(crate) static LENT: AtomicU64 = AtomicU64::new(0);
    pub(crate) static UNLENT: AtomicU64 = AtomicU64::new(0);
    pub(crate) static MOST_PARKED: AtomicU64 = AtomicU64::new(0);
    pub(crate) static REPORTS: AtomicU64 = AtomicU64::new(0);
    pub(crate) static UNREACHABLE: AtomicU64 = AtomicU64::new(0);
    pub(crate) static TOO_BIG: AtomicU64 = AtomicU64::new(0);

    #[inline]
    pub(crate) fn on() -> bool {
        quark_udp::stats::enabled()
    }

    #[inline]
    pub(crate) fn add(c: &AtomicU64, n: u64) {
        if on() {
            c.fetch_add(n, Relaxed);
        }
    }

    /// A timer fired `late` after its deadline.
    pub(crate) fn fired(late: Duration) {
        if on() {
            FIRED.fetch_add(1, Relaxed);
            if late > super::LATE {
                LATE.fetch_add(1, Relaxed);
                MAX_LATE_NS.fetch_max(late.as_nanos() as u64, Relaxed);
            }
        }
    }
}

/// The driver counters so far.
pub fn driver_snapshot() -> DriverCounters {
    use std::sync::atomic::Ordering::Relaxed;
    DriverCounters {
        rounds: driver::ROUNDS.load(Relaxed),
        full_reads: driver::FULL_READS.load(Relaxed),
        timers_fired: driver::FIRED.load(Relaxed),
        timers_late: driver::LATE.load(Relaxed),
        max_late_ns: driver::MAX_LATE_NS.load(Relaxed),
        timers_held: driver::HELD.load(Relaxed),
        loss_timers_fired: driver::LOSS_FIRED.load(Relaxed),
        heap_pushes: driver::HEAP_PUSHES.load(Relaxed),
        parks: driver::PARKS.load(Relaxed),
        lent_receives: driver::LENT.load(Relaxed),
        unlent_reads: driver::UNLENT.load(Relaxed),
        most_parked: driver::MOST_PARKED.load(Relaxed),
        error_reports: driver::REPORTS.load(Relaxed),
        unreachable_closes: driver::UNREACHABLE.load(Relaxed),
        too_big_hints: driver::TOO_BIG.load(Relaxed),
    }
}
