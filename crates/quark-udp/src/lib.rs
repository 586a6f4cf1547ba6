//! quark's datagram I/O for Linux: batched, feature-detecting UDP.
//!
//! QUIC spends most of its CPU in `sendmsg`/`recvmsg` (seeds 000 and 001), so this
//! crate moves many datagrams per system call:
//!
//! - **Send**: [`UdpSocket::try_send`] hands a whole slice of [`Transmit`]s to one
//!   `sendmmsg(2)` (up to [`BATCH_SIZE`] messages per call, looping for more). A
//!   transmit with a `segment_size` is a GSO "super-buffer": the kernel cuts it into
//!   equal datagrams (`UDP_SEGMENT`), so one message can carry up to
//!   [`MAX_GSO_SEGMENTS`] datagrams.
//! - **Receive**: [`UdpSocket::try_recv`] fills up to [`BATCH_SIZE`] buffers with one
//!   `recvmmsg(2)`. With GRO (`UDP_GRO`) the kernel may coalesce several datagrams of one
//!   flow into one buffer; [`RecvMeta::stride`] is then the datagram size.
//! - Per-message metadata travels in control messages: ECN bits (`IP_TOS` /
//!   `IPV6_TCLASS`), the local address (`IP_PKTINFO` / `IPV6_PKTINFO`) and the GSO/GRO
//!   segment size. Control buffers live on the stack: no heap allocation per call.
//!
//! # Fallbacks
//!
//! Every feature is detected at run time and degrades silently (a `debug` log line):
//!
//! - A socket option that the kernel refuses turns its feature off (no ECN marks read,
//!   no `dst_ip`, no GRO, ...). Only failing to create the socket is an error.
//! - GSO is probed with `getsockopt(UDP_SEGMENT)`. If a GSO send later fails with `EIO`
//!   (the device can't checksum-offload) or `EINVAL` (the route can't segment) and the same
//!   transmit then goes out as separate datagrams, GSO is switched off for the socket
//!   for good (logged once) and the batch is sent without it. The caller never sees
//!   that error. Without GSO, segmented transmits are sent as one datagram per segment.
//! - If `sendmmsg`/`recvmmsg` are missing (`ENOSYS`), a `sendmsg`/`recvmsg` loop is used.
//!
//! # Kernel features used
//!
//! | feature | since | used for |
//! |---|---|---|
//! | `sendmmsg(2)` / `recvmmsg(2)` | 3.0 / 2.6.33 | many datagrams per system call |
//! | `UDP_SEGMENT` (GSO) | 4.18 | one send of up to 64 equal datagrams |
//! | `UDP_GRO` | 5.0 | coalesced receive; segment size in a control message |
//! | `IP_RECVTOS` / `IPV6_RECVTCLASS`, `IP_TOS` / `IPV6_TCLASS` | 2.6 | ECN (RFC 9000 §13.4) |
//! | `IP_PKTINFO` / `IPV6_RECVPKTINFO`, `IPV6_PKTINFO` | 2.6 | local address per datagram; source address choice |
//! | `IP_MTU_DISCOVER` / `IPV6_MTU_DISCOVER` = `*_PMTUDISC_PROBE` | 2.6.22 | don't fragment, ignore the route's PMTU (DPLPMTUD, RFC 9000 §14.3) |
//! | `IP_RECVERR` / `IPV6_RECVERR`, `SO_SELECT_ERR_QUEUE` | 2.2 / 3.10 | when turned on ([`UdpSocket::set_error_reports`]): ICMP errors about datagrams sent ([`UdpSocket::try_recv_errors`]); a report wakes the reader |
//! | `SO_RCVBUFFORCE` / `SO_SNDBUFFORCE` | 2.6.14 | 32 MiB receive and 8 MiB send buffers beyond `rmem_max` (needs `CAP_NET_ADMIN`; falls back to `SO_RCVBUF`/`SO_SNDBUF`) |
//!
//! Dual-stack IPv6 sockets (bound to `[::]`) talk to IPv4 peers through v4-mapped
//! addresses; the API only ever shows plain IPv4 addresses for them.
//!
//! # Layout
//!
//! [`UdpSocket`] (tokio integration) sits on `sys`, one module per mechanism: socket
//! options, control messages, socket addresses, and the `mmsg` backend
//! (`sendmmsg`/`recvmmsg`). [`xdp`] is the kernel-bypass backend, [`XdpSocket`]:
//! AF_XDP with the same batch API, for IPv4 on one interface. [`Socket`] holds
//! either, chosen at run time (the `QUARK_XDP` environment variable, [`XDP_ENV`]).
//! [`netns`] builds the two-namespace veth test bed AF_XDP is tested and measured
//! on. [`stats`] counts system calls, datagrams, bytes and time for the lab.
//! [`PreciseTimer`] is a `timerfd` for deadlines finer than tokio's millisecond
//! (pacing gaps). [`tun`] is the TUN device of `quark link`'s emulated
//! paths, with [`tun::offload`] doing what a NIC's offloads do; `checksum` is
//! the RFC 1071 sum the frames of AF_XDP and of the offloads carry.

#![warn(missing_docs)]

#[cfg(not(target_os = "linux"))]
compile_error!("quark-udp supports Linux only");

mod backend;
mod bufs;
mod checksum;
pub mod heap;
pub mod netns;
pub mod reuseport;
mod socket;
pub mod stats;
mod sys;
mod timer;
pub mod tun;
pub mod xdp;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

pub use backend::{Socket, XDP_ENV, xdp_from_env};
pub use socket::{UdpSocket, bind_std, bind_std_reuseport};
pub use timer::PreciseTimer;
pub use xdp::{XdpConfig, XdpProgram, XdpSocket};

/// Most messages one system call sends or receives; [`UdpSocket::try_send`] loops
/// for longer slices, [`UdpSocket::try_recv`] returns at most this many messages.
pub const BATCH_SIZE: usize = 32;

/// Most datagrams in one GSO send (the kernel's `UDP_MAX_SEGMENTS`).
pub const MAX_GSO_SEGMENTS: usize = 64;

/// Most bytes in one GSO send: the UDP payload limit of an IPv4 datagram
/// (65535 − 20 − 8). Longer segmented transmits are sent as several GSO messages.
pub const MAX_GSO_BYTES: usize = 65_507;

/// Most error reports one [`UdpSocket::try_recv_errors`] call reads.
pub const MAX_ERROR_REPORTS: usize = 64;

/// Most segments the kernel coalesces into one GRO buffer (`UDP_GRO_CNT_MAX`).
const MAX_GRO_SEGMENTS: usize = 64;

/// One received message, as filled in by [`UdpSocket::try_recv`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecvMeta {
    /// The sender's address (IPv4 peers of a dual-stack socket show as IPv4).
    pub addr: SocketAddr,
    /// Bytes written into the buffer.
    pub len: usize,
    /// Size of each datagram in the buffer: the GRO segment size when the kernel
    /// coalesced several datagrams (the last one may be shorter), else `len`.
    /// Never 0 (an empty datagram has `len == 0`, `stride == 1`), so
    /// `buf[..len].chunks(stride)` is always safe.
    pub stride: usize,
    /// The two ECN bits of the IP TOS / traffic class byte (0 = Not-ECT).
    pub ecn: u8,
    /// The local address the datagram was sent to, when the kernel reported it.
    pub dst_ip: Option<IpAddr>,
}

impl Default for RecvMeta {
    fn default() -> Self {
        Self {
            addr: SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0),
            len: 0,
            stride: 1,
            ecn: 0,
            dst_ip: None,
        }
    }
}

/// What the network (an ICMP message) or the local stack said about a
/// datagram this socket sent, read by [`UdpSocket::try_recv_errors`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorReport {
    /// Where the datagram was going.
    pub destination: SocketAddr,
    /// What happened to it.
    pub cause: ErrorCause,
    /// An ICMP message said so (else the local stack: a send larger than
    /// the interface's MTU). Anyone on the path, or anyone who can guess
    /// the datagram's start, can forge one: a hint, not proof.
    pub from_network: bool,
    /// Bytes of the datagram's start the report quoted (and the buffer
    /// given held): as much as the ICMP message carried, for IPv4 often
    /// less than the whole datagram.
    pub len: usize,
}

/// Why a datagram did not arrive, as its [`ErrorReport`] says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCause {
    /// Nothing listens on the destination port (ICMP port unreachable).
    PortUnreachable,
    /// The destination host or network cannot be reached, or a filter
    /// refused the datagram.
    Unreachable,
    /// Larger than the path (or the interface) carries; `mtu` is the
    /// largest packet that fits, as reported (0 when unknown).
    TooBig {
        /// The path's MTU, as the report gives it.
        mtu: u32,
    },
    /// Anything else, as an errno.
    Other(i32),
}

/// One outgoing datagram, or a GSO batch of equal-size datagrams.
#[derive(Debug, Clone, Copy)]
pub struct Transmit<'a> {
    /// Where to send it.
    pub destination: SocketAddr,
    /// The two ECN bits to set in the IP header (0 = leave the TOS byte alone).
    pub ecn: u8,
    /// One datagram, or several `segment_size` datagrams back to back (the last may be
    /// shorter) when `segment_size` is `Some`.
    pub contents: &'a [u8],
    /// Size of each datagram in `contents`. `None`, `Some(0)` or a size of at least
    /// `contents.len()` mean one datagram.
    pub segment_size: Option<usize>,
    /// The local address to send from (multi-homed servers answer from the address
    /// the client used); `None` lets the routing table choose.
    pub src_ip: Option<IpAddr>,
}

impl Transmit<'_> {
    /// The datagram size, or `None` when `contents` is a single datagram.
    fn segment(&self) -> Option<usize> {
        match self.segment_size {
            Some(size) if size > 0 && size < self.contents.len() => Some(size),
            _ => None,
        }
    }

    /// How many datagrams this transmit puts on the wire.
    pub fn segments(&self) -> usize {
        match self.segment() {
            Some(size) => self.contents.len().div_ceil(size),
            None => 1,
        }
    }
}
