//! Readiness for event loops: one file descriptor per endpoint that polls
//! readable while any of its handles is ready, and the list of which.
//!
//! A non-blocking call that returns `QUARK_ERROR_AGAIN` leaves the handle's
//! waker with what it waited for (an incoming connection, a stream, data,
//! send credit). When that arrives the waker puts the handle on its
//! endpoint's ready list and, if the list was empty, writes one byte to a
//! socket pair whose other end is the descriptor C polls. `quark_ready`
//! drains the list and, once it is empty, that byte. Like EPOLLET: a handle
//! is listed once per wait, so a caller retries it until `QUARK_ERROR_AGAIN`.

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::{Mutex, MutexGuard};

use crate::call::handle_index;
use crate::driven::Driven;
use crate::error::QuarkError;
use crate::object::entry;
use crate::table;
use crate::tls_cache::TlsCache;

/// The ready list of one endpoint and the descriptor that signals it.
pub(crate) struct Ready {
    inner: Mutex<Inner>,
    signal: Signal,
    /// The TLS configuration the endpoint's `quark_connect_on`s share.
    pub(crate) tls: TlsCache,
    /// `QUARK_FLAG_NONBLOCKING`: the endpoint's new handles start non-blocking.
    new_nonblocking: AtomicBool,
}

/// What makes the descriptor C polls readable.
enum Signal {
    /// Threaded mode: a byte in a socket pair while the list is not empty;
    /// C polls `read_end`.
    Pair {
        read_end: UnixStream,
        write_end: UnixStream,
    },
    /// Caller-driven mode: the list fills only inside the caller's own calls
    /// (`quark_process`), so nothing signals it; C polls the endpoint's
    /// socket and timer.
    Driven(Box<Driven>),
}

#[derive(Default)]
struct Inner {
    /// Ready handles in the order they became ready, each once: at most one
    /// entry per open handle, so bounded by the handle table.
    order: Vec<i64>,
    /// By the handle's table slot: the handle listed there, 0 if none (no
    /// hashing; as long as the highest slot listed, bounded by the table).
    listed: Vec<i64>,
    /// A byte is in the socket pair, not yet read back.
    signalled: bool,
}

impl Ready {
    pub(crate) fn new() -> Result<Arc<Self>, QuarkError> {
        let (read_end, write_end) = UnixStream::pair().map_err(|_| QuarkError::Io)?;
        Ok(Arc::new(Ready {
            inner: Mutex::new(Inner::default()),
            signal: Signal::Pair {
                read_end,
                write_end,
            },
            tls: TlsCache::default(),
            new_nonblocking: AtomicBool::new(false),
        }))
    }

    /// The ready list of a caller-driven endpoint.
    pub(crate) fn driven(driven: Driven) -> Arc<Self> {
        Arc::new(Ready {
            inner: Mutex::new(Inner::default()),
            signal: Signal::Driven(Box::new(driven)),
            tls: TlsCache::default(),
            new_nonblocking: AtomicBool::new(false),
        })
    }

    /// `QUARK_FLAG_NONBLOCKING`: handles made on the endpoint from now on
    /// start in non-blocking mode.
    pub(crate) fn set_new_nonblocking(&self) {
        self.new_nonblocking.store(true, Ordering::Relaxed);
    }

    /// Whether a new handle of this endpoint starts non-blocking.
    pub(crate) fn new_nonblocking(&self) -> bool {
        self.new_nonblocking.load(Ordering::Relaxed)
    }

    /// The endpoint's caller-driven part, if it is caller-driven.
    pub(crate) fn as_driven(&self) -> Option<&Driven> {
        match &self.signal {
            Signal::Driven(d) => Some(d),
            Signal::Pair { .. } => None,
        }
    }

    /// The descriptor C polls.
    fn raw_fd(&self) -> RawFd {
        match &self.signal {
            Signal::Pair { read_end, .. } => read_end.as_raw_fd(),
            Signal::Driven(d) => d.fd(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock()
    }

    pub(crate) fn mark(&self, handle: i64) {
        let mut inner = self.lock();
        let i = handle_index(handle);
        if inner.listed.len() <= i {
            inner.listed.resize(i + 1, 0);
        }
        if inner.listed[i] == handle {
            return;
        }
        inner.listed[i] = handle;
        inner.order.push(handle);
        if let Signal::Pair { write_end, .. } = &self.signal
            && !inner.signalled
        {
            // One byte at most is ever pending, so the write cannot block.
            inner.signalled = (&*write_end).write_all(&[1]).is_ok();
        }
    }

    /// Whether any handle is listed.
    pub(crate) fn has_listed(&self) -> bool {
        !self.lock().order.is_empty()
    }

    /// Move up to `out.len()` ready handles into `out`; how many.
    fn drain(&self, out: &mut [i64]) -> usize {
        let mut inner = self.lock();
        let Inner {
            order,
            listed,
            signalled,
        } = &mut *inner;
        // Nothing listed (most rounds of an event loop): no copying.
        if order.is_empty() && !*signalled {
            return 0;
        }
        let n = out.len().min(order.len());
        for (slot, &h) in out.iter_mut().zip(&order[..n]) {
            *slot = h;
            // A closed handle's slot may list a new handle meanwhile.
            if let Some(l) = listed.get_mut(handle_index(h))
                && *l == h
            {
                *l = 0;
            }
        }
        if n == order.len() {
            order.clear();
        } else {
            order.drain(..n);
        }
        if let Signal::Pair { read_end, .. } = &self.signal
            && inner.order.is_empty()
            && inner.signalled
        {
            // The byte was written under this lock: the read finds it at once.
            let mut byte = [0u8; 1];
            if (&*read_end).read_exact(&mut byte).is_ok() {
                inner.signalled = false;
            }
        }
        n
    }

    /// A duplicate of the descriptor C polls (for [`crate::call::ready_fd`]).
    pub(crate) fn dup_fd(&self) -> std::io::Result<std::os::fd::OwnedFd> {
        // SAFETY: the descriptor stays open while `self` lives, and the
        // borrow ends with the duplicate made.
        let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(self.raw_fd()) };
        fd.try_clone_to_owned()
    }
}

/// A file descriptor that polls readable (poll / epoll / select) while any
/// handle of `handle`'s endpoint is on its ready list. Every handle of one
/// endpoint (its connections and their streams) gives the same descriptor;
/// a connection made by `quark_connect` has an endpoint of its own. The
/// descriptor belongs to the library: do not read or close it; it stays
/// valid until the endpoint's last handle is closed.
///
/// A caller-driven endpoint (`QUARK_FLAG_CALLER_DRIVEN`) gives instead an
/// epoll descriptor that polls readable when its UDP socket has datagrams
/// or its timer expired: then call `quark_process`, which fills the ready
/// list. Its readiness does not follow the ready list.
///
/// Thread safety: safe from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn quark_ready_fd(handle: i64) -> i32 {
    entry(|| Ok(i64::from(table::get(handle)?.ready.raw_fd()))) as i32
}

/// Take up to `cap` handles off the ready list of `handle`'s endpoint into
/// `out`, oldest first; returns how many (0 when none). A handle is listed
/// when a non-blocking call on it returned `QUARK_ERROR_AGAIN` and what it
/// waited for has since arrived; call it again until it gives
/// `QUARK_ERROR_AGAIN`. A listed handle may have been closed meanwhile
/// (calls on it give `QUARK_ERROR_BAD_HANDLE`). The descriptor of
/// `quark_ready_fd` stops polling readable once the list is empty.
///
/// Thread safety: safe from any thread; each ready handle goes to one caller.
///
/// # Safety
/// `out` points to `cap` writable `int64_t`s (it may be NULL when `cap` is 0).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quark_ready(handle: i64, out: *mut i64, cap: usize) -> i64 {
    entry(|| {
        let h = table::get(handle)?;
        // SAFETY: the caller's contract.
        unsafe { drain_into(&h.ready, out, cap) }
    })
}

/// `quark_ready`'s work once the handle is looked up.
///
/// # Safety
/// As `quark_ready`.
pub(crate) unsafe fn drain_into(
    ready: &Ready,
    out: *mut i64,
    cap: usize,
) -> Result<i64, QuarkError> {
    if cap == 0 {
        return Ok(0);
    }
    if out.is_null() || cap > isize::MAX as usize / 8 {
        return Err(QuarkError::Inval);
    }
    // SAFETY: non-null, and the caller promises `cap` writable, aligned
    // int64_t slots that nothing else touches during the call.
    let out = unsafe { std::slice::from_raw_parts_mut(out, cap) };
    Ok(ready.drain(out) as i64)
}
