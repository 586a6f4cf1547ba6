//! What a handle stands for, and the library's one runtime.

use std::ffi::{CStr, c_char};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use quark::{Connection, Endpoint, RecvStream, SendStream};
use tokio::runtime::Runtime;

use crate::error::QuarkError;

/// How long closing a connection waits for the peer to acknowledge what was
/// written (like SO_LINGER), and closing an endpoint for its connections to end.
pub(crate) const LINGER: Duration = Duration::from_secs(3);

/// The object behind a handle.
pub(crate) enum Object {
    Endpoint(Endpoint),
    Connection(Conn),
    Stream(Stream),
}

/// A connection, with the client endpoint `quark_connect` made for it.
pub(crate) struct Conn {
    pub(crate) conn: Connection,
    pub(crate) own_endpoint: Option<Endpoint>,
}

/// A bidirectional stream. Each half has its own lock so one thread can read
/// while another writes.
pub(crate) struct Stream {
    pub(crate) send: Mutex<SendStream>,
    pub(crate) recv: Mutex<RecvStream>,
}

/// Lock a half, ignoring poisoning: a caught panic leaves the stream usable
/// or failing with a typed error, never unsound.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The runtime every call blocks on, made on first use; its worker thread
/// drives the endpoints between calls.
pub(crate) fn runtime() -> Result<&'static Runtime, QuarkError> {
    static RUNTIME: OnceLock<Option<Runtime>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("quark-ffi")
                .enable_all()
                .build()
                .ok()
        })
        .as_ref()
        .ok_or(QuarkError::Io)
}

/// Run one entry point: its error, or a caught panic, becomes a negative code.
pub(crate) fn entry(f: impl FnOnce() -> Result<i64, QuarkError>) -> i64 {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => e as i64,
        Err(_) => QuarkError::Internal as i64,
    }
}

/// As [`entry`] for calls that return only a status.
pub(crate) fn entry_status(f: impl FnOnce() -> Result<(), QuarkError>) -> i32 {
    entry(|| f().map(|()| 0)) as i32
}

/// A C string argument as UTF-8.
///
/// # Safety
/// `p` is null or points to a NUL-terminated string that outlives the call.
pub(crate) unsafe fn c_str<'a>(p: *const c_char) -> Result<&'a str, QuarkError> {
    if p.is_null() {
        return Err(QuarkError::Inval);
    }
    // SAFETY: not null, and the caller promises a NUL-terminated string
    // valid for the call (the contract of every `const char *` in quark.h).
    let s = unsafe { CStr::from_ptr(p) };
    s.to_str().map_err(|_| QuarkError::Inval)
}

/// A nullable C string argument.
///
/// # Safety
/// As [`c_str`].
pub(crate) unsafe fn c_str_opt<'a>(p: *const c_char) -> Result<Option<&'a str>, QuarkError> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: forwarded contract of the caller.
    unsafe { c_str(p) }.map(Some)
}
