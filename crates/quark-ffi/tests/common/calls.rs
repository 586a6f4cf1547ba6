//! Set-up and calls shared by the tests that drive the C API from Rust:
//! an endpoint with a fresh certificate, a connection, reads and writes
//! through the raw pointers, and the non-blocking accept step.

use std::ffi::CString;

use quark_ffi::*;

pub(crate) const AGAIN: i64 = QuarkError::Again as i64;

pub(crate) fn c(s: &str) -> CString {
    CString::new(s).unwrap()
}

/// A server endpoint on a loopback port with a self-signed certificate for
/// "localhost" (PEM in memory), ALPN "test", made with `flags`.
pub(crate) fn listen(flags: u32) -> (i64, u16) {
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let cert = c(&ck.cert.pem());
    let key = c(&ck.signing_key.serialize_pem());
    // SAFETY: NUL-terminated strings that live across the call.
    let ep = unsafe {
        quark_listen_pem_flags(
            c("127.0.0.1:0").as_ptr(),
            cert.as_ptr(),
            key.as_ptr(),
            c("test").as_ptr(),
            flags,
        )
    };
    assert!(ep > 0, "listen: {ep}");
    (ep, quark_local_port(ep) as u16)
}

/// An insecure connection to `port` on loopback, made with `flags`.
pub(crate) fn connect(port: u16, flags: u32) -> i64 {
    let conn = try_connect(port, flags);
    assert!(conn > 0, "connect: {conn}");
    conn
}

/// What `quark_connect_flags` returns for an insecure connection to `port`
/// on loopback: a handle or an error.
pub(crate) fn try_connect(port: u16, flags: u32) -> i64 {
    try_connect_addr(&format!("127.0.0.1:{port}"), flags)
}

/// As `try_connect`, to `addr` (`host:port`; a name is resolved).
pub(crate) fn try_connect_addr(addr: &str, flags: u32) -> i64 {
    let addr = c(addr);
    // SAFETY: NUL-terminated strings that live across the call; NULL CA and ciphers.
    unsafe {
        quark_connect_flags(
            addr.as_ptr(),
            c("localhost").as_ptr(),
            c("test").as_ptr(),
            1,
            std::ptr::null(),
            std::ptr::null(),
            flags,
        )
    }
}

/// An insecure connection to `port` on loopback made on the client endpoint
/// `ep` (`quark_connect_on`: the endpoint's TLS configuration, so a second
/// connection can resume).
pub(crate) fn connect_on(ep: i64, port: u16) -> i64 {
    connect_on_addr(ep, &format!("127.0.0.1:{port}"))
}

/// As `connect_on`, to `addr` (`host:port`; a name is resolved).
pub(crate) fn connect_on_addr(ep: i64, addr: &str) -> i64 {
    let addr = c(addr);
    // SAFETY: NUL-terminated strings that live across the call; NULL CA and ciphers.
    let conn = unsafe {
        quark_connect_on(
            ep,
            addr.as_ptr(),
            c("localhost").as_ptr(),
            c("test").as_ptr(),
            1,
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert!(conn > 0, "connect_on: {conn}");
    conn
}

pub(crate) fn write(stream: i64, data: &[u8]) -> i64 {
    // SAFETY: `data` is valid for `data.len()` bytes.
    unsafe { quark_stream_write(stream, data.as_ptr(), data.len()) }
}

pub(crate) fn read(stream: i64, buf: &mut [u8]) -> i64 {
    // SAFETY: `buf` is valid and writable for its length.
    unsafe { quark_stream_read(stream, buf.as_mut_ptr(), buf.len()) }
}

/// Drain the ready list of `ep`'s endpoint.
pub(crate) fn ready(ep: i64) -> Vec<i64> {
    let mut out = [0i64; 64];
    // SAFETY: `out` has room for its length.
    let n = unsafe { quark_ready(ep, out.as_mut_ptr(), out.len()) };
    assert!(n >= 0, "quark_ready: {n}");
    out[..n as usize].to_vec()
}

/// The result of a non-blocking accept or open (`what` names it): `None`
/// for `QUARK_ERROR_AGAIN`, else the new handle, made non-blocking too.
pub(crate) fn nonblocking(result: i64, what: &str) -> Option<i64> {
    match result {
        AGAIN => None,
        h if h > 0 => {
            assert_eq!(quark_set_nonblocking(h, 1), 0);
            Some(h)
        }
        e => panic!("{what}: {e}"),
    }
}

/// One non-blocking step towards the first stream of the first connection
/// on endpoint `ep`: accepts into `conn`, then `stream`; the stream once
/// both are there.
pub(crate) fn first_stream(
    ep: i64,
    conn: &mut Option<i64>,
    stream: &mut Option<i64>,
) -> Option<i64> {
    if conn.is_none() {
        *conn = nonblocking(quark_accept(ep), "accept");
    }
    if stream.is_none() {
        *stream = nonblocking(quark_stream_accept((*conn)?), "stream accept");
    }
    *stream
}

/// Blocking: read `s` to its end (the peer's FIN).
pub(crate) fn read_to_end(s: i64) -> Vec<u8> {
    let mut all = Vec::new();
    let mut buf = vec![0u8; 50_000];
    loop {
        match read(s, &mut buf) {
            0 => return all,
            n if n > 0 => all.extend_from_slice(&buf[..n as usize]),
            e => panic!("read: {e}"),
        }
    }
}

/// A blocking server thread: accepts one connection and `n` streams, reads
/// each to its end (the FIN) and returns `keep` of what each carried.
pub(crate) fn read_streams<T: Send + 'static>(
    n: usize,
    keep: fn(Vec<u8>) -> T,
) -> (u16, std::thread::JoinHandle<Vec<T>>) {
    let (server, port) = listen(0);
    let t = std::thread::spawn(move || {
        let conn = quark_accept(server);
        assert!(conn > 0, "accept: {conn}");
        let mut got = Vec::new();
        for _ in 0..n {
            let s = quark_stream_accept(conn);
            assert!(s > 0, "stream accept: {s}");
            got.push(keep(read_to_end(s)));
            assert_eq!(quark_close(s), 0);
        }
        for h in [conn, server] {
            assert_eq!(quark_close(h), 0);
        }
        got
    });
    (port, t)
}

/// Blocking: accept the next bidirectional stream on `conn`, read it to its
/// end and write everything back, then shut the stream down; returns it (open).
pub(crate) fn echo_next_stream(conn: i64) -> i64 {
    let s = quark_stream_accept(conn);
    assert!(s > 0, "stream accept: {s}");
    let all = read_to_end(s);
    assert_eq!(write(s, &all), all.len() as i64);
    assert_eq!(quark_stream_shutdown(s), 0);
    s
}

/// A thread that accepts one connection on the blocking endpoint `server`,
/// echoes its first stream, waits for the client to close, then closes
/// everything.
pub(crate) fn serve_one_echo(server: i64) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let conn = quark_accept(server);
        assert!(conn > 0, "accept: {conn}");
        let s = echo_next_stream(conn);
        // Until the client closes.
        assert_eq!(quark_stream_accept(conn), QuarkError::Closed as i64);
        for h in [s, conn, server] {
            assert_eq!(quark_close(h), 0);
        }
    })
}

/// Processes the caller-driven `ep` (and drains its ready list) until
/// `call` gives something else than AGAIN.
pub(crate) fn until_done(ep: i64, mut call: impl FnMut() -> i64) -> i64 {
    for _ in 0..5_000 {
        let r = call();
        if r != AGAIN {
            return r;
        }
        assert!(quark_process(ep, 10) >= 0);
        let mut out = [0i64; 64];
        // SAFETY: `out` has room for its length.
        assert!(unsafe { quark_ready(ep, out.as_mut_ptr(), out.len()) } >= 0);
    }
    panic!("still AGAIN after 5000 rounds");
}
