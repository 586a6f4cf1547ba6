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
