//! Stream reads, writes and shutdown.

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
