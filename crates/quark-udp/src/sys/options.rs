//! Socket options set at creation, and detection of what the kernel supports.
//! Each option that fails is logged at debug level and its feature stays off.

use std::io;
use std::mem;
use std::os::fd::{AsRawFd, BorrowedFd};

use libc::c_int;

/// Send buffer size asked for: room for a few thousand 1500-byte datagrams,
/// so bursts at tens of Gbit/s don't overflow between two wake-ups.
const BUFFER_SIZE: c_int = 8 << 20;
/// Receive buffer size asked for. The kernel charges each datagram its whole
/// buffer (about 1-2 KiB for a small one), and a server with thousands of
/// connections gets a datagram or two from each at once: at 5 000
/// connections with a request each in flight, 8 MiB overflowed (9 457
/// datagrams dropped in one 20 000-request phase, each lost request waiting
/// a PTO; issue #33). Pages are only used while datagrams wait.
const RECV_BUFFER_SIZE: c_int = 32 << 20;

/// What the kernel accepted for one socket.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Features {
    /// `UDP_SEGMENT` is known: GSO sends work.
    pub(crate) gso: bool,
    /// `UDP_GRO` is on.
    pub(crate) gro: bool,
}

/// Configures a UDP socket of family `v6` (IPv6 when true) for quark.
pub(crate) fn configure(fd: BorrowedFd<'_>, v6: bool) -> Features {
    grow_buffer(
        fd,
        libc::SO_RCVBUFFORCE,
        libc::SO_RCVBUF,
        RECV_BUFFER_SIZE,
        "receive",
    );
    grow_buffer(
        fd,
        libc::SO_SNDBUFFORCE,
        libc::SO_SNDBUF,
        BUFFER_SIZE,
        "send",
    );

    // IPv4 options also apply to the v4-mapped traffic of a dual-stack IPv6 socket
    // (the kernel runs its IPv4 code for it), so set them there too unless the
    // socket is IPv6-only.
    let ipv4 = !v6 || !get(fd, libc::IPPROTO_IPV6, libc::IPV6_V6ONLY).is_ok_and(|v| v != 0);
    if ipv4 {
        try_set(fd, libc::IPPROTO_IP, libc::IP_RECVTOS, 1, "IP_RECVTOS");
        try_set(fd, libc::IPPROTO_IP, libc::IP_PKTINFO, 1, "IP_PKTINFO");
        //= https://www.rfc-editor.org/rfc/rfc9000#section-14
        //# UDP datagrams MUST NOT be fragmented at the IP layer.  In IPv4
        //# [IPv4], the Don't Fragment (DF) bit MUST be set if possible, to
        //# prevent fragmentation on the path.
        // PROBE sets DF but ignores the route's cached PMTU, so DPLPMTUD probes
        // (RFC 9000 §14.3) can go out at any size up to the device MTU.
        try_set(
            fd,
            libc::IPPROTO_IP,
            libc::IP_MTU_DISCOVER,
            libc::IP_PMTUDISC_PROBE,
            "IP_MTU_DISCOVER",
        );
    }
    if v6 {
        try_set(
            fd,
            libc::IPPROTO_IPV6,
            libc::IPV6_RECVTCLASS,
            1,
            "IPV6_RECVTCLASS",
        );
        try_set(
            fd,
            libc::IPPROTO_IPV6,
            libc::IPV6_RECVPKTINFO,
            1,
            "IPV6_RECVPKTINFO",
        );
        try_set(
            fd,
            libc::IPPROTO_IPV6,
            libc::IPV6_MTU_DISCOVER,
            libc::IPV6_PMTUDISC_PROBE,
            "IPV6_MTU_DISCOVER",
        );
    }

    // The current GSO size (0) is readable exactly when the kernel knows UDP_SEGMENT.
    let gso = match get(fd, libc::SOL_UDP, libc::UDP_SEGMENT) {
        Ok(_) => true,
        Err(error) => {
            tracing::debug!(%error, "UDP_SEGMENT (GSO) unavailable");
            false
        }
    };
    let gro = try_set(fd, libc::SOL_UDP, libc::UDP_GRO, 1, "UDP_GRO");
    Features { gso, gro }
}

/// Turns the error queue of a socket of family `v6` on or off: ICMP errors
/// about datagrams it sends (`IP_RECVERR`, `IPV6_RECVERR`; without them an
/// unconnected socket hears none), each raising `EPOLLPRI`
/// (`SO_SELECT_ERR_QUEUE`) so that an idle reader wakes. Returns whether the
/// queue is on: never without the wake-up, as a queue nobody reads would
/// fill the receive buffer.
pub(crate) fn set_reports(fd: BorrowedFd<'_>, v6: bool, on: bool) -> bool {
    let value = c_int::from(on);
    let what = "SO_SELECT_ERR_QUEUE";
    let select = super::errqueue::SO_SELECT_ERR_QUEUE;
    if on && !try_set(fd, libc::SOL_SOCKET, select, value, what) {
        return false;
    }
    // IPv4 also for the v4-mapped traffic of a dual-stack socket.
    let ipv4 = !v6 || !get(fd, libc::IPPROTO_IPV6, libc::IPV6_V6ONLY).is_ok_and(|v| v != 0);
    let mut done = false;
    if ipv4 {
        done |= try_set(fd, libc::IPPROTO_IP, libc::IP_RECVERR, value, "IP_RECVERR");
    }
    if v6 {
        done |= try_set(
            fd,
            libc::IPPROTO_IPV6,
            libc::IPV6_RECVERR,
            value,
            "IPV6_RECVERR",
        );
    }
    if !on {
        try_set(fd, libc::SOL_SOCKET, select, 0, what);
    }
    on && done
}

/// Grows the receive buffer to at least `size` bytes (as asked; the kernel
/// reports twice that), never shrinking it. Returns what the kernel reports.
pub(crate) fn grow_recv_buffer(fd: BorrowedFd<'_>, size: usize) -> io::Result<usize> {
    let size = c_int::try_from(size).unwrap_or(c_int::MAX / 2);
    grow_buffer(fd, libc::SO_RCVBUFFORCE, libc::SO_RCVBUF, size, "receive");
    get(fd, libc::SOL_SOCKET, libc::SO_RCVBUF).map(|n| n.max(0) as usize)
}

/// Sets a buffer size with the privileged option, falling back to the capped one.
fn grow_buffer(fd: BorrowedFd<'_>, force: c_int, plain: c_int, size: c_int, what: &str) {
    // The kernel reports twice the size asked for (it counts its own overhead).
    if get(fd, libc::SOL_SOCKET, plain).is_ok_and(|now| now >= 2 * size) {
        return;
    }
    if let Err(error) = set(fd, libc::SOL_SOCKET, force, size) {
        tracing::debug!(%error, "forcing the {what} buffer size failed; asking within the sysctl limit");
        if let Err(error) = set(fd, libc::SOL_SOCKET, plain, size) {
            tracing::debug!(%error, "setting the {what} buffer size failed");
        }
    }
}

/// Sets an option, logging a failure; returns whether it worked.
fn try_set(fd: BorrowedFd<'_>, level: c_int, name: c_int, value: c_int, what: &str) -> bool {
    match set(fd, level, name, value) {
        Ok(()) => true,
        Err(error) => {
            tracing::debug!(%error, "{what} unavailable");
            false
        }
    }
}

/// `setsockopt` of an `int` option.
pub(crate) fn set(fd: BorrowedFd<'_>, level: c_int, name: c_int, value: c_int) -> io::Result<()> {
    // SAFETY: `fd` is an open descriptor for the borrow's lifetime; the kernel reads
    // exactly `size_of::<c_int>()` bytes from `&value`, which lives across the call.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (&value as *const c_int).cast(),
            mem::size_of::<c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// `getsockopt` of an `int` option.
pub(crate) fn get(fd: BorrowedFd<'_>, level: c_int, name: c_int) -> io::Result<c_int> {
    let mut value: c_int = 0;
    let mut len = mem::size_of::<c_int>() as libc::socklen_t;
    // SAFETY: `fd` is open; the kernel writes at most `len` bytes into `value` and
    // updates `len`, both valid for the call.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (&mut value as *mut c_int).cast(),
            &mut len,
        )
    };
    if rc == 0 {
        Ok(value)
    } else {
        Err(io::Error::last_os_error())
    }
}
