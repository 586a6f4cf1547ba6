//! Safe Rust signatures for the `unsafe extern "C"` calls: slices and C
//! strings instead of raw pointers. Each wrapper only turns its arguments
//! into pointers and calls the C entry point, so a Rust caller that may not
//! use `unsafe` (the lab's `quic-c` adapter) crosses the same boundary a C
//! program does: the handle table, the caught panics, the library's runtime
//! and the copies into and out of the caller's buffers. The calls that take
//! no pointer (`quark_accept`, `quark_stream_open`, ...) are safe already
//! and are called directly.

use std::ffi::CStr;
use std::os::fd::OwnedFd;

use crate::error::QuarkError;

use crate::{quark_connect_with, quark_listen, quark_listen_pem, quark_ready};
use crate::{quark_stream_read, quark_stream_write};

/// `quark_listen`.
pub fn listen(addr: &CStr, cert_pem_path: &CStr, key_pem_path: &CStr, alpn: &CStr) -> i64 {
    // SAFETY: every pointer is a NUL-terminated string borrowed for the call.
    unsafe {
        quark_listen(
            addr.as_ptr(),
            cert_pem_path.as_ptr(),
            key_pem_path.as_ptr(),
            alpn.as_ptr(),
        )
    }
}

/// `quark_listen_pem`.
pub fn listen_pem(addr: &CStr, cert_pem: &CStr, key_pem: &CStr, alpn: &CStr) -> i64 {
    // SAFETY: every pointer is a NUL-terminated string borrowed for the call.
    unsafe {
        quark_listen_pem(
            addr.as_ptr(),
            cert_pem.as_ptr(),
            key_pem.as_ptr(),
            alpn.as_ptr(),
        )
    }
}

/// `quark_connect_with` (`None` for a NULL `ca_pem_path` or `ciphers`).
pub fn connect_with(
    addr: &CStr,
    server_name: &CStr,
    alpn: &CStr,
    insecure: bool,
    ca_pem_path: Option<&CStr>,
    ciphers: Option<&CStr>,
) -> i64 {
    let ptr = |s: Option<&CStr>| s.map_or(std::ptr::null(), CStr::as_ptr);
    // SAFETY: the strings are NUL-terminated and borrowed for the call; the
    // optional ones are such a string or NULL, as the call allows.
    unsafe {
        quark_connect_with(
            addr.as_ptr(),
            server_name.as_ptr(),
            alpn.as_ptr(),
            i32::from(insecure),
            ptr(ca_pem_path),
            ptr(ciphers),
        )
    }
}

/// `quark_listen_pem_flags`.
pub fn listen_pem_flags(
    addr: &CStr,
    cert_pem: &CStr,
    key_pem: &CStr,
    alpn: &CStr,
    flags: u32,
) -> i64 {
    // SAFETY: every pointer is a NUL-terminated string borrowed for the call.
    unsafe {
        crate::quark_listen_pem_flags(
            addr.as_ptr(),
            cert_pem.as_ptr(),
            key_pem.as_ptr(),
            alpn.as_ptr(),
            flags,
        )
    }
}

/// `quark_connect_flags` (`None` for a NULL `ca_pem_path` or `ciphers`).
pub fn connect_flags(
    addr: &CStr,
    server_name: &CStr,
    alpn: &CStr,
    insecure: bool,
    ca_pem_path: Option<&CStr>,
    ciphers: Option<&CStr>,
    flags: u32,
) -> i64 {
    let ptr = |s: Option<&CStr>| s.map_or(std::ptr::null(), CStr::as_ptr);
    // SAFETY: as `connect_with`.
    unsafe {
        crate::quark_connect_flags(
            addr.as_ptr(),
            server_name.as_ptr(),
            alpn.as_ptr(),
            i32::from(insecure),
            ptr(ca_pem_path),
            ptr(ciphers),
            flags,
        )
    }
}

/// `quark_client`.
pub fn client(addr: &CStr, flags: u32) -> i64 {
    // SAFETY: a NUL-terminated string borrowed for the call.
    unsafe { crate::quark_client(addr.as_ptr(), flags) }
}

/// `quark_connect_on` (`None` for a NULL `ca_pem_path` or `ciphers`).
pub fn connect_on(
    endpoint: i64,
    addr: &CStr,
    server_name: &CStr,
    alpn: &CStr,
    insecure: bool,
    ca_pem_path: Option<&CStr>,
    ciphers: Option<&CStr>,
) -> i64 {
    let ptr = |s: Option<&CStr>| s.map_or(std::ptr::null(), CStr::as_ptr);
    // SAFETY: as `connect_with`.
    unsafe {
        crate::quark_connect_on(
            endpoint,
            addr.as_ptr(),
            server_name.as_ptr(),
            alpn.as_ptr(),
            i32::from(insecure),
            ptr(ca_pem_path),
            ptr(ciphers),
        )
    }
}

/// `quark_on_work` for a Rust task: `waker` is woken whenever the
/// caller-driven endpoint of `handle` gets work for `quark_process`.
pub fn on_work(handle: i64, waker: std::task::Waker) -> Result<(), i64> {
    crate::options::on_work_waker(handle, waker).map_err(|e| e as i64)
}

/// The descriptor of `quark_ready_fd`, duplicated: the caller owns (and
/// closes) the copy, so an async runtime can register it safely (tokio's
/// `AsyncFd` or `UnixStream::from_std`) and it never refers to another file
/// after the endpoint's last handle is closed. Like `quark_ready_fd` it
/// polls readable while the endpoint's ready list is not empty; the caller
/// must not read from it (`quark_ready` drains it).
pub fn ready_fd(handle: i64) -> Result<OwnedFd, i64> {
    let h = crate::table::get(handle).map_err(|e| e as i64)?;
    h.ready.dup_fd().map_err(|_| QuarkError::Io as i64)
}

/// `quark_ready` into `out`.
pub fn ready(handle: i64, out: &mut [i64]) -> i64 {
    // SAFETY: `out` is `out.len()` writable, aligned `i64`s borrowed
    // exclusively for the call.
    unsafe { quark_ready(handle, out.as_mut_ptr(), out.len()) }
}

/// `quark_stream_read` into `buf`.
pub fn stream_read(stream: i64, buf: &mut [u8]) -> i64 {
    // SAFETY: `buf` is `buf.len()` writable bytes borrowed exclusively for the call.
    unsafe { quark_stream_read(stream, buf.as_mut_ptr(), buf.len()) }
}

/// `quark_stream_write` from `buf`.
pub fn stream_write(stream: i64, buf: &[u8]) -> i64 {
    // SAFETY: `buf` is `buf.len()` readable bytes, unchanged during the call.
    unsafe { quark_stream_write(stream, buf.as_ptr(), buf.len()) }
}

/// `quark_strerror` as a Rust string.
pub fn strerror(code: i64) -> &'static str {
    let code = i32::try_from(code).unwrap_or(i32::MIN);
    // SAFETY: `quark_strerror` never returns NULL, and its strings are
    // static, NUL-terminated ASCII.
    let text = unsafe { CStr::from_ptr(crate::quark_strerror(code)) };
    text.to_str().unwrap_or("unknown error")
}
