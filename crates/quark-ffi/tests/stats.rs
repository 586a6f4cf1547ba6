//! `quark_conn_stats`: the datagram size a connection reached, and whether by
//! its own PMTU probes or from the endpoint's cache.

use quark_ffi::*;
use sha2::{Digest, Sha256};

mod common;
use common::calls::{c, connect_on, listen, read_to_end, write};

const SIZE: usize = 1_000_000;

fn stats(conn: i64) -> QuarkConnStats {
    let mut s = QuarkConnStats::default();
    // SAFETY: `s` is a writable `QuarkConnStats` of the size passed.
    let rc = unsafe { quark_conn_stats(conn, &mut s, std::mem::size_of_val(&s)) };
    assert_eq!(rc, 0, "quark_conn_stats");
    s
}

/// Writes `SIZE` bytes on a new stream of `conn` and waits until the server
/// read them all (it reports their SHA-256).
fn upload(conn: i64, digests: &std::sync::mpsc::Receiver<Vec<u8>>) {
    let data: Vec<u8> = (0..SIZE).map(|i| (i % 251) as u8).collect();
    let s = quark_stream_open(conn);
    assert!(s > 0, "open: {s}");
    let mut at = 0;
    while at < data.len() {
        let n = write(s, &data[at..]);
        assert!(n > 0, "write: {n}");
        at += n as usize;
    }
    assert_eq!(quark_stream_shutdown(s), 0);
    assert_eq!(digests.recv().unwrap(), Sha256::digest(&data).to_vec());
    assert_eq!(quark_close(s), 0);
}

#[test]
fn stats_show_the_searched_and_the_adopted_path_mtu() {
    let (server, port) = listen(0);
    let (tx, digests) = std::sync::mpsc::channel();
    let t = std::thread::spawn(move || {
        let mut conns = Vec::new();
        for _ in 0..2 {
            let conn = quark_accept(server);
            assert!(conn > 0, "accept: {conn}");
            let s = quark_stream_accept(conn);
            assert!(s > 0, "stream accept: {s}");
            tx.send(Sha256::digest(read_to_end(s)).to_vec()).unwrap();
            assert_eq!(quark_close(s), 0);
            conns.push(conn);
        }
        conns
    });
    // SAFETY: a NUL-terminated string that lives across the call.
    let ep = unsafe { quark_client(c("127.0.0.1:0").as_ptr(), 0) };
    assert!(ep > 0, "client: {ep}");

    // The first connection searches: a probe, and loopback's large size.
    let first = connect_on(ep, port);
    upload(first, &digests);
    let s = stats(first);
    assert!(s.mtu_probes >= 1, "{s:?}");
    assert_eq!(s.mtu_adopted, 0, "{s:?}");
    assert!(s.max_datagram_size > 1200, "{s:?}");
    assert!(s.bytes_sent >= SIZE as u64 && s.packets_sent > 0, "{s:?}");
    assert!(s.datagrams_received > 0 && s.rtt_us > 0, "{s:?}");

    // The second takes the size from the endpoint's cache, without probing.
    let second = connect_on(ep, port);
    upload(second, &digests);
    let s2 = stats(second);
    assert_eq!(s2.mtu_adopted, 1, "{s2:?}");
    assert_eq!(s2.mtu_probes, 0, "{s2:?}");
    assert_eq!(s2.max_datagram_size, s.max_datagram_size, "{s2:?}");

    // An older caller's smaller struct is filled only as far as it goes.
    let mut part = [u64::MAX; 2];
    // SAFETY: `part` has 8 writable bytes at least.
    let rc = unsafe { quark_conn_stats(second, part.as_mut_ptr().cast(), 8) };
    assert_eq!(rc, 0);
    assert_eq!(part, [s2.max_datagram_size, u64::MAX]);

    for conn in t.join().unwrap() {
        assert_eq!(quark_close(conn), 0);
    }
    for h in [first, second, ep, server] {
        assert_eq!(quark_close(h), 0);
    }
}

#[test]
fn stats_errors() {
    let mut s = QuarkConnStats::default();
    let size = std::mem::size_of_val(&s);
    // SAFETY: null `out` is refused before use; otherwise `s` is writable.
    unsafe {
        assert_eq!(
            quark_conn_stats(1, std::ptr::null_mut(), size),
            QuarkError::Inval as i32
        );
        assert_eq!(
            quark_conn_stats(123_456, &mut s, size),
            QuarkError::BadHandle as i32
        );
    }
    let (server, _) = listen(0);
    // SAFETY: `s` is writable for `size` bytes.
    let rc = unsafe { quark_conn_stats(server, &mut s, size) };
    assert_eq!(rc, QuarkError::WrongKind as i32);
    assert_eq!(quark_close(server), 0);
}
