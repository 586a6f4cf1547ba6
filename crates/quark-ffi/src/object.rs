//! What a handle stands for, and the library's one runtime.

use std::ffi::{CStr, c_char};
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use parking_lot::{Mutex, MutexGuard};
use quark::{Connection, Endpoint, RecvStream, SendStream};
use tokio::runtime::Runtime;

use crate::error::QuarkError;
use crate::handshake::Handshake;
use crate::ready::Ready;

/// How long closing a connection waits for the peer to acknowledge what was
/// written (like SO_LINGER), and closing an endpoint for its connections to end.
pub(crate) const LINGER: Duration = Duration::from_secs(3);

/// What the table holds for a handle: its object and its mode.
pub(crate) struct Handle {
    pub(crate) object: Object,
    /// `quark_set_nonblocking`: calls that would wait return `QUARK_ERROR_AGAIN`.
    pub(crate) nonblocking: AtomicBool,
    /// The ready list of the endpoint this handle belongs to.
    pub(crate) ready: Arc<Ready>,
    /// The waker a non-blocking call leaves behind: one per handle, so a
    /// repeated call replaces its registration rather than adding one.
    pub(crate) waker: Waker,
}

/// The object behind a handle.
pub(crate) enum Object {
    Endpoint(Endpoint),
    Connection(Conn),
    Stream(Stream),
}

/// A connection, with the client endpoint `quark_connect` made for it.
pub(crate) struct Conn {
    /// Set once the handshake is done: at once, except after a non-blocking
    /// `quark_connect_on`.
    conn: OnceLock<Connection>,
    /// The handshake of a non-blocking `quark_connect_on` while under way.
    connecting: Mutex<Option<Handshake>>,
    /// Why that handshake failed, once it has.
    failed: OnceLock<QuarkError>,
    pub(crate) own_endpoint: Option<Endpoint>,
}

impl Conn {
    pub(crate) fn new(conn: Connection, own_endpoint: Option<Endpoint>) -> Self {
        Conn {
            conn: OnceLock::from(conn),
            connecting: Mutex::new(None),
            failed: OnceLock::new(),
            own_endpoint,
        }
    }

    /// A connection whose handshake is under way.
    pub(crate) fn connecting(connecting: Handshake) -> Self {
        Conn {
            conn: OnceLock::new(),
            connecting: Mutex::new(Some(connecting)),
            failed: OnceLock::new(),
            own_endpoint: None,
        }
    }

    /// The connection, if its handshake is done.
    pub(crate) fn get(&self) -> Option<&Connection> {
        self.conn.get()
    }

    /// The connection once its handshake is done (`QUARK_ERROR_CONNECT`,
    /// `_REFUSED` or `_UNREACHABLE` if it failed); one atomic load when it is.
    pub(crate) fn poll_established(
        &self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<&Connection, QuarkError>> {
        if let Some(c) = self.conn.get() {
            return Poll::Ready(Ok(c));
        }
        let mut connecting = lock(&self.connecting);
        if let Some(c) = self.conn.get() {
            // Another thread finished it meanwhile.
            return Poll::Ready(Ok(c));
        }
        let Some(pending) = connecting.as_mut() else {
            return Poll::Ready(Err(*self.failed.get().unwrap_or(&QuarkError::Connect)));
        };
        match std::pin::Pin::new(pending).poll(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(done) => {
                *connecting = None;
                match done {
                    Ok(c) => Poll::Ready(Ok(self.conn.get_or_init(|| c))),
                    Err(e) => Poll::Ready(Err(*self.failed.get_or_init(|| e))),
                }
            }
        }
    }

    /// [`Conn::poll_established`] as a future.
    pub(crate) async fn established(&self) -> Result<&Connection, QuarkError> {
        std::future::poll_fn(|cx| self.poll_established(cx)).await
    }
}

/// A stream: both halves for a bidirectional one, one for a unidirectional
/// one. Each half has its own lock so one thread can read while another writes.
pub(crate) struct Stream {
    pub(crate) send: Option<Mutex<SendStream>>,
    pub(crate) recv: Option<Mutex<RecvStream>>,
}

/// Lock `m` (parking_lot's: no poisoning; a caught panic leaves a stream
/// usable or failing with a typed error, never unsound).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock()
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

impl Handle {
    pub(crate) fn is_nonblocking(&self) -> bool {
        self.nonblocking.load(Ordering::Relaxed)
    }

    /// Lock a stream half; in non-blocking mode a half busy in another
    /// thread's call is `QUARK_ERROR_AGAIN` rather than a wait.
    pub(crate) fn lock_half<'a, T>(
        &self,
        m: &'a Mutex<T>,
    ) -> Result<MutexGuard<'a, T>, QuarkError> {
        if !self.is_nonblocking() {
            return Ok(lock(m));
        }
        m.try_lock().ok_or(QuarkError::Again)
    }

    /// Drive `fut` to its end; in non-blocking mode poll it once and give
    /// `QUARK_ERROR_AGAIN` if it would wait, leaving the handle's waker to
    /// put it on the ready list when it can go on (`ready.rs`). Dropping a pending accept or
    /// read loses nothing: what arrives stays queued for the next call.
    /// A caller-driven endpoint's handle runs the endpoint on the caller's
    /// thread while it waits (`driven.rs`).
    pub(crate) fn run<F: Future>(&self, fut: F) -> Result<F::Output, QuarkError> {
        // One poll of a connection's or stream's future takes quark's lock and
        // leaves a waker: no runtime context needed, so a caller-driven
        // endpoint's non-blocking calls skip entering one (~100 instructions).
        let _guard = match self.ready.as_driven() {
            Some(d) if !self.is_nonblocking() => {
                return d.block_on(fut, None).ok_or(QuarkError::Closed);
            }
            Some(_) => None,
            None if !self.is_nonblocking() => return Ok(runtime()?.block_on(fut)),
            None => Some(runtime()?.enter()),
        };
        let mut fut = std::pin::pin!(fut);
        match fut.as_mut().poll(&mut Context::from_waker(&self.waker)) {
            Poll::Ready(v) => Ok(v),
            Poll::Pending => Err(QuarkError::Again),
        }
    }
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
