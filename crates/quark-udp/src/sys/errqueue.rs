//! The socket's error queue (`IP_RECVERR` / `IPV6_RECVERR`): what an ICMP
//! message, or the local stack, said about a datagram this socket sent.
//!
//! With these options an unconnected UDP socket learns that a port is closed
//! or a host unreachable. Each report also sets the socket's pending error,
//! which the next `recvmmsg` or `sendmmsg` returns (and so clears) in place
//! of its own result: [`is_report_errno`] names those errnos, so the callers
//! can tell them from an error of their own.

use std::io;
use std::mem;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::ptr;

use super::addr::RawAddr;
use super::cmsg;
use crate::{ErrorCause, ErrorReport};

/// `SO_SELECT_ERR_QUEUE` (include/uapi/asm-generic/socket.h; libc lacks
/// it): a queued error also raises `EPOLLPRI`, which the reactor reports as
/// readable, so an error on an idle socket wakes its reader.
pub(crate) const SO_SELECT_ERR_QUEUE: libc::c_int = 45;

/// Whether `errno`, returned by a send or receive, may be a queued report's
/// pending error rather than about the call itself (the kernel's
/// `icmp_err_convert` and `icmpv6_err_convert` tables, and a local
/// `EMSGSIZE`).
pub(crate) fn is_report_errno(errno: i32) -> bool {
    matches!(
        errno,
        libc::ECONNREFUSED
            | libc::EHOSTUNREACH
            | libc::ENETUNREACH
            | libc::EHOSTDOWN
            | libc::ENONET
            | libc::ENOPROTOOPT
            | libc::EOPNOTSUPP
            | libc::EPROTO
            | libc::EACCES
            | libc::EMSGSIZE
    )
}

/// What one read of the error queue found.
pub(crate) enum Entry {
    Report(ErrorReport),
    /// An entry without a report this code reads (taken off the queue).
    Unreadable,
    Empty,
}

/// Reads one entry from the error queue of `fd`, with the start of the
/// datagram it is about copied into `buf` (its length in the report).
pub(crate) fn recv(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<Entry> {
    let mut name = RawAddr::ZERO;
    let mut ctrl = cmsg::Buf([0; cmsg::BUF_LEN]);
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: all-zero is a valid `msghdr` (integers and null pointers).
    let mut hdr: libc::msghdr = unsafe { mem::zeroed() };
    hdr.msg_name = (&mut name as *mut RawAddr).cast();
    hdr.msg_namelen = RawAddr::CAPACITY;
    hdr.msg_iov = &mut iov;
    hdr.msg_iovlen = 1;
    hdr.msg_control = ctrl.0.as_mut_ptr().cast();
    hdr.msg_controllen = cmsg::BUF_LEN as _;
    let got = loop {
        // SAFETY: `hdr` points at `name`, `iov` (over `buf`) and `ctrl`, each
        // with its length, all alive and writable across the call.
        let rc = unsafe {
            libc::recvmsg(
                fd.as_raw_fd(),
                &mut hdr,
                libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT,
            )
        };
        if rc >= 0 {
            break rc as usize;
        }
        let error = io::Error::last_os_error();
        match error.kind() {
            io::ErrorKind::Interrupted => continue,
            io::ErrorKind::WouldBlock => return Ok(Entry::Empty),
            _ => return Err(error),
        }
    };
    let ctrl_len = (hdr.msg_controllen as usize).min(cmsg::BUF_LEN);
    let ee = cmsg::decode(&ctrl.0[..ctrl_len]).find_map(|c| {
        let ours = (c.level, c.kind) == (libc::SOL_IP, libc::IP_RECVERR)
            || (c.level, c.kind) == (libc::SOL_IPV6, libc::IPV6_RECVERR);
        ours.then(|| extended_err(c.data)).flatten()
    });
    let destination = name.decode(hdr.msg_namelen.min(RawAddr::CAPACITY));
    Ok(match (ee, destination) {
        (Some(ee), Some(to)) => Entry::Report(report(&ee, to, got.min(buf.len()))),
        _ => Entry::Unreadable,
    })
}

/// The `sock_extended_err` at the start of a `*_RECVERR` control message
/// (the offender's address that follows is not used).
fn extended_err(data: &[u8]) -> Option<libc::sock_extended_err> {
    if data.len() < mem::size_of::<libc::sock_extended_err>() {
        return None;
    }
    // SAFETY: `data` holds a whole `sock_extended_err` (checked above); the
    // read is unaligned-tolerant and the struct is plain integers.
    Some(unsafe { ptr::read_unaligned(data.as_ptr().cast()) })
}

fn report(ee: &libc::sock_extended_err, destination: SocketAddr, len: usize) -> ErrorReport {
    let from_network = matches!(
        ee.ee_origin,
        libc::SO_EE_ORIGIN_ICMP | libc::SO_EE_ORIGIN_ICMP6
    );
    let errno = ee.ee_errno as i32;
    let cause = match errno {
        libc::ECONNREFUSED => ErrorCause::PortUnreachable,
        libc::EMSGSIZE => ErrorCause::TooBig { mtu: ee.ee_info },
        libc::EHOSTUNREACH | libc::ENETUNREACH | libc::EHOSTDOWN | libc::ENONET | libc::EACCES => {
            ErrorCause::Unreachable
        }
        _ => ErrorCause::Other(errno),
    };
    ErrorReport {
        destination,
        cause,
        from_network,
        len,
    }
}
