//! Endpoint options (`quark_listen_flags`, `quark_connect_flags`) and the
//! caller-driven mode's entry point, `quark_process`.

use std::ffi::c_char;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::Instant;

use quark::{Endpoint, EndpointConfig, ServerConfig};

use std::task::Waker;

use crate::driven::{Driven, Hook, reactor};
use crate::error::QuarkError;
use crate::object::{LINGER, Object, entry};
use crate::ready::Ready;
use crate::table;

/// Flag for `quark_listen_flags` / `quark_connect_flags`: the caller's thread
/// drives the endpoint (no library thread). Nothing happens on the endpoint
/// (no datagram received or sent, no timer fired) except inside calls on its
/// handles: `quark_process`, and blocking calls while they wait. Use:
/// make every handle non-blocking, then loop: `quark_process(h, timeout)`,
/// `quark_ready` and retry the listed handles' calls. `quark_ready_fd` is an
/// epoll descriptor holding the endpoint's UDP socket and timer, for a
/// caller's own poll / epoll: poll it only after `quark_process` returned 0
/// and no call was made since; it does not signal the ready list (which
/// fills only inside `quark_process`).
///
/// Thread safety: the endpoint's calls may come from any thread but are
/// meant for one at a time (they serialise on the endpoint); a blocking call
/// drives the endpoint, so another thread's `quark_process` waits for it.
pub const QUARK_FLAG_CALLER_DRIVEN: u32 = 1;

/// Flag for `quark_client` / `quark_listen_flags` / `quark_listen_pem_flags`
/// / `quark_connect_flags`: handshakes of the endpoint's `quark_connect_on`
/// connections never resume a TLS session. Without it, connections on one
/// endpoint with the same TLS arguments (ALPN, CA file contents, cipher
/// suites, `insecure`) share one TLS configuration and its session tickets,
/// so a later handshake to the same server may resume (no certificate
/// check, no signature). `quark_connect*` makes an endpoint per connection,
/// which never resumes. A listening endpoint with it also issues no
/// session tickets.
pub const QUARK_FLAG_NO_RESUMPTION: u32 = 2;

/// Flag for `quark_client` / `quark_listen_flags` / `quark_listen_pem_flags`
/// / `quark_connect_flags`: the endpoint and every handle made on it (its
/// connections and their streams) start in non-blocking mode, as with
/// `quark_set_nonblocking(h, 1)` on each (like `SOCK_NONBLOCK` for
/// `socket(2)` and `accept4(2)`): an event loop needs no call per new
/// handle. `quark_set_nonblocking` still switches any one of them.
/// `quark_connect_flags` still blocks for its handshake (the endpoint is its
/// own); the connection it returns is non-blocking.
pub const QUARK_FLAG_NONBLOCKING: u32 = 4;

/// Flag for `quark_client` / `quark_listen_flags` / `quark_listen_pem_flags`
/// / `quark_connect_flags`: the endpoint's connections do not take part in
/// the latency spin bit (RFC 9000 §17.4), which lets observers on the path
/// read the RTT; they send a random bit instead. Without it one connection
/// in sixteen still never spins.
pub const QUARK_FLAG_NO_SPIN_BIT: u32 = 8;

/// Every flag.
const FLAGS: u32 = QUARK_FLAG_CALLER_DRIVEN
    | QUARK_FLAG_NO_RESUMPTION
    | QUARK_FLAG_NONBLOCKING
    | QUARK_FLAG_NO_SPIN_BIT;

/// Whether `flags` ask for caller-driven mode; unknown bits are an error.
pub(crate) fn caller_driven(flags: u32) -> Result<bool, QuarkError> {
    if flags & !FLAGS != 0 {
        return Err(QuarkError::Inval);
    }
    Ok(flags & QUARK_FLAG_CALLER_DRIVEN != 0)
}

/// `transport` with the spin bit off if `flags` say so.
pub(crate) fn spin_bit_per_flags(transport: &mut Arc<quark::TransportConfig>, flags: u32) {
    if flags & QUARK_FLAG_NO_SPIN_BIT != 0 {
        Arc::make_mut(transport).spin_bit = false;
    }
}

/// The options of `flags` that live with the endpoint's ready list.
pub(crate) fn with_flags(ready: Arc<Ready>, flags: u32) -> Arc<Ready> {
    if flags & QUARK_FLAG_NO_RESUMPTION != 0 {
        ready.tls.disable_resumption();
    }
    if flags & QUARK_FLAG_NO_SPIN_BIT != 0 {
        ready.tls.disable_spin_bit();
    }
    if flags & QUARK_FLAG_NONBLOCKING != 0 {
        ready.set_new_nonblocking();
    }
    ready
}

/// Bind a caller-driven endpoint on `addr` (kernel UDP only).
pub(crate) fn driven_endpoint(
    server: Option<ServerConfig>,
    addr: SocketAddr,
) -> Result<(Endpoint, Arc<Ready>), QuarkError> {
    let (rt, handle) = reactor()?;
    let (endpoint, drive, fd) = {
        let _guard = handle.enter();
        let socket = quark_udp::UdpSocket::bind(addr).map_err(|_| QuarkError::Io)?;
        let fd = socket.as_raw_fd();
        let (endpoint, drive) = Endpoint::caller_driven(EndpointConfig::default(), server, socket)
            .map_err(|_| QuarkError::Io)?;
        (endpoint, drive, fd)
    };
    let driven = Driven::new(drive, fd, rt, handle)?;
    Ok((endpoint, Ready::driven(driven)))
}

/// `quark_close` of a caller-driven handle: as in threaded mode, driven on
/// this thread while it lingers.
pub(crate) fn close_driven(d: &Driven, object: &Object) {
    let until = || Some(Instant::now() + LINGER);
    match object {
        Object::Stream(_) => {}
        Object::Connection(c) => {
            // A handshake still under way ends with the handle.
            if let Some(conn) = c.get() {
                linger(d, conn);
            }
            if let Some(e) = &c.own_endpoint {
                d.block_on(e.wait_idle(), until());
            }
        }
        Object::Endpoint(e) => {
            e.close(0, b"");
            d.block_on(e.wait_idle(), until());
        }
    }
}

/// Wait until what was written on `conn` is acknowledged, streams' ends
/// included (at most `LINGER`), then close it.
fn linger(d: &Driven, conn: &quark::Connection) {
    let mut closed = std::pin::pin!(conn.closed());
    // Until nothing written waits for acknowledgement, or it ended: each
    // ACK arrives on the socket, which wakes the loop.
    let acked = std::future::poll_fn(|cx| {
        if conn.all_acked() {
            return std::task::Poll::Ready(());
        }
        closed.as_mut().poll(cx).map(|_| ())
    });
    d.block_on(acked, Some(Instant::now() + LINGER));
    conn.close(0, b"");
}

/// As `quark_listen`, with `flags` (`QUARK_FLAG_CALLER_DRIVEN`,
/// `QUARK_FLAG_NO_RESUMPTION`, `QUARK_FLAG_NONBLOCKING` and
/// `QUARK_FLAG_NO_SPIN_BIT`, or 0; other bits give `QUARK_ERROR_INVAL`).
///
/// Thread safety: safe from any thread; does not block on the network.
///
/// # Safety
/// As `quark_listen`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quark_listen_flags(
    addr: *const c_char,
    cert_pem_path: *const c_char,
    key_pem_path: *const c_char,
    alpn: *const c_char,
    flags: u32,
) -> i64 {
    // SAFETY: the caller's contract.
    unsafe { crate::conn::listen_files(addr, cert_pem_path, key_pem_path, alpn, flags) }
}

/// As `quark_listen_pem`, with `flags` (as `quark_listen_flags`).
///
/// Thread safety: safe from any thread; does not block on the network.
///
/// # Safety
/// As `quark_listen_pem`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quark_listen_pem_flags(
    addr: *const c_char,
    cert_pem: *const c_char,
    key_pem: *const c_char,
    alpn: *const c_char,
    flags: u32,
) -> i64 {
    // SAFETY: the caller's contract.
    unsafe { crate::conn::listen_pem(addr, cert_pem, key_pem, alpn, flags) }
}

/// As `quark_connect_with`, with `flags` (as `quark_listen_flags`). With
/// `QUARK_FLAG_CALLER_DRIVEN` the handshake runs on the calling thread,
/// which blocks until it completes.
///
/// Thread safety: safe from any thread.
///
/// # Safety
/// As `quark_connect_with`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quark_connect_flags(
    addr: *const c_char,
    server_name: *const c_char,
    alpn: *const c_char,
    insecure: i32,
    ca_pem_path: *const c_char,
    ciphers: *const c_char,
    flags: u32,
) -> i64 {
    // SAFETY: the caller's contract.
    unsafe {
        crate::conn::connect(
            addr,
            server_name,
            alpn,
            insecure,
            ca_pem_path,
            ciphers,
            flags,
        )
    }
}

/// Run the work of `handle`'s caller-driven endpoint on this thread: send
/// what calls since the last time wrote; then, unless that listed a handle
/// ready or `timeout_ms` is 0, wait up to `timeout_ms` milliseconds (-1: no
/// limit) for a datagram or a timer, and receive, fire due timers, send,
/// and put the handles whose waits ended on the ready list (`quark_ready`).
/// Returns 1 when more work is pending (handle the ready list, then call
/// again with timeout 0: the endpoint may be holding its answer for
/// yours), 0 when idle, or a negative error (`QUARK_ERROR_WRONG_KIND` for a
/// threaded endpoint).
///
/// Thread safety: safe from any thread; calls on one endpoint serialise.
#[unsafe(no_mangle)]
pub extern "C" fn quark_process(handle: i64, timeout_ms: i32) -> i64 {
    entry(|| {
        let h = table::get(handle)?;
        let d = h.ready.as_driven().ok_or(QuarkError::WrongKind)?;
        d.process(timeout_ms, || h.ready.has_listed())
            .map(i64::from)
    })
}

/// `quark_process` then `quark_ready` in one call (one entry less per
/// round of an event loop): runs the endpoint as `quark_process(handle,
/// timeout_ms)`, stores its result (1: more work pending, 0: idle) in
/// `*more` (when not NULL), and takes up to `cap` handles off the ready
/// list into `out`. Returns how many, or a negative error (then `*more` is
/// untouched). When it returns `cap`, more may be listed: drain them with
/// `quark_ready`.
///
/// Thread safety: as `quark_process` and `quark_ready`.
///
/// # Safety
/// `out` points to `cap` writable `int64_t`s (it may be NULL when `cap` is
/// 0); `more` is NULL or points to a writable `int32_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quark_process_ready(
    handle: i64,
    timeout_ms: i32,
    out: *mut i64,
    cap: usize,
    more: *mut i32,
) -> i64 {
    entry(|| {
        let h = table::get(handle)?;
        let d = h.ready.as_driven().ok_or(QuarkError::WrongKind)?;
        let busy = d.process(timeout_ms, || h.ready.has_listed())?;
        // SAFETY: the caller's contract.
        let n = unsafe { crate::ready::drain_into(&h.ready, out, cap) }?;
        if !more.is_null() {
            // SAFETY: non-null: the caller promises a writable int32_t.
            unsafe { *more = i32::from(busy) };
        }
        Ok(n)
    })
}

/// Have `cb(arg)` called whenever `handle`'s caller-driven endpoint gets
/// work for `quark_process`: a call gave it some (a write, a read that frees
/// flow-control credit, a close), or, for an endpoint made inside a Rust
/// tokio runtime, its socket or timer became ready. For event loops that
/// run the endpoint from another task than the one making the calls. `cb`
/// runs on whichever thread caused the work, often inside a libquark call:
/// it must only signal (set a flag, wake a loop), never call libquark.
/// NULL `cb` removes it. Returns 0 or a negative error
/// (`QUARK_ERROR_WRONG_KIND` for a threaded endpoint).
///
/// Thread safety: safe from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn quark_on_work(
    handle: i64,
    cb: Option<extern "C" fn(*mut std::ffi::c_void)>,
    arg: *mut std::ffi::c_void,
) -> i32 {
    crate::object::entry_status(|| {
        let h = table::get(handle)?;
        let d = h.ready.as_driven().ok_or(QuarkError::WrongKind)?;
        d.set_hook(cb.map(|cb| Hook::C(cb, arg as usize)));
        Ok(())
    })
}

/// `quark_on_work` for a Rust task: wake `waker` instead of a C callback.
pub(crate) fn on_work_waker(handle: i64, waker: Waker) -> Result<(), QuarkError> {
    let h = table::get(handle)?;
    let d = h.ready.as_driven().ok_or(QuarkError::WrongKind)?;
    d.set_hook(Some(Hook::Waker(waker)));
    Ok(())
}
