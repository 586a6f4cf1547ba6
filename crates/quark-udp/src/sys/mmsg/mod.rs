//! The `sendmmsg(2)`/`recvmmsg(2)` backend: many messages per system call, each
//! with its own address, one iovec and control messages, all on the stack.
//!
//! The raw calls below fall back to loops of `sendmsg`/`recvmsg` when the kernel
//! lacks the batched ones (`ENOSYS`), with the same contract: the count of messages
//! done, or the error of the first message when none was.

mod recv;
mod send;

pub(crate) use recv::recv;
pub(crate) use send::send;

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::sync::atomic::Ordering::Relaxed;

use super::State;

/// Sends `hdrs`, setting each sent message's `msg_len`. Returns the messages sent
/// (at least one) or the first message's error, and the system calls made.
fn sendmmsg(
    fd: BorrowedFd<'_>,
    state: &State,
    hdrs: &mut [libc::mmsghdr],
) -> (io::Result<usize>, usize) {
    let mut syscalls = 0;
    if state.sendmmsg.load(Relaxed) {
        loop {
            #[cfg(test)]
            if state.hooks.no_mmsg.load(Relaxed) {
                State::mmsg_missing(&state.sendmmsg, "sendmmsg");
                break;
            }
            syscalls += 1;
            // SAFETY: `hdrs` is a valid, initialised array of `hdrs.len()` headers
            // whose names, iovecs and control buffers point at memory that outlives
            // this call; the kernel only writes `msg_len`.
            let rc =
                unsafe { libc::sendmmsg(fd.as_raw_fd(), hdrs.as_mut_ptr(), hdrs.len() as _, 0) };
            if rc >= 0 {
                return (Ok(rc as usize), syscalls);
            }
            let error = io::Error::last_os_error();
            match error.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::ENOSYS) => {
                    State::mmsg_missing(&state.sendmmsg, "sendmmsg");
                    break;
                }
                _ => return (Err(error), syscalls),
            }
        }
    }
    let mut sent = 0;
    while sent < hdrs.len() {
        syscalls += 1;
        // SAFETY: as above, for one header; `sendmsg` only reads it.
        let rc = unsafe { libc::sendmsg(fd.as_raw_fd(), &hdrs[sent].msg_hdr, 0) };
        if rc >= 0 {
            hdrs[sent].msg_len = rc as _;
            sent += 1;
            continue;
        }
        let error = io::Error::last_os_error();
        if error.kind() == io::ErrorKind::Interrupted {
            continue;
        }
        if sent == 0 {
            return (Err(error), syscalls);
        }
        break;
    }
    (Ok(sent), syscalls)
}

/// Receives into `hdrs`, setting each filled message's `msg_len`, `msg_namelen`,
/// `msg_controllen` and `msg_flags`. Returns the messages received (at least one)
/// or the error, and the system calls made.
fn recvmmsg(
    fd: BorrowedFd<'_>,
    state: &State,
    hdrs: &mut [libc::mmsghdr],
) -> (io::Result<usize>, usize) {
    let mut syscalls = 0;
    if state.recvmmsg.load(Relaxed) {
        loop {
            #[cfg(test)]
            if state.hooks.no_mmsg.load(Relaxed) {
                State::mmsg_missing(&state.recvmmsg, "recvmmsg");
                break;
            }
            syscalls += 1;
            // SAFETY: `hdrs` is a valid array of `hdrs.len()` headers; each points at
            // its own name storage, one iovec over a caller's buffer and a control
            // buffer, all with the lengths given and alive across the call. The socket
            // is non-blocking and no timeout is passed.
            let rc = unsafe {
                libc::recvmmsg(
                    fd.as_raw_fd(),
                    hdrs.as_mut_ptr(),
                    hdrs.len() as _,
                    0,
                    std::ptr::null_mut(),
                )
            };
            if rc >= 0 {
                return (Ok(rc as usize), syscalls);
            }
            let error = io::Error::last_os_error();
            match error.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::ENOSYS) => {
                    State::mmsg_missing(&state.recvmmsg, "recvmmsg");
                    break;
                }
                _ => return (Err(error), syscalls),
            }
        }
    }
    let mut got = 0;
    while got < hdrs.len() {
        syscalls += 1;
        // SAFETY: as above, for one header.
        let rc = unsafe { libc::recvmsg(fd.as_raw_fd(), &mut hdrs[got].msg_hdr, 0) };
        if rc >= 0 {
            hdrs[got].msg_len = rc as _;
            got += 1;
            continue;
        }
        let error = io::Error::last_os_error();
        if error.kind() == io::ErrorKind::Interrupted {
            continue;
        }
        if got == 0 {
            return (Err(error), syscalls);
        }
        break;
    }
    (Ok(got), syscalls)
}
