//! `quark_close_nowait`: closing a connection without waiting, as `close(2)`
//! without `SO_LINGER` returns at once while the kernel still delivers what
//! was written. The endpoint keeps the connection until what was written is
//! acknowledged (at most `LINGER`), then closes it with code 0.
//!
//! An event loop closing many connections (a server, or a client making a
//! connection per transfer) otherwise needs a thread per blocking
//! `quark_close`, and that thread drives the caller-driven endpoint beside
//! the loop's own `quark_process`: a futex hand-off and a second thread
//! sending per connection.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use parking_lot::Mutex;
use quark::Connection;

use crate::object::{LINGER, Object, entry_status, lock, runtime};
use crate::table;

/// A caller-driven endpoint's connections closed without waiting, each with
/// its deadline. Bounded by the endpoint's connections: a handle closes once,
/// and its entry leaves once acknowledged, ended or past the deadline.
#[derive(Default)]
pub(crate) struct Lingering {
    conns: Mutex<Vec<(Connection, Instant)>>,
    /// Whether `conns` may be non-empty: `sweep` costs one load otherwise.
    any: AtomicBool,
}

impl Lingering {
    pub(crate) fn push(&self, conn: Connection) {
        let mut conns = lock(&self.conns);
        conns.push((conn, Instant::now() + LINGER));
        self.any.store(true, Ordering::Release);
    }

    /// After a round of the driver: close the connections whose data is
    /// acknowledged (or that ended, or whose deadline passed). Each
    /// acknowledgment arrives in a round, so each is seen in time.
    pub(crate) fn sweep(&self) {
        if !self.any.load(Ordering::Acquire) {
            return;
        }
        let mut conns = lock(&self.conns);
        let now = Instant::now();
        conns.retain(|(c, deadline)| {
            if drained(c) || now >= *deadline {
                c.close(0, b"");
                return false;
            }
            true
        });
        self.any.store(!conns.is_empty(), Ordering::Release);
    }
}

/// Nothing written waits for acknowledgement, streams' ends included (an
/// ended connection has nothing waiting).
fn drained(c: &Connection) -> bool {
    c.all_acked()
}

/// As `quark_close`, but never waits: a connection whose written data (and
/// streams' ends) the peer has acknowledged is closed (code 0) at once;
/// otherwise the endpoint keeps it until they are acknowledged, at most
/// 3 s, and then closes it, all while the endpoint runs (the library
/// thread, or for a caller-driven endpoint the caller's `quark_process`,
/// which must go on running for the close to be sent). Streams close as with `quark_close`.
/// A connection made by `quark_connect` / `quark_connect_flags` (with its
/// own client endpoint) and an endpoint handle close as with `quark_close`,
/// waiting, since their endpoint goes with them.
///
/// Thread safety: safe from any thread; exactly one of two racing closes of
/// the same handle succeeds.
#[unsafe(no_mangle)]
pub extern "C" fn quark_close_nowait(handle: i64) -> i32 {
    let own = table::get(handle).is_ok_and(|h| match &h.object {
        Object::Connection(c) => c.own_endpoint.is_some(),
        Object::Endpoint(_) => true,
        Object::Stream(_) => false,
    });
    if own {
        return crate::quark_close(handle);
    }
    entry_status(|| {
        let handle = table::remove(handle)?;
        let Object::Connection(c) = &handle.object else {
            return Ok(());
        };
        // A handshake still under way ends with the handle.
        let Some(conn) = c.get() else {
            return Ok(());
        };
        if drained(conn) {
            conn.close(0, b"");
            return Ok(());
        }
        let conn = conn.clone();
        match handle.ready.as_driven() {
            Some(d) => d.linger_later(conn),
            None => {
                runtime()?.spawn(async move {
                    let acked = async {
                        while !drained(&conn) {
                            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
                        }
                    };
                    tokio::select! {
                        _ = tokio::time::timeout(LINGER, acked) => {}
                        _ = conn.closed() => {}
                    }
                    conn.close(0, b"");
                });
            }
        }
        Ok(())
    })
}
