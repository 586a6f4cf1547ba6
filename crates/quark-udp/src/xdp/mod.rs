//! [`XdpSocket`]: datagrams through AF_XDP, bypassing the kernel's IP and UDP
//! stack (the "kernel bypass" of seed 001, where quant gained 7× with netmap).
//!
//! # How it works
//!
//! - A small XDP program (hand-assembled, see `program`) runs on every frame the
//!   interface receives. IPv4 UDP datagrams to the socket's address and port go to
//!   an `XSKMAP` entry for the receive queue, i.e. to this socket; everything else
//!   (ARP, ICMP, other ports) continues to the kernel's stack. It is attached through
//!   a BPF link, so it goes away with the socket or the process.
//! - The socket shares a UMEM (packet memory, 4 KiB frames) with the kernel through
//!   four mmap'd rings: fill (empty frames for receiving), RX, TX and completion
//!   (sent frames coming back). Half the frames receive, half send.
//! - Sending builds Ethernet + IPv4 + UDP headers in front of each datagram in its
//!   frame (the UDP checksum is computed; GSO batches are cut into frames here) and
//!   wakes the kernel with one `sendto` per batch (`XDP_USE_NEED_WAKEUP`; in copy
//!   mode the kernel transmits during that call). Receiving copies each payload out
//!   of the UMEM into the caller's buffer and gives the frame back; consecutive
//!   equal-size datagrams of one flow share a buffer, like UDP GRO.
//! - The destination's Ethernet address comes from `neigh` (static entries,
//!   learned sources, the kernel's ARP table).
//! - A kernel UDP socket is bound to the same address and port: nothing else
//!   takes the port, `port 0` picks an ephemeral one, and it carries what AF_XDP
//!   can't. Datagrams the program passes on (arriving on other receive queues,
//!   with IP options, fragmented, or too large for a frame, such as GSO batches
//!   over veth with generic XDP) are received there; datagrams to a destination
//!   whose Ethernet address is unknown are sent there, so the kernel resolves it
//!   (ARP) instead of the first packets being lost. Both are rare and cost nothing
//!   otherwise.
//!
//! # What it needs
//!
//! - Linux 5.9 or later (BPF links for XDP; `XDP_MAX_TX_SKB_BUDGET` from 6.17 is
//!   used when present), built with `CONFIG_XDP_SOCKETS` and `CONFIG_BPF_SYSCALL`.
//! - `CAP_NET_ADMIN`, `CAP_NET_RAW` and `CAP_BPF` (or `CAP_SYS_ADMIN`): in practice,
//!   root. Locked memory for the UMEM (16 MiB by default) counts against
//!   `RLIMIT_MEMLOCK` on kernels before 5.11.
//! - An Ethernet interface with an IPv4 address; IPv6 is not supported. A
//!   socket serves one receive queue (`queue=`; a veth pair has one unless made
//!   with more). Only one XDP program can be attached to an interface, so one
//!   [`XdpSocket::bind`] per interface; sockets for several queues share one
//!   program through [`XdpProgram`] (a worker per queue, as `quark::WorkerGroup`
//!   does), with kernel sockets that share the port (`SO_REUSEPORT`).
//! - Datagrams of at most the interface MTU and 3840 bytes of frame (4096 minus
//!   the kernel's receive headroom): larger ones are refused with `EMSGSIZE`, as
//!   by a kernel socket (DPLPMTUD probes fail as they should).
//! - The peer's Ethernet address: static (`neigh=` in [`XdpConfig`]), learned
//!   from its datagrams, or in the kernel's ARP table; the first datagram to an
//!   unknown one goes through the kernel.
//!
//! # Selecting it
//!
//! `XdpSocket::bind(addr, &config)` directly, [`Socket`](crate::Socket) for
//! either backend, or the `QUARK_XDP` environment variable
//! ([`XDP_ENV`](crate::XDP_ENV), e.g. `QUARK_XDP=veth-a,attach=generic`), which
//! [`Socket::bind`](crate::Socket::bind) and so every quark `Endpoint` (`quark
//! serve`, `quark get`, the lab's `--net veth-xdp`) obey. `quark xdp setup`
//! builds the two-namespace veth test bed ([`crate::netns`]).
//!
//! # On veth
//!
//! Zero-copy is unavailable (veth has no AF_XDP zero-copy support; `bind=zerocopy`
//! fails with `EOPNOTSUPP`), so frames are copied once each way: copy mode. Native
//! XDP attaches and works (and makes the peer's veth segment GSO batches before
//! they cross); generic XDP works too. [`XdpSocket::mode`] says what the kernel
//! granted: "native XDP, copy mode" by default.

pub(crate) mod bpf;
mod config;
mod neigh;
mod netdev;
mod open;
pub(crate) mod program;
mod ring;
mod rx;
mod tx;
mod wire;
mod xsk;

#[cfg(test)]
mod tests;

use std::io::{self, IoSliceMut};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, MutexGuard};
use std::task::{Context, Poll};

use bytes::BytesMut;
use tokio::io::unix::AsyncFd;

pub use config::{Attach, Bind, ParseError, XdpConfig};
pub use open::XdpProgram;

use crate::bufs::RecvBufs;
use crate::{MAX_GRO_SEGMENTS, MAX_GSO_SEGMENTS, RecvMeta, Transmit};
use neigh::Neighbours;
use netdev::Interface;
use xsk::Umem;

/// What the kernel granted an [`XdpSocket`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct XdpMode {
    /// The XDP program runs in the driver (native XDP), not on socket buffers
    /// (generic XDP).
    pub native: bool,
    /// Frames move without copies (`XDP_ZEROCOPY`), not copied by the kernel.
    pub zerocopy: bool,
}

impl std::fmt::Display for XdpMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let attach = if self.native { "native" } else { "generic" };
        let bind = if self.zerocopy { "zero-copy" } else { "copy" };
        write!(f, "{attach} XDP, {bind} mode")
    }
}

/// Drop counters of the kernel for one socket (`XDP_STATISTICS`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct XdpStats {
    /// Frames dropped for other reasons (e.g. too large for a UMEM frame).
    pub rx_dropped: u64,
    /// Frames dropped because the RX ring was full.
    pub rx_ring_full: u64,
    /// Times the fill ring had no empty frame for a received packet.
    pub rx_fill_ring_empty: u64,
    /// Malformed TX descriptors (a bug in quark if ever non-zero).
    pub tx_invalid: u64,
    /// Datagrams received through the XDP rings (quark's count).
    pub received_xdp: u64,
    /// Datagrams received through the kernel socket instead (quark's count):
    /// what the program passed on, see the module docs.
    pub received_kernel: u64,
}

/// The receive side: RX ring in, fill ring out.
struct Rx {
    ring: ring::Ring<libc::xdp_desc>,
    fill: ring::Ring<u64>,
    /// The source last passed to the neighbour table, to skip its lock.
    learned: Option<(Ipv4Addr, wire::Mac)>,
}

/// The send side: TX ring out, completion ring in, and the idle send frames.
struct Tx {
    ring: ring::Ring<libc::xdp_desc>,
    comp: ring::Ring<u64>,
    free: Vec<u64>,
    /// The last destination resolved, to skip the neighbour table's lock.
    resolved: Option<(Ipv4Addr, wire::Mac)>,
}

/// A datagram socket on AF_XDP (see the module docs): the same batch API as
/// [`UdpSocket`](crate::UdpSocket), for IPv4 on one interface.
///
/// All methods take `&self`: one task may send while another receives.
pub struct XdpSocket {
    // Drop order matters: let go of the program (detached with its last
    // socket), unmap the rings, close the socket, then free the UMEM it used.
    _program: std::sync::Arc<open::Attached>,
    rx: Mutex<Rx>,
    tx: Mutex<Tx>,
    io: AsyncFd<OwnedFd>,
    umem: Umem,
    neigh: Mutex<Neighbours>,
    /// A kernel socket on the same address and port: it holds the port, and it
    /// carries what AF_XDP can't (see the module docs).
    kernel: crate::UdpSocket,
    local: SocketAddrV4,
    iface: Interface,
    /// The receive queue it serves.
    queue: u32,
    mode: XdpMode,
    udp_checksum: bool,
    gso: AtomicBool,
    gro: AtomicBool,
    /// TX descriptors the kernel has not taken yet (copy mode stops at its budget
    /// or when the device is busy): the next poll kicks again.
    tx_pending: AtomicBool,
    /// Datagrams received through the rings and through the kernel socket.
    rx_xdp: AtomicU64,
    rx_kernel: AtomicU64,
}

impl XdpSocket {
    /// The address datagrams come from and arrive at.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        Ok(SocketAddr::V4(self.local))
    }

    /// The interface the socket is bound to.
    pub fn interface(&self) -> &str {
        &self.iface.name
    }

    /// The receive queue of the interface it serves.
    pub fn queue(&self) -> u32 {
        self.queue
    }

    /// What the kernel granted: native or generic XDP, copy or zero-copy.
    pub fn mode(&self) -> XdpMode {
        self.mode
    }

    /// The kernel's drop counters for this socket, and quark's receive counts.
    pub fn stats(&self) -> io::Result<XdpStats> {
        let s = self.xsk_statistics()?;
        Ok(XdpStats {
            rx_dropped: s.rx_dropped,
            rx_ring_full: s.rx_ring_full,
            rx_fill_ring_empty: s.rx_fill_ring_empty_descs,
            tx_invalid: s.tx_invalid_descs,
            received_xdp: self.rx_xdp.load(Relaxed),
            received_kernel: self.rx_kernel.load(Relaxed),
        })
    }

    /// Datagrams one transmit may carry: [`MAX_GSO_SEGMENTS`] (segments are cut
    /// into frames here, so "GSO" is always available), or 1 when turned off.
    pub fn max_gso_segments(&self) -> usize {
        if self.gso.load(Relaxed) {
            MAX_GSO_SEGMENTS
        } else {
            1
        }
    }

    /// Turns segmented transmits on or off (what [`max_gso_segments`](Self::max_gso_segments)
    /// advertises; segmented transmits are accepted either way).
    pub fn set_gso(&self, enabled: bool) {
        self.gso.store(enabled, Relaxed);
    }

    /// Datagrams one receive buffer may hold: 64 with coalescing on (the
    /// default), else 1.
    pub fn gro_segments(&self) -> usize {
        if self.gro.load(Relaxed) {
            MAX_GRO_SEGMENTS
        } else {
            1
        }
    }

    /// Turns coalescing of received datagrams into one buffer on or off.
    pub fn set_gro(&self, enabled: bool) {
        self.gro.store(enabled, Relaxed);
    }

    /// Queues `transmits` for sending; same contract as
    /// [`UdpSocket::try_send`](crate::UdpSocket::try_send). `WouldBlock` when no
    /// send frame is free (they come back as the kernel completes sends).
    ///
    /// A datagram larger than the path's MTU is refused with `EMSGSIZE`, one to
    /// an IPv6 destination with `Unsupported` (the count says how far it got, as
    /// for UDP). Datagrams to a destination whose Ethernet address is not known
    /// yet go through the kernel socket, which resolves it.
    pub fn try_send(&self, transmits: &[Transmit<'_>]) -> io::Result<usize> {
        if transmits.is_empty() {
            return Ok(0);
        }
        let mut tx = lock(&self.tx);
        tx::send(self, &mut tx, transmits)
    }

    /// Receives up to `min(bufs.len(), meta.len())` messages from the XDP rings;
    /// same contract as [`UdpSocket::try_recv`](crate::UdpSocket::try_recv).
    /// `WouldBlock` when nothing is waiting.
    pub fn try_recv(
        &self,
        bufs: &mut [IoSliceMut<'_>],
        meta: &mut [RecvMeta],
    ) -> io::Result<usize> {
        self.try_recv_any(bufs, meta)
    }

    /// [`try_recv`](Self::try_recv) into `BytesMut`s, emptied first (see
    /// [`UdpSocket::try_recv_buf`](crate::UdpSocket::try_recv_buf)).
    pub fn try_recv_buf(&self, bufs: &mut [BytesMut], meta: &mut [RecvMeta]) -> io::Result<usize> {
        bufs.iter_mut().for_each(BytesMut::clear);
        self.try_recv_any(bufs, meta)
    }

    fn try_recv_any<B: RecvBufs + ?Sized>(
        &self,
        bufs: &mut B,
        meta: &mut [RecvMeta],
    ) -> io::Result<usize> {
        let mut rx = lock(&self.rx);
        rx::recv(self, &mut rx, bufs, meta)
    }

    /// [`try_send`](Self::try_send), waiting for free frames.
    pub fn poll_send(
        &self,
        cx: &mut Context<'_>,
        transmits: &[Transmit<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.try_send(transmits) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                // Frames come back on the completion ring, which wakes nobody:
                // look again on the next turn of the runtime.
                cx.waker().wake_by_ref();
                Poll::Pending
            }
            result => Poll::Ready(result),
        }
    }

    /// [`try_recv`](Self::try_recv), waiting for a datagram; also receives what
    /// reached the kernel socket instead (see the module docs). Only the last
    /// task to poll is woken.
    pub fn poll_recv(
        &self,
        cx: &mut Context<'_>,
        bufs: &mut [IoSliceMut<'_>],
        meta: &mut [RecvMeta],
    ) -> Poll<io::Result<usize>> {
        self.poll_recv_any(cx, bufs, meta)
    }

    /// [`poll_recv`](Self::poll_recv) into `BytesMut`s, emptied first.
    pub fn poll_recv_buf(
        &self,
        cx: &mut Context<'_>,
        bufs: &mut [BytesMut],
        meta: &mut [RecvMeta],
    ) -> Poll<io::Result<usize>> {
        bufs.iter_mut().for_each(BytesMut::clear);
        self.poll_recv_any(cx, bufs, meta)
    }

    fn poll_recv_any<B: RecvBufs + ?Sized>(
        &self,
        cx: &mut Context<'_>,
        bufs: &mut B,
        meta: &mut [RecvMeta],
    ) -> Poll<io::Result<usize>> {
        if bufs.count() == 0 || meta.is_empty() {
            return Poll::Ready(Ok(0));
        }
        if self.tx_pending.load(Relaxed) {
            let mut tx = lock(&self.tx);
            if tx::flush(self, &mut tx).is_ok() && self.tx_pending.load(Relaxed) {
                // The device is still busy: come back soon to push the rest out.
                cx.waker().wake_by_ref();
            }
        }
        loop {
            match self.io.poll_read_ready(cx) {
                Poll::Ready(Ok(mut guard)) => match self.try_recv_any(bufs, meta) {
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        if lock(&self.rx).ring.available() > 0 {
                            // Left waiting for fill-ring room, which frees up
                            // without a wake-up: look again on the next turn.
                            cx.waker().wake_by_ref();
                            break;
                        }
                        guard.clear_ready();
                    }
                    result => return Poll::Ready(result),
                },
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => break,
            }
        }
        // The XDP rings are empty and will wake us; anything for the kernel socket?
        let polled = bufs.poll_udp(&self.kernel, cx, meta);
        if let Poll::Ready(Ok(n)) = polled {
            let datagrams: usize = meta[..n]
                .iter()
                .map(|m| m.len.div_ceil(m.stride.max(1)))
                .sum();
            self.rx_kernel.fetch_add(datagrams as u64, Relaxed);
        }
        polled
    }

    /// Sends `transmits`, waiting for free frames; returns how many were sent.
    pub async fn send(&self, transmits: &[Transmit<'_>]) -> io::Result<usize> {
        std::future::poll_fn(|cx| self.poll_send(cx, transmits)).await
    }

    /// Receives at least one message, waiting for it.
    pub async fn recv(
        &self,
        bufs: &mut [IoSliceMut<'_>],
        meta: &mut [RecvMeta],
    ) -> io::Result<usize> {
        std::future::poll_fn(|cx| self.poll_recv(cx, bufs, meta)).await
    }

    fn xsk_statistics(&self) -> io::Result<libc::xdp_statistics> {
        xsk::statistics(self.io.get_ref().as_fd())
    }

    /// The Ethernet address to send to `dst`, if known.
    fn resolve(&self, dst: Ipv4Addr) -> Option<wire::Mac> {
        lock(&self.neigh).lookup(dst)
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn unsupported(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::Unsupported, what.to_string())
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, what.to_string())
}

impl AsFd for XdpSocket {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.io.get_ref().as_fd()
    }
}

impl AsRawFd for XdpSocket {
    fn as_raw_fd(&self) -> RawFd {
        self.io.get_ref().as_raw_fd()
    }
}

impl std::fmt::Debug for XdpSocket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("XdpSocket")
            .field("interface", &self.iface.name)
            .field("local_addr", &self.local)
            .field("queue", &self.queue)
            .field("mode", &self.mode)
            .finish()
    }
}
