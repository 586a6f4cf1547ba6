//! Stream calls without the copy at the boundary: a write that lends the
//! caller's bytes to quark until it no longer needs them (as msquic's
//! `StreamSend` keeps the buffer until its completion), and a read that hands
//! the received bytes to a callback in place (as lsquic's `readf`). Each
//! costs one copy less than `quark_stream_write` / `quark_stream_read`, the
//! same as quark's Rust `write_chunk` / `read_visit`.

use std::ffi::c_void;

use bytes::Bytes;

use crate::error::QuarkError;
use crate::object::entry;
use crate::stream::{for_bytes, stream_of};
use crate::table;

/// `release(arg)` of a `quark_stream_write_ref`.
type Release = extern "C" fn(*mut c_void);

/// Bytes lent by the caller of `quark_stream_write_ref`; dropping the last
/// reference gives them back.
struct Lent {
    ptr: *const u8,
    len: usize,
    release: Option<Release>,
    arg: usize,
}

// SAFETY: the caller of `quark_stream_write_ref` promises the bytes stay
// valid and unchanged until `release`, whichever thread ends up dropping
// them; `Lent` only reads them.
unsafe impl Send for Lent {}

impl AsRef<[u8]> for Lent {
    fn as_ref(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: non-null (checked before a `Lent` with len > 0 is made) and
        // valid for `len` bytes until `release`, which runs only in `drop`.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl Lent {
    /// The bytes of a loan without `release`, which the caller promises stay
    /// valid for as long as the endpoint (static data).
    fn forever(&self) -> &'static [u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: non-null and valid for `len` bytes; without `release` the
        // caller of `quark_stream_write_ref` promises they stay valid and
        // unchanged while the endpoint lives, and quark drops every piece
        // of a stream's data before its endpoint is gone.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl Drop for Lent {
    fn drop(&mut self) {
        if let Some(release) = self.release {
            release(self.arg as *mut c_void);
        }
    }
}

/// As `quark_stream_write`, but `buf` is lent rather than copied: libquark
/// keeps referring to the bytes it takes until the peer has acknowledged
/// them (or the stream is reset or closed), then calls `release(arg)`.
/// `release` (NULL for bytes that stay valid while the endpoint lives, such
/// as static data; then nothing is allocated for the loan)
/// is called exactly once per call, from whichever thread drops the last
/// reference: possibly before this call returns (an error,
/// `QUARK_ERROR_AGAIN`, or a piece under 4 KiB, which is copied anyway), or
/// later inside another call on the endpoint (`quark_process`,
/// `quark_close`). In non-blocking mode it may take only the first part of
/// `buf`: write the rest with another call.
///
/// Thread safety: as `quark_stream_write`; `release` must not call libquark.
///
/// # Safety
/// `buf` points to `len` readable bytes (it may be NULL when `len` is 0)
/// that stay valid and unchanged until `release(arg)` is called.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quark_stream_write_ref(
    stream: i64,
    buf: *const u8,
    len: usize,
    release: Option<extern "C" fn(*mut c_void)>,
    arg: *mut c_void,
) -> i64 {
    // SAFETY: the caller's contract, the same.
    unsafe { write_ref(stream, buf, len, release, arg, false) }
}

/// As `quark_stream_write_ref`, and once all of `buf` is taken, the sending
/// direction ends as with `quark_stream_shutdown`, in the same call (one
/// call less per message, and the FIN can leave with the last bytes). A
/// partial write (non-blocking mode) does not end it: write the rest with
/// this call again. With `len` 0 it only ends the stream.
///
/// Thread safety: as `quark_stream_write_ref`.
///
/// # Safety
/// As `quark_stream_write_ref`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quark_stream_write_ref_fin(
    stream: i64,
    buf: *const u8,
    len: usize,
    release: Option<extern "C" fn(*mut c_void)>,
    arg: *mut c_void,
) -> i64 {
    // SAFETY: the caller's contract, the same.
    unsafe { write_ref(stream, buf, len, release, arg, true) }
}

/// `quark_stream_write_ref`, ending the stream after it when `fin` and the
/// whole of `buf` was taken.
///
/// # Safety
/// As `quark_stream_write_ref`.
unsafe fn write_ref(
    stream: i64,
    buf: *const u8,
    len: usize,
    release: Option<Release>,
    arg: *mut c_void,
    fin: bool,
) -> i64 {
    // Made first, so every way out (an error, a caught panic) releases.
    let lent = Lent {
        ptr: buf,
        len: if buf.is_null() { 0 } else { len },
        release,
        arg: arg as usize,
    };
    entry(|| {
        let Some(handle) = for_bytes(stream, buf, len)? else {
            if fin {
                crate::stream::shutdown(stream)?;
            }
            return Ok(0);
        };
        let s = stream_of(&handle)?;
        let mut send = handle.lock_half(s.send.as_ref().ok_or(QuarkError::Shutdown)?)?;
        let chunk = match lent.release {
            Some(_) => Bytes::from_owner(lent),
            // Nothing to give back: no owner to allocate (one malloc and
            // free per call saved).
            None => Bytes::from_static(lent.forever()),
        };
        let n = if handle.is_nonblocking() {
            handle.run(std::future::poll_fn(|cx| send.poll_write_chunk(cx, &chunk)))??
        } else {
            handle.run(send.write_chunk(chunk))??;
            len
        };
        if fin && n == len {
            send.finish()?;
        }
        Ok(n as i64)
    })
}

/// As `quark_stream_read`, but the bytes are not copied: `visit(arg, data,
/// n)` is called with what has arrived in order, at most `max` bytes in
/// one or two pieces, pointing into libquark's receive buffer and valid
/// only during the callback. Returns how many bytes were visited, `0` at
/// the end of the stream, or a negative error (`QUARK_ERROR_AGAIN` in
/// non-blocking mode). The bytes are consumed (credited to the peer's flow
/// control) as with a read.
///
/// Thread safety: as `quark_stream_read`. `visit` runs under the
/// endpoint's lock: it must be short and must not call libquark.
#[unsafe(no_mangle)]
pub extern "C" fn quark_stream_read_with(
    stream: i64,
    max: usize,
    visit: Option<Visit>,
    arg: *mut c_void,
) -> i64 {
    entry(|| read_with(stream, max, visit, arg).map(|(n, _)| n))
}

/// As `quark_stream_read_with`, and `*fin` (when not NULL) tells whether
/// the stream has ended: 1 when the bytes visited were its last (the FIN
/// had arrived with them) or the call returned `0` at the end, else 0. A
/// reader that sees 1 has the whole stream and needs no further read for
/// the end (one call less per message); reading again returns `0`.
/// `*fin` is untouched on an error.
///
/// Thread safety: as `quark_stream_read_with`.
///
/// # Safety
/// `fin` is NULL or points to a writable `int32_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quark_stream_read_with_fin(
    stream: i64,
    max: usize,
    visit: Option<Visit>,
    arg: *mut c_void,
    fin: *mut i32,
) -> i64 {
    entry(|| {
        let (n, ended) = read_with(stream, max, visit, arg)?;
        if !fin.is_null() {
            // SAFETY: non-null: the caller promises a writable int32_t.
            unsafe { *fin = i32::from(ended) };
        }
        Ok(n)
    })
}

/// `visit(arg, data, len)` of a `quark_stream_read_with`.
type Visit = extern "C" fn(*mut c_void, *const u8, usize);

/// `quark_stream_read_with` inside a call: how many bytes were visited, and
/// whether the stream has ended (with them, or before).
fn read_with(
    stream: i64,
    max: usize,
    visit: Option<Visit>,
    arg: *mut c_void,
) -> Result<(i64, bool), QuarkError> {
    let handle = table::get(stream)?;
    let s = stream_of(&handle)?;
    let visit = visit.ok_or(QuarkError::Inval)?;
    if max == 0 {
        return Ok((0, false));
    }
    let mut recv = handle.lock_half(s.recv.as_ref().ok_or(QuarkError::WrongKind)?)?;
    let f = |piece: &[u8]| visit(arg, piece.as_ptr(), piece.len());
    match handle.run(recv.read_visit(max, f))?? {
        // quark marks the stream done when these bytes were its last.
        Some(n) => Ok((n as i64, recv.at_end())),
        None => Ok((0, true)),
    }
}
