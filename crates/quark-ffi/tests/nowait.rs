//! `quark_close_nowait`: a connection closed without waiting still delivers
//! what was written, and many connect / close cycles on one caller-driven
//! client endpoint leave no handle, connection or timer behind.

use quark_ffi::*;
use sha2::{Digest, Sha256};

mod common;
use common::calls::{
    c, connect_on, echo_next_stream, listen, read, read_to_end, until_done, write,
};

/// A caller-driven, non-blocking client endpoint.
fn client() -> i64 {
    // SAFETY: a NUL-terminated string that lives across the call.
    let ep = unsafe { quark_client(c("127.0.0.1:0").as_ptr(), QUARK_FLAG_CALLER_DRIVEN) };
    assert!(ep > 0, "client: {ep}");
    assert_eq!(quark_set_nonblocking(ep, 1), 0);
    ep
}

/// Processes `ep` until it holds no connection (closing ones included).
fn until_empty(ep: i64) {
    for _ in 0..1_000 {
        match call::connection_count(ep) {
            0 => return,
            n => assert!(n > 0, "connection_count: {n}"),
        }
        assert!(quark_process(ep, 10) >= 0);
    }
    panic!("{} connections still held", call::connection_count(ep));
}

/// An established, non-blocking connection and a stream on it.
fn open(ep: i64, port: u16) -> (i64, i64) {
    let conn = connect_on(ep, port);
    assert_eq!(until_done(ep, || i64::from(quark_connected(conn))), 0);
    let s = until_done(ep, || quark_stream_open(conn));
    assert!(s > 0, "open: {s}");
    assert_eq!(quark_set_nonblocking(s, 1), 0);
    (conn, s)
}

/// Writes all of `data` on the non-blocking stream `s`, processing `ep`.
fn write_all(ep: i64, s: i64, data: &[u8]) {
    let mut at = 0;
    while at < data.len() {
        let n = until_done(ep, || write(s, &data[at..]));
        assert!(n > 0, "write: {n}");
        at += n as usize;
    }
}

#[test]
fn many_connect_close_cycles_leave_nothing_behind() {
    const N: usize = 24;
    let (server, port) = listen(0);
    let served = std::thread::spawn(move || {
        for _ in 0..N {
            let conn = quark_accept(server);
            assert!(conn > 0, "accept: {conn}");
            let s = echo_next_stream(conn);
            // Until the client closes.
            assert_eq!(quark_stream_accept(conn), QuarkError::Closed as i64);
            assert_eq!(quark_close(s), 0);
            assert_eq!(quark_close_nowait(conn), 0);
        }
    });
    let ep = client();
    let mut highest = 0;
    for i in 0..N {
        let (conn, s) = open(ep, port);
        highest = highest.max(call::handle_index(conn).max(call::handle_index(s)));
        let sent: Vec<u8> = (0..3_000).map(|k| (k * 7 + i) as u8).collect();
        write_all(ep, s, &sent);
        assert_eq!(quark_stream_shutdown(s), 0);
        let mut got = Vec::new();
        let mut buf = vec![0u8; 4096];
        loop {
            match until_done(ep, || read(s, &mut buf)) {
                0 => break,
                n if n > 0 => got.extend_from_slice(&buf[..n as usize]),
                e => panic!("read: {e}"),
            }
        }
        assert_eq!(got, sent, "echo of connection {i}");
        assert_eq!(quark_close(s), 0);
        assert_eq!(quark_close_nowait(conn), 0);
        // The handle is dead at once.
        assert_eq!(
            quark_stream_open(conn),
            QuarkError::BadHandle as i64,
            "connection {i}"
        );
    }
    // Closed handles' slots are reused: a handful (this binary's other
    // tests hold some), not two per cycle.
    assert!(highest < 16, "handle slots up to {highest} for {N} cycles");
    // Every connection leaves the endpoint once its close is done, and the
    // endpoint then has nothing to do: no timer keeps it busy.
    until_empty(ep);
    served.join().unwrap();
    for _ in 0..500 {
        if call::connection_count(server) == 0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(call::connection_count(server), 0, "server connections");
    assert_eq!(quark_process(ep, 0), 0, "the idle endpoint wants no round");
    for h in [ep, server] {
        assert_eq!(quark_close(h), 0);
    }
}

#[test]
fn closed_without_waiting_still_delivers_what_was_written() {
    let (server, port) = listen(0);
    let served = std::thread::spawn(move || {
        let conn = quark_accept(server);
        assert!(conn > 0, "accept: {conn}");
        let s = quark_stream_accept(conn);
        assert!(s > 0, "stream accept: {s}");
        let all = read_to_end(s);
        for h in [s, conn, server] {
            assert_eq!(quark_close(h), 0);
        }
        (all.len(), Sha256::digest(&all).to_vec())
    });
    let ep = client();
    let (conn, s) = open(ep, port);
    let sent: Vec<u8> = (0..2_000_000u32).map(|k| (k % 251) as u8).collect();
    write_all(ep, s, &sent);
    assert_eq!(quark_stream_shutdown(s), 0);
    assert_eq!(quark_close(s), 0);
    // Returns at once; the endpoint's processing delivers the rest.
    assert_eq!(quark_close_nowait(conn), 0);
    for _ in 0..2_000 {
        if served.is_finished() {
            break;
        }
        assert!(quark_process(ep, 10) >= 0);
    }
    let (len, digest) = served.join().unwrap();
    assert_eq!(len, sent.len());
    assert_eq!(digest, Sha256::digest(&sent).to_vec());
    until_empty(ep);
    assert_eq!(quark_close(ep), 0);
}

#[test]
fn nowait_on_other_handles() {
    // A bad handle is an error, not a crash; an endpoint closes as with
    // `quark_close`.
    assert_eq!(quark_close_nowait(0), QuarkError::BadHandle as i32);
    assert_eq!(quark_close_nowait(-5), QuarkError::BadHandle as i32);
    let ep = client();
    assert_eq!(quark_close_nowait(ep), 0);
    assert_eq!(quark_close_nowait(ep), QuarkError::BadHandle as i32);
}
