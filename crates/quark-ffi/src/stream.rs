//! Stream reads, writes and shutdown.

use std::task::Poll;

use crate::error::QuarkError;
use crate::object::{Handle, Object, Stream, entry, entry_status, lock};
use crate::table;

pub(crate) fn stream_of(handle: &Handle) -> Result<&Stream, QuarkError> {
    match &handle.object {
        Object::Stream(s) => Ok(s),
        _ => Err(QuarkError::WrongKind),
    }
}

/// The handle of `stream` for a call on `len` bytes at `buf`, after the
/// checks every such call makes; `None` when `len` is 0 (nothing to do).
pub(crate) fn for_bytes(
    stream: i64,
    buf: *const u8,
    len: usize,
) -> Result<Option<table::Ref>, QuarkError> {
    let handle = table::get(stream)?;
    stream_of(&handle)?;
    if len == 0 {
        return Ok(None);
    }
    if buf.is_null() || len > isize::MAX as usize {
        return Err(QuarkError::Inval);
    }
    Ok(Some(handle))
}

/// Block until data arrives on `stream`; copies up to `len` bytes to `buf`
/// and returns how many, `0` at the end of the stream (the peer's FIN), or
/// a negative error (`QUARK_ERROR_RESET` when the peer reset it). Received
/// data is credited to the peer's flow control as it is read.
///
/// Thread safety: safe from any thread; concurrent reads of one stream are
/// serialised; a read and a write may run at once from two threads.
///
/// # Safety
/// `buf` points to `len` writable bytes (it may be NULL when `len` is 0).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quark_stream_read(stream: i64, buf: *mut u8, len: usize) -> i64 {
    entry(|| {
        let Some(handle) = for_bytes(stream, buf.cast_const(), len)? else {
            return Ok(0);
        };
        let s = stream_of(&handle)?;
        // SAFETY: non-null, and the caller promises `len` writable bytes
        // that nothing else touches during the call.
        let buf = unsafe { std::slice::from_raw_parts_mut(buf, len) };
        let mut recv = handle.lock_half(s.recv.as_ref().ok_or(QuarkError::WrongKind)?)?;
        match handle.run(recv.read(buf))?? {
            Some(n) => Ok(n as i64),
            None => Ok(0),
        }
    })
}

/// Write all `len` bytes of `buf` to `stream`, blocking while flow control
/// or the send buffer is full; returns `len` (in non-blocking mode: what
/// fitted, at least 1, or `QUARK_ERROR_AGAIN`) or a negative error
/// (`QUARK_ERROR_STOPPED` when the peer sent STOP_SENDING,
/// `QUARK_ERROR_SHUTDOWN` after `quark_stream_shutdown`).
///
/// Thread safety: safe from any thread; concurrent writes to one stream
/// are serialised (each call's bytes stay contiguous).
///
/// # Safety
/// `buf` points to `len` readable bytes (it may be NULL when `len` is 0).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quark_stream_write(stream: i64, buf: *const u8, len: usize) -> i64 {
    entry(|| {
        let Some(handle) = for_bytes(stream, buf, len)? else {
            return Ok(0);
        };
        let s = stream_of(&handle)?;
        // SAFETY: non-null, and the caller promises `len` readable bytes
        // that stay unchanged during the call.
        let buf = unsafe { std::slice::from_raw_parts(buf, len) };
        let mut send = handle.lock_half(s.send.as_ref().ok_or(QuarkError::Shutdown)?)?;
        if handle.is_nonblocking() {
            // Like a non-blocking socket: take what fits now, maybe less than `len`.
            let n = handle.run(std::future::poll_fn(|cx| send.poll_write_buf(cx, buf)))??;
            return Ok(n as i64);
        }
        handle.run(send.write_all(buf))??;
        Ok(len as i64)
    })
}

/// End the sending direction of `stream` (FIN after what was written), like
/// `shutdown(SHUT_WR)`; reading continues. Does not block. Calling it twice
/// is harmless.
///
/// Thread safety: safe from any thread; waits for a write in progress on
/// the same stream to finish first.
#[unsafe(no_mangle)]
pub extern "C" fn quark_stream_shutdown(stream: i64) -> i32 {
    entry_status(|| shutdown(stream))
}

/// `quark_stream_shutdown` inside a call.
pub(crate) fn shutdown(stream: i64) -> Result<(), QuarkError> {
    let handle = table::get(stream)?;
    let s = stream_of(&handle)?;
    lock(s.send.as_ref().ok_or(QuarkError::Shutdown)?).finish()?;
    Ok(())
}

/// One buffer of a `quark_stream_writev`, as `struct iovec` of `writev(2)`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct QuarkIovec {
    /// The first byte (may be NULL when `len` is 0).
    pub base: *const u8,
    /// How many bytes.
    pub len: usize,
}

/// The most buffers one `quark_stream_writev` takes (`IOV_MAX` of `writev(2)`).
pub const QUARK_IOV_MAX: usize = 1024;

/// Write the `iovcnt` buffers of `iov` to `stream` in order, as if joined
/// (like `writev(2)`), and with `fin` non-zero end the sending direction once
/// all are taken (as `quark_stream_shutdown`, in the same call): a message's
/// head, body and end in one call, the FIN leaving with the last bytes. The
/// bytes are copied, as with `quark_stream_write`. Returns how many bytes
/// were taken: all of them (blocking while flow control or the send buffer
/// is full), or in non-blocking mode what fitted, at least 1, or
/// `QUARK_ERROR_AGAIN`; a partial write does not end the stream (write the
/// rest with this call again). With no bytes at all (`iovcnt` 0 or every
/// `len` 0) it returns 0 and, with `fin`, only ends the stream. More than
/// `QUARK_IOV_MAX` buffers is `QUARK_ERROR_INVAL`. Errors as
/// `quark_stream_write`.
///
/// Thread safety: as `quark_stream_write`.
///
/// # Safety
/// `iov` points to `iovcnt` `QuarkIovec`s (it may be NULL when `iovcnt` is
/// 0), each pointing to `len` readable bytes (`base` may be NULL when `len`
/// is 0), all unchanged during the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quark_stream_writev(
    stream: i64,
    iov: *const QuarkIovec,
    iovcnt: usize,
    fin: i32,
) -> i64 {
    entry(|| {
        let handle = table::get(stream)?;
        let s = stream_of(&handle)?;
        if iovcnt > QUARK_IOV_MAX || (iov.is_null() && iovcnt > 0) {
            return Err(QuarkError::Inval);
        }
        let iov = match iovcnt {
            0 => &[][..],
            // SAFETY: non-null, and the caller promises `iovcnt` readable
            // `QuarkIovec`s, unchanged during the call.
            _ => unsafe { std::slice::from_raw_parts(iov, iovcnt) },
        };
        let mut total = 0usize;
        for v in iov {
            if v.len > 0 && v.base.is_null() {
                return Err(QuarkError::Inval);
            }
            total = total
                .checked_add(v.len)
                .filter(|&t| t <= isize::MAX as usize)
                .ok_or(QuarkError::Inval)?;
        }
        let slice = |v: &QuarkIovec| -> &[u8] {
            if v.len == 0 {
                return &[];
            }
            // SAFETY: non-null (checked above), and the caller promises `len`
            // readable bytes, unchanged during the call.
            unsafe { std::slice::from_raw_parts(v.base, v.len) }
        };
        // A head, a body: on the stack; more buffers in a vector.
        let mut few: [&[u8]; 4] = [&[]; 4];
        let many: Vec<&[u8]>;
        let parts: &[&[u8]] = if iov.len() <= few.len() {
            for (p, v) in few.iter_mut().zip(iov) {
                *p = slice(v);
            }
            &few[..iov.len()]
        } else {
            many = iov.iter().map(slice).collect();
            &many
        };
        let mut send = handle.lock_half(s.send.as_ref().ok_or(QuarkError::Shutdown)?)?;
        let fin = fin != 0;
        if !handle.is_nonblocking() {
            handle.run(send.write_parts(parts, fin))??;
            return Ok(total as i64);
        }
        // Like a non-blocking socket: what fits now, maybe less than all.
        let mut at = (0, 0);
        let n = handle.run(std::future::poll_fn(|cx| {
            match send.poll_write_parts(cx, parts, &mut at, fin) {
                Poll::Ready(r) => Poll::Ready(r.map(|()| total)),
                Poll::Pending => match taken(parts, at) {
                    0 => Poll::Pending,
                    n => Poll::Ready(Ok(n)),
                },
            }
        }))??;
        Ok(n as i64)
    })
}

/// How many bytes of `parts` lie before `at` (part, offset).
fn taken(parts: &[&[u8]], at: (usize, usize)) -> usize {
    parts[..at.0].iter().map(|p| p.len()).sum::<usize>() + at.1
}
