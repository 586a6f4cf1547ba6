//! A non-blocking `quark_connect_on`: the handle comes back before the
//! handshake, the caller's `quark_process` loop carries the handshake, and
//! the connection is listed ready when it ends, as `connect(2)` on an
//! `O_NONBLOCK` socket. No thread blocks on it.

use quark_ffi::*;
use sha2::{Digest, Sha256};

mod common;
use common::calls::{AGAIN, c, listen, read, ready, serve_one_echo, try_connect, write};

/// A caller-driven, non-blocking client endpoint.
fn client() -> i64 {
    // SAFETY: a NUL-terminated string that lives across the call.
    let ep = unsafe { quark_client(c("127.0.0.1:0").as_ptr(), QUARK_FLAG_CALLER_DRIVEN) };
    assert!(ep > 0, "client: {ep}");
    assert_eq!(quark_set_nonblocking(ep, 1), 0);
    ep
}

fn connect_on(ep: i64, port: u16, alpn: &str) -> i64 {
    let addr = c(&format!("127.0.0.1:{port}"));
    // SAFETY: NUL-terminated strings that live across the call; NULL CA and ciphers.
    unsafe {
        quark_connect_on(
            ep,
            addr.as_ptr(),
            c("localhost").as_ptr(),
            c(alpn).as_ptr(),
            1,
            std::ptr::null(),
            std::ptr::null(),
        )
    }
}

/// Processes `ep` until `call` gives something else than AGAIN; whether the
/// handle `listed` was on the ready list meanwhile.
fn until_done(ep: i64, listed: i64, mut call: impl FnMut() -> i64) -> (i64, bool) {
    let mut seen = false;
    for _ in 0..1_000 {
        let r = call();
        if r != AGAIN {
            return (r, seen);
        }
        assert!(quark_process(ep, 10) >= 0);
        seen |= ready(ep).contains(&listed);
    }
    panic!("still AGAIN after 1000 rounds");
}

#[test]
fn nonblocking_connect_returns_before_the_handshake() {
    let (server, port) = listen(0);
    let served = serve_one_echo(server);
    let ep = client();
    let conn = connect_on(ep, port, "test");
    assert!(conn > 0, "connect_on: {conn}");
    // Nothing was processed: the handshake cannot be done yet.
    assert_eq!(quark_stream_open(conn), AGAIN);
    assert_eq!(quark_connected(conn), AGAIN as i32);
    let (done, listed) = until_done(ep, conn, || i64::from(quark_connected(conn)));
    assert_eq!(done, 0);
    assert!(
        listed,
        "the connection was not listed when its handshake ended"
    );
    let (s, _) = until_done(ep, conn, || quark_stream_open(conn));
    assert!(s > 0, "open: {s}");
    assert!(
        listed,
        "the connection was not listed when its handshake ended"
    );
    assert_eq!(quark_set_nonblocking(s, 1), 0);
    let data: Vec<u8> = (0..200_000u32).map(|i| (i % 253) as u8).collect();
    let mut sent = 0;
    while sent < data.len() {
        let (n, _) = until_done(ep, s, || write(s, &data[sent..]));
        assert!(n > 0, "write: {n}");
        sent += n as usize;
    }
    assert_eq!(quark_stream_shutdown(s), 0);
    let mut got = Vec::new();
    let mut buf = vec![0u8; 7000];
    loop {
        match until_done(ep, s, || read(s, &mut buf)).0 {
            0 => break,
            n if n > 0 => got.extend_from_slice(&buf[..n as usize]),
            e => panic!("read: {e}"),
        }
    }
    assert_eq!(Sha256::digest(&got), Sha256::digest(&data));
    for h in [s, conn, ep] {
        assert_eq!(quark_close(h), 0);
    }
    served.join().unwrap();
}

/// A handshake that fails (no ALPN in common) shows in the calls on the
/// handle, and closing it is clean.
#[test]
fn a_failed_nonblocking_handshake_gives_connect_errors() {
    let (server, port) = listen(0);
    let ep = client();
    let conn = connect_on(ep, port, "other");
    assert!(conn > 0, "connect_on: {conn}");
    let (r, _) = until_done(ep, conn, || quark_stream_open(conn));
    assert_eq!(r, QuarkError::Connect as i64);
    assert_eq!(quark_stream_accept(conn), QuarkError::Connect as i64);
    assert_eq!(quark_connected(conn), QuarkError::Connect as i32);
    for h in [conn, ep, server] {
        assert_eq!(quark_close(h), 0);
    }
}

/// A port where nothing listens (bound, then closed): the kernel answers
/// with ICMP port unreachable.
fn closed_port() -> u16 {
    let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    s.local_addr().unwrap().port()
}

/// Like `connect(2)`'s ECONNREFUSED: a closed port is refused at once, by a
/// non-blocking connect, a blocking one, and a caller-driven one, instead
/// of after the handshake timeout (whose error would be
/// `QUARK_ERROR_CONNECT`).
#[test]
fn a_closed_port_is_refused() {
    let ep = client();
    let conn = connect_on(ep, closed_port(), "test");
    assert!(conn > 0, "connect_on: {conn}");
    let (r, _) = until_done(ep, conn, || i64::from(quark_connected(conn)));
    assert_eq!(r, QuarkError::Refused as i64);
    assert_eq!(quark_stream_open(conn), QuarkError::Refused as i64);
    // The ICMP report was read: its socket does not keep the endpoint's
    // descriptor readable (EPOLLERR) for a caller that polls it.
    let mut p = libc::pollfd {
        fd: quark_ready_fd(ep),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd for the call.
    assert_eq!(unsafe { libc::poll(&mut p, 1, 0) }, 0, "{:#x}", p.revents);
    for h in [conn, ep] {
        assert_eq!(quark_close(h), 0);
    }

    for flags in [0, QUARK_FLAG_CALLER_DRIVEN] {
        let r = try_connect(closed_port(), flags);
        assert_eq!(r, QuarkError::Refused as i64, "flags {flags}");
    }
    // SAFETY: a static string.
    let text = unsafe { std::ffi::CStr::from_ptr(quark_strerror(QuarkError::Refused as i32)) };
    assert!(text.to_str().unwrap().starts_with("connection refused"));
}
