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
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::Relaxed;

use super::State;

/// Sends `hdrs`, setting each sent message's `msg_len`. Returns the messages sent
/// (at least one) or the first message's error, and the system calls made.
fn sendmmsg(
    fd: BorrowedFd<'_>,
    state: &State,
    hdrs: &mut [libc::mmsghdr],
) -> (io::Result<usize>, usize) {
    let fd = fd.as_raw_fd();
    batched(
        (&state.sendmmsg, "sendmmsg"),
        state,
        hdrs,
        // SAFETY: `hdrs` is a valid, initialised array of `hdrs.len()` headers
        // whose names, iovecs and control buffers point at memory that outlives
        // this call; the kernel only writes `msg_len`.
        |hdrs| unsafe { libc::sendmmsg(fd, hdrs.as_mut_ptr(), hdrs.len() as _, 0) },
        // SAFETY: as above, for one header; `sendmsg` only reads it.
        |hdr| unsafe { libc::sendmsg(fd, &hdr.msg_hdr, 0) },
    )
}

/// Receives into `hdrs`, setting each filled message's `msg_len`, `msg_namelen`,
/// `msg_controllen` and `msg_flags`. Returns the messages received (at least one)
/// or the error, and the system calls made.
fn recvmmsg(
    fd: BorrowedFd<'_>,
    state: &State,
    hdrs: &mut [libc::mmsghdr],
) -> (io::Result<usize>, usize) {
    let fd = fd.as_raw_fd();
    batched(
        (&state.recvmmsg, "recvmmsg"),
        state,
        hdrs,
        // SAFETY: `hdrs` is a valid array of `hdrs.len()` headers; each points at
        // its own name storage, one iovec over a caller's buffer and a control
        // buffer, all with the lengths given and alive across the call. The socket
        // is non-blocking and no timeout is passed.
        |hdrs| unsafe {
            libc::recvmmsg(
                fd,
                hdrs.as_mut_ptr(),
                hdrs.len() as _,
                0,
                std::ptr::null_mut(),
            )
        },
        // SAFETY: as above, for one header.
        |hdr| unsafe { libc::recvmsg(fd, &mut hdr.msg_hdr, 0) },
    )
}

/// One batched call (`batch`) while the kernel has it (`supported`, cleared at
/// the first `ENOSYS`), else a loop of single calls (`single`) with the same
/// contract: the messages done (at least one) or the first message's error,
/// and the system calls made. `EINTR` retries, and so, once, does an error
/// that may be an error report's rather than the call's (`State::report_error`).
fn batched(
    (supported, name): (&AtomicBool, &'static str),
    state: &State,
    hdrs: &mut [libc::mmsghdr],
    batch: impl Fn(&mut [libc::mmsghdr]) -> libc::c_int,
    single: impl Fn(&mut libc::mmsghdr) -> isize,
) -> (io::Result<usize>, usize) {
    let mut syscalls = 0;
    let mut retried = false;
    if supported.load(Relaxed) {
        loop {
            #[cfg(test)]
            if state.hooks.no_mmsg.load(Relaxed) {
                State::mmsg_missing(supported, name);
                break;
            }
            syscalls += 1;
            let rc = batch(hdrs);
            if rc >= 0 {
                return (Ok(rc as usize), syscalls);
            }
            let error = io::Error::last_os_error();
            match error.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::ENOSYS) => {
                    State::mmsg_missing(supported, name);
                    break;
                }
                _ if !retried && state.report_error(&error) => retried = true,
                _ => return (Err(error), syscalls),
            }
        }
    }
    let mut done = 0;
    while done < hdrs.len() {
        syscalls += 1;
        let rc = single(&mut hdrs[done]);
        if rc >= 0 {
            hdrs[done].msg_len = rc as _;
            done += 1;
            continue;
        }
        let error = io::Error::last_os_error();
        if error.kind() == io::ErrorKind::Interrupted {
            continue;
        }
        if !retried && state.report_error(&error) {
            retried = true;
            continue;
        }
        if done == 0 {
            return (Err(error), syscalls);
        }
        break;
    }
    (Ok(done), syscalls)
}
