//! [`UdpSocket`]: the batched socket, registered with tokio.

use std::io::{self, IoSliceMut};
use std::mem::MaybeUninit;
use std::net::SocketAddr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::sync::OnceLock;
use std::sync::atomic::Ordering::Relaxed;
use std::task::{Context, Poll, ready};

use bytes::BytesMut;
use socket2::{Domain, Protocol, Socket, Type};
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;

use crate::sys::{self, State, options};
use crate::{ErrorReport, RecvMeta, Transmit};

#[cfg(test)]
mod tests;

/// A UDP socket that sends and receives batches of datagrams (see the crate docs).
///
/// All methods take `&self`: one task may send while another receives. The `try_*`
/// methods never block; the `poll_*` and `async` ones wait for readiness through
/// tokio.
pub struct UdpSocket {
    /// Registered for reading only: a UDP socket reports "writable" each time a
    /// sent datagram is freed, which would wake a sleeping sender once per
    /// datagram for nothing.
    io: AsyncFd<std::net::UdpSocket>,
    /// A duplicate descriptor registered for writing, made the first time a
    /// send finds the buffer full (only then is writability worth a wake-up).
    writer: OnceLock<AsyncFd<std::net::UdpSocket>>,
    state: State,
}

/// Whether an environment switch like `QUARK_NO_GSO=1` is set (any value but `0`).
pub(crate) fn env_flag(name: &str) -> bool {
    std::env::var_os(name).is_some_and(|v| v != "0")
}

/// A UDP socket bound to `addr`, non-blocking, not yet registered with a
/// runtime (to hand to [`UdpSocket::from_std`] on the thread that will drive
/// it). An unspecified IPv6 address (`[::]`) gives a dual-stack socket;
/// `reuse_port` sets `SO_REUSEPORT` so several sockets can share the port.
pub fn bind_std(addr: SocketAddr, reuse_port: bool) -> io::Result<std::net::UdpSocket> {
    let socket = Socket::new(
        Domain::for_address(addr),
        Type::DGRAM.nonblocking().cloexec(),
        Some(Protocol::UDP),
    )?;
    if addr.is_ipv6() && addr.ip().is_unspecified() {
        // Don't depend on the net.ipv6.bindv6only sysctl.
        if let Err(error) = socket.set_only_v6(false) {
            tracing::debug!(%error, "IPV6_V6ONLY=0 failed; IPv6 only");
        }
    }
    if reuse_port {
        socket.set_reuse_port(true)?;
    }
    socket.bind(&addr.into())?;
    Ok(socket.into())
}

/// `n` sockets on `addr` with `SO_REUSEPORT` ([`bind_std`]); with port 0 the
/// first picks the port and the others join it. For a server spread over
/// threads, or AF_XDP sockets of several queues on one port.
pub fn bind_std_reuseport(mut addr: SocketAddr, n: usize) -> io::Result<Vec<std::net::UdpSocket>> {
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let socket = bind_std(addr, true)?;
        if addr.port() == 0 {
            addr = socket.local_addr()?;
        }
        out.push(socket);
    }
    Ok(out)
}

impl UdpSocket {
    /// Creates a socket bound to `addr` and configures it (see the crate docs). An
    /// unspecified IPv6 address (`[::]`) gives a dual-stack socket. Must be called
    /// inside a tokio runtime with I/O enabled.
    pub fn bind(addr: SocketAddr) -> io::Result<Self> {
        Self::from_std(bind_std(addr, false)?)
    }

    /// Takes over a bound UDP socket: makes it non-blocking, configures it (see the
    /// crate docs) and registers it with the current tokio runtime.
    pub fn from_std(socket: std::net::UdpSocket) -> io::Result<Self> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(io::Error::other(
                "quark_udp::UdpSocket needs a tokio runtime",
            ));
        }
        socket.set_nonblocking(true)?;
        let v6 = socket.local_addr()?.is_ipv6();
        let features = options::configure(socket.as_fd(), v6);
        // With the error queue on, a queued report raises EPOLLPRI
        // (`SO_SELECT_ERR_QUEUE`), which wakes the reader like a datagram;
        // nothing else raises it on a UDP socket.
        let interest = Interest::READABLE | Interest::PRIORITY;
        // SAFETY: `socket` owns its descriptor and moves into the `AsyncFd`, which
        // owns it until dropped; a `std::net::UdpSocket` always returns that same
        // descriptor from `as_raw_fd`.
        let io = unsafe { AsyncFd::register_with_interest(socket, interest) }
            .map_err(io::Error::from)?;
        let socket = Self {
            io,
            writer: OnceLock::new(),
            state: State::new(v6, features),
        };
        // Switches for tests and benchmarks: run everything without GSO or GRO.
        if env_flag("QUARK_NO_GSO") {
            socket.set_gso(false);
        }
        if env_flag("QUARK_NO_GRO") {
            socket.set_gro(false)?;
        }
        Ok(socket)
    }

    /// The address the socket is bound to.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.get_ref().local_addr()
    }

    /// Datagrams one transmit may carry in a single GSO send: up to
    /// [`MAX_GSO_SEGMENTS`](crate::MAX_GSO_SEGMENTS), or 1 when GSO is unavailable,
    /// switched off, or was disabled after a failure. A GSO send also holds at most
    /// [`MAX_GSO_BYTES`](crate::MAX_GSO_BYTES); longer segmented transmits are still
    /// accepted (sent as several messages).
    pub fn max_gso_segments(&self) -> usize {
        self.state.gso_segments()
    }

    /// Datagrams the kernel may coalesce into one receive buffer: 64 with GRO, else 1.
    /// With GRO on, give each receive buffer 64 KiB (a coalesced message never exceeds
    /// the 65535-byte IP payload limit); shorter buffers truncate coalesced messages.
    pub fn gro_segments(&self) -> usize {
        self.state.gro_segments()
    }

    /// Grows the receive buffer to at least `bytes` (`SO_RCVBUFFORCE`, else
    /// `SO_RCVBUF` within `rmem_max`); never shrinks it. Returns the size the
    /// kernel reports (twice what it charges datagrams against).
    pub fn grow_recv_buffer(&self, bytes: usize) -> io::Result<usize> {
        options::grow_recv_buffer(self.as_fd(), bytes)
    }

    /// Turns GSO on or off for this socket. Turning it on has no effect when the
    /// kernel lacks GSO or a GSO send failed earlier.
    pub fn set_gso(&self, enabled: bool) {
        self.state.set_gso(enabled);
    }

    /// Turns GRO (`UDP_GRO`) on or off for this socket.
    pub fn set_gro(&self, enabled: bool) -> io::Result<()> {
        options::set(
            self.as_fd(),
            libc::SOL_UDP,
            libc::UDP_GRO,
            i32::from(enabled),
        )?;
        self.state.set_gro(enabled);
        Ok(())
    }

    /// Sends `transmits` in order with as few system calls as possible (one
    /// `sendmmsg` per [`BATCH_SIZE`](crate::BATCH_SIZE) messages).
    ///
    /// Returns how many transmits were sent completely: `transmits[..n]`. A short
    /// count means the socket buffer filled up (or the error of `transmits[n]` will be
    /// reported by the next call). `Err` means none was sent: `WouldBlock` when the
    /// socket buffer is full, any other error is about `transmits[0]` (the caller
    /// may drop it and go on with the rest). An empty slice returns `Ok(0)`.
    pub fn try_send(&self, transmits: &[Transmit<'_>]) -> io::Result<usize> {
        if transmits.is_empty() {
            return Ok(0);
        }
        sys::mmsg::send(self.as_fd(), &self.state, transmits)
    }

    /// Receives up to `min(bufs.len(), meta.len(), BATCH_SIZE)` messages with one
    /// `recvmmsg`, one message per buffer; returns how many, with `meta[i]`
    /// describing `bufs[i]`. With GRO a buffer may hold several datagrams of
    /// `meta[i].stride` bytes. `WouldBlock` when nothing is waiting.
    pub fn try_recv(
        &self,
        bufs: &mut [IoSliceMut<'_>],
        meta: &mut [RecvMeta],
    ) -> io::Result<usize> {
        // SAFETY: `IoSliceMut` is ABI-compatible with `iovec` on Unix (documented
        // by std), and each describes a writable slice borrowed for this call.
        let iovs = unsafe {
            std::slice::from_raw_parts_mut(bufs.as_mut_ptr().cast::<libc::iovec>(), bufs.len())
        };
        sys::mmsg::recv(self.as_fd(), &self.state, iovs, meta)
    }

    /// [`try_recv`](Self::try_recv) into `bufs`: each buffer offered (the
    /// first `BATCH_SIZE` at most) is emptied, a message fills its capacity
    /// with nothing zeroed beforehand, and its length becomes `meta[i].len`.
    /// Reserve room for the largest message (64 KiB with GRO) first, or a
    /// message may be truncated.
    pub fn try_recv_buf(&self, bufs: &mut [BytesMut], meta: &mut [RecvMeta]) -> io::Result<usize> {
        let n = bufs.len().min(crate::BATCH_SIZE);
        // Written for the buffers offered only: zeroing all 32 cost more
        // than filling a few.
        let mut iovs = [const { MaybeUninit::<libc::iovec>::uninit() }; crate::BATCH_SIZE];
        for (iov, buf) in iovs.iter_mut().zip(bufs[..n].iter_mut()) {
            buf.clear();
            let spare = buf.spare_capacity_mut();
            iov.write(libc::iovec {
                iov_base: spare.as_mut_ptr().cast(),
                iov_len: spare.len(),
            });
        }
        // SAFETY: the loop above wrote the first `n` entries; `MaybeUninit<T>`
        // has the layout of `T`.
        let iovs: &mut [libc::iovec] =
            unsafe { std::slice::from_raw_parts_mut(iovs.as_mut_ptr().cast(), n) };
        let got = sys::mmsg::recv(self.as_fd(), &self.state, iovs, meta)?;
        for ((buf, iov), m) in bufs
            .iter_mut()
            .zip(iovs.iter())
            .zip(meta.iter_mut())
            .take(got)
        {
            m.len = m.len.min(iov.iov_len);
            // SAFETY: the buffer was empty, and the kernel wrote `m.len` bytes
            // (at most the iovec's length, clamped above) at the start of its
            // spare capacity: its first `m.len` bytes are initialised.
            unsafe { buf.set_len(m.len) };
        }
        Ok(got)
    }

    /// Turns the socket's error queue on or off (off at creation): with it,
    /// the kernel keeps a report of each ICMP error (port or host
    /// unreachable, too big) about a datagram sent, read with
    /// [`try_recv_errors`](Self::try_recv_errors), which the owner must then
    /// call whenever [`reports_pending`](Self::reports_pending) says so:
    /// unread reports take room in the receive buffer. Returns whether the
    /// queue is on (false where the kernel refuses the options).
    pub fn set_error_reports(&self, on: bool) -> bool {
        let on = options::set_reports(self.as_fd(), self.state.v6, on);
        self.state.reports.store(on, Relaxed);
        on
    }

    /// Whether error reports may wait ([`try_recv_errors`](Self::try_recv_errors)):
    /// a send or receive met an error a report leaves behind. A queued
    /// report also wakes a reader waiting in [`poll_recv`](Self::poll_recv),
    /// whose receive then meets that error.
    pub fn reports_pending(&self) -> bool {
        self.state.reports_pending.load(Relaxed)
    }

    /// Reads up to [`MAX_ERROR_REPORTS`](crate::MAX_ERROR_REPORTS) reports
    /// from the socket's error queue, the ICMP errors (port or host
    /// unreachable, too big) and local errors about datagrams this socket
    /// sent, calling `f` with each and the start of its datagram (in `buf`,
    /// cut to the buffer's length). Returns how many it gave. Never blocks;
    /// the queue holds nothing unless [`set_error_reports`](Self::set_error_reports)
    /// turned it on. A read that stops at the limit leaves
    /// [`reports_pending`](Self::reports_pending) set.
    pub fn try_recv_errors(&self, buf: &mut [u8], mut f: impl FnMut(&ErrorReport, &[u8])) -> usize {
        use sys::errqueue::Entry;
        self.state.reports_pending.store(false, Relaxed);
        let mut given = 0;
        for _ in 0..crate::MAX_ERROR_REPORTS {
            match sys::errqueue::recv(self.as_fd(), buf) {
                Ok(Entry::Report(report)) => {
                    f(&report, &buf[..report.len]);
                    given += 1;
                }
                Ok(Entry::Unreadable) => {}
                Ok(Entry::Empty) => return given,
                Err(error) => {
                    tracing::debug!(%error, "reading the error queue failed");
                    return given;
                }
            }
        }
        self.state.reports_pending.store(true, Relaxed);
        given
    }

    /// [`try_send`](Self::try_send), waiting for the socket to become writable. Only
    /// the last task to poll is woken; use [`send`](Self::send) from several tasks.
    pub fn poll_send(
        &self,
        cx: &mut Context<'_>,
        transmits: &[Transmit<'_>],
    ) -> Poll<io::Result<usize>> {
        if transmits.is_empty() {
            return Poll::Ready(Ok(0));
        }
        let writer = match self.writer.get() {
            // Blocked before: its readiness saves a send that would fail.
            Some(writer) => writer,
            None => {
                match self.try_send(transmits) {
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    result => return Poll::Ready(result),
                }
                // Registering reports the current state, so room freed since
                // the failed send above still raises an event. (Two tasks racing
                // here both register; the loser's registration is dropped.)
                let dup = self.io.get_ref().try_clone()?;
                // SAFETY: `dup` owns its own descriptor (a `dup` of ours) and
                // moves into the `AsyncFd`, which owns it until dropped.
                let fd = unsafe { AsyncFd::register_with_interest(dup, Interest::WRITABLE) }
                    .map_err(io::Error::from)?;
                let _ = self.writer.set(fd);
                self.writer.get().expect("set just now")
            }
        };
        loop {
            let mut guard = ready!(writer.poll_write_ready(cx))?;
            // `try_io` clears the readiness when the call reports WouldBlock.
            if let Ok(result) = guard.try_io(|_| self.try_send(transmits)) {
                return Poll::Ready(result);
            }
        }
    }

    /// [`try_recv`](Self::try_recv), waiting for a datagram. Only the last task to
    /// poll is woken; use [`recv`](Self::recv) from several tasks.
    pub fn poll_recv(
        &self,
        cx: &mut Context<'_>,
        bufs: &mut [IoSliceMut<'_>],
        meta: &mut [RecvMeta],
    ) -> Poll<io::Result<usize>> {
        let asked = bufs.len().min(meta.len()).min(crate::BATCH_SIZE);
        self.poll_recv_with(cx, asked, || self.try_recv(bufs, meta))
    }

    /// [`try_recv_buf`](Self::try_recv_buf), waiting for a datagram (as
    /// [`poll_recv`](Self::poll_recv)).
    pub fn poll_recv_buf(
        &self,
        cx: &mut Context<'_>,
        bufs: &mut [BytesMut],
        meta: &mut [RecvMeta],
    ) -> Poll<io::Result<usize>> {
        let asked = bufs.len().min(meta.len()).min(crate::BATCH_SIZE);
        self.poll_recv_with(cx, asked, || self.try_recv_buf(bufs, meta))
    }

    /// Waits for readiness, then receives with `recv` (at most `asked`
    /// messages).
    fn poll_recv_with(
        &self,
        cx: &mut Context<'_>,
        asked: usize,
        mut recv: impl FnMut() -> io::Result<usize>,
    ) -> Poll<io::Result<usize>> {
        if asked == 0 {
            return Poll::Ready(Ok(0));
        }
        loop {
            let mut guard = ready!(self.io.poll_read_ready(cx))?;
            if let Ok(result) = guard.try_io(|_| recv()) {
                if matches!(result, Ok(n) if n < asked) {
                    // Fewer messages than asked: the queue was empty just now. The
                    // reactor's epoll is edge-triggered, so any datagram arriving
                    // later raises a new event; clearing readiness here saves the
                    // empty `recvmmsg` (EAGAIN) that would otherwise follow every
                    // wake-up.
                    guard.clear_ready();
                }
                return Poll::Ready(result);
            }
        }
    }

    /// Whether a receive may find datagrams: `Pending` (and the task is woken when
    /// one arrives) after [`poll_recv`](Self::poll_recv) found the queue empty. Lets
    /// a caller skip preparing receive buffers when nothing is waiting.
    pub fn poll_recv_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.io.poll_read_ready(cx).map_ok(|_| ())
    }

    /// Sends `transmits`, waiting while the socket buffer is full; returns how many
    /// were sent (at least one unless the slice is empty). See
    /// [`try_send`](Self::try_send) for errors.
    pub async fn send(&self, transmits: &[Transmit<'_>]) -> io::Result<usize> {
        if transmits.is_empty() {
            return Ok(0);
        }
        std::future::poll_fn(|cx| self.poll_send(cx, transmits)).await
    }

    /// Receives at least one message, waiting for it; see [`try_recv`](Self::try_recv).
    pub async fn recv(
        &self,
        bufs: &mut [IoSliceMut<'_>],
        meta: &mut [RecvMeta],
    ) -> io::Result<usize> {
        if bufs.is_empty() || meta.is_empty() {
            return Ok(0);
        }
        loop {
            let mut guard = self.io.readable().await?;
            if let Ok(result) = guard.try_io(|_| self.try_recv(bufs, meta)) {
                return result;
            }
        }
    }

    /// Waits until the socket is writable and sends what it can, like
    /// [`send`](Self::send) but through [`poll_send`](Self::poll_send).
    #[cfg(test)]
    pub(crate) async fn send_polled(&self, transmits: &[Transmit<'_>]) -> io::Result<usize> {
        std::future::poll_fn(|cx| self.poll_send(cx, transmits)).await
    }

    /// [`recv`](Self::recv) through [`poll_recv`](Self::poll_recv).
    #[cfg(test)]
    pub(crate) async fn recv_polled(
        &self,
        bufs: &mut [IoSliceMut<'_>],
        meta: &mut [RecvMeta],
    ) -> io::Result<usize> {
        std::future::poll_fn(|cx| self.poll_recv(cx, bufs, meta)).await
    }
}

impl AsFd for UdpSocket {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.io.get_ref().as_fd()
    }
}

impl AsRawFd for UdpSocket {
    fn as_raw_fd(&self) -> RawFd {
        self.io.get_ref().as_raw_fd()
    }
}

impl std::fmt::Debug for UdpSocket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UdpSocket")
            .field("fd", &self.as_raw_fd())
            .field("local_addr", &self.local_addr().ok())
            .field("gso_segments", &self.max_gso_segments())
            .field("gro_segments", &self.gro_segments())
            .finish()
    }
}
