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

use crate::{quark_listen, quark_listen_pem, quark_ready};
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

/// `quark_client`.
pub fn client(addr: &CStr, flags: u32) -> i64 {
    // SAFETY: a NUL-terminated string borrowed for the call.
    unsafe { crate::quark_client(addr.as_ptr(), flags) }
}

/// Which endpoint a [`connect`] uses.
#[derive(Clone, Copy, Debug)]
pub enum Via {
    /// One of its own, made with these flags (`quark_connect_flags`; 0 is
    /// `quark_connect_with`).
    Own(u32),
    /// This endpoint handle (`quark_connect_on`).
    Endpoint(i64),
    /// This endpoint handle, with the roots as PEM text rather than a
    /// file's name (`quark_connect_on_pem`).
    EndpointPem(i64),
}

/// `quark_connect_flags`, `quark_connect_on` or `quark_connect_on_pem`, as
/// `via` says; `ca` is the CA file's name, or with `Via::EndpointPem` its
/// PEM text (`None` for a NULL `ca` or `ciphers`).
pub fn connect(
    via: Via,
    addr: &CStr,
    server_name: &CStr,
    alpn: &CStr,
    insecure: bool,
    ca: Option<&CStr>,
    ciphers: Option<&CStr>,
) -> i64 {
    let ptr = |s: Option<&CStr>| s.map_or(std::ptr::null(), CStr::as_ptr);
    let (addr, name, alpn) = (addr.as_ptr(), server_name.as_ptr(), alpn.as_ptr());
    let (insecure, ca, ciphers) = (i32::from(insecure), ptr(ca), ptr(ciphers));
    // SAFETY: the strings are NUL-terminated and borrowed for the call; the
    // optional ones are such a string or NULL, as the calls allow.
    unsafe {
        match via {
            Via::Own(flags) => {
                crate::quark_connect_flags(addr, name, alpn, insecure, ca, ciphers, flags)
            }
            Via::Endpoint(ep) => {
                crate::quark_connect_on(ep, addr, name, alpn, insecure, ca, ciphers)
            }
            Via::EndpointPem(ep) => {
                crate::quark_connect_on_pem(ep, addr, name, alpn, insecure, ca, ciphers)
            }
        }
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

/// `quark_conn_stats` of `conn`.
pub fn conn_stats(conn: i64) -> Result<crate::QuarkConnStats, i64> {
    let mut out = crate::QuarkConnStats::default();
    let size = std::mem::size_of_val(&out);
    // SAFETY: `out` is a writable `QuarkConnStats` of `size` bytes borrowed
    // exclusively for the call.
    let rc = unsafe { crate::quark_conn_stats(conn, &mut out, size) };
    if rc < 0 { Err(i64::from(rc)) } else { Ok(out) }
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

/// `quark_stream_write_ref` of bytes that outlive every stream: nothing to
/// release, nothing copied (for 4 KiB or more).
pub fn stream_write_static(stream: i64, buf: &'static [u8]) -> i64 {
    // SAFETY: `buf` is `buf.len()` readable bytes, valid and unchanged for
    // the life of the program, so no release is needed.
    unsafe {
        crate::quark_stream_write_ref(stream, buf.as_ptr(), buf.len(), None, std::ptr::null_mut())
    }
}

/// `quark_stream_write_ref_fin` of static bytes: as [`stream_write_static`],
/// ending the stream once all of `buf` is taken.
pub fn stream_write_static_fin(stream: i64, buf: &'static [u8]) -> i64 {
    // SAFETY: as in `stream_write_static`.
    unsafe {
        crate::quark_stream_write_ref_fin(
            stream,
            buf.as_ptr(),
            buf.len(),
            None,
            std::ptr::null_mut(),
        )
    }
}

/// `quark_stream_writev` of `parts` (as if joined), ending the stream once
/// all are taken when `fin`.
pub fn stream_writev<const N: usize>(stream: i64, parts: [&[u8]; N], fin: bool) -> i64 {
    let iov = parts.map(|p| crate::QuarkIovec {
        base: p.as_ptr(),
        len: p.len(),
    });
    // SAFETY: `iov` is `N` buffers, each `len` readable bytes of a slice
    // borrowed (unchanged) for the call.
    unsafe { crate::quark_stream_writev(stream, iov.as_ptr(), N, i32::from(fin)) }
}

/// `quark_process_ready`: how many handles went into `out`, and whether the
/// endpoint wants another round soon (or the negative error).
pub fn process_ready(handle: i64, timeout_ms: i32, out: &mut [i64]) -> Result<(usize, bool), i64> {
    let mut more = 0i32;
    // SAFETY: `out` has room for its length; `more` is a writable i32.
    let n = unsafe {
        crate::quark_process_ready(handle, timeout_ms, out.as_mut_ptr(), out.len(), &mut more)
    };
    if n < 0 {
        return Err(n);
    }
    Ok((n as usize, more != 0))
}

/// `quark_stream_read_with`: `f` sees each piece in place.
pub fn stream_read_with<F: FnMut(&[u8])>(stream: i64, max: usize, mut f: F) -> i64 {
    let arg = (&raw mut f).cast::<std::ffi::c_void>();
    crate::quark_stream_read_with(stream, max, Some(visit::<F>), arg)
}

/// The visitor of [`stream_read_with`]: `arg` is the caller's `&mut F`.
extern "C" fn visit<F: FnMut(&[u8])>(arg: *mut std::ffi::c_void, data: *const u8, len: usize) {
    // SAFETY: `arg` is the caller's `&mut F`, alive and unaliased for the
    // call; libquark passes `len` readable bytes at `data` (non-null).
    let (f, piece) = unsafe { (&mut *arg.cast::<F>(), std::slice::from_raw_parts(data, len)) };
    f(piece);
}

/// `quark_stream_read_with_fin`: `f` sees each piece in place; the count
/// (or the negative error) and whether the stream has ended.
pub fn stream_read_with_fin<F: FnMut(&[u8])>(stream: i64, max: usize, mut f: F) -> (i64, bool) {
    let mut fin = 0i32;
    let arg = (&raw mut f).cast::<std::ffi::c_void>();
    // SAFETY: `fin` is a writable i32 borrowed for the call.
    let n =
        unsafe { crate::quark_stream_read_with_fin(stream, max, Some(visit::<F>), arg, &mut fin) };
    (n, fin != 0)
}

/// The table slot of an open handle: below 2^20 and, like a file descriptor,
/// unique among the open handles (a closed handle's slot is reused), so a
/// caller can keep per-handle state in an array indexed by it.
pub fn handle_index(handle: i64) -> usize {
    (handle & 0xffff_ffff) as usize
}

/// A hasher for handles, for maps keyed by them ([`HandleMap`]): handles are
/// distinct integers libquark made, not peer input, so one multiply spreads
/// them (SipHash cost ~100 instructions a lookup, several per request).
#[derive(Default, Clone, Copy, Debug)]
pub struct HandleHasher(u64);

impl std::hash::Hasher for HandleHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
    }

    fn write_i64(&mut self, n: i64) {
        // The slot (low bits) and the generation, mixed into the top bits
        // that hashbrown's probing uses too.
        self.0 = (n as u64 ^ (n as u64) >> 29).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// A map keyed by handles.
pub type HandleMap<V> =
    std::collections::HashMap<i64, V, std::hash::BuildHasherDefault<HandleHasher>>;

/// `quark_strerror` as a Rust string.
pub fn strerror(code: i64) -> &'static str {
    let code = i32::try_from(code).unwrap_or(i32::MIN);
    // SAFETY: `quark_strerror` never returns NULL, and its strings are
    // static, NUL-terminated ASCII.
    let text = unsafe { CStr::from_ptr(crate::quark_strerror(code)) };
    text.to_str().unwrap_or("unknown error")
}

/// How many connections endpoint `handle` still holds, closing and draining
/// ones included (for tests and leak checks: nothing left behind after its
/// connections closed); a negative error for a bad or non-endpoint handle.
pub fn connection_count(handle: i64) -> i64 {
    crate::object::entry(|| match &crate::table::get(handle)?.object {
        crate::object::Object::Endpoint(e) => Ok(e.connection_count() as i64),
        _ => Err(QuarkError::Inval),
    })
}
