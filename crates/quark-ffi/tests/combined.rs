//! The calls that do two in one: `quark_stream_write_ref_fin` (a lent write
//! that ends the stream) and `quark_process_ready` (a round of a
//! caller-driven endpoint and its ready list).

use quark_ffi::*;
use sha2::{Digest, Sha256};

mod common;
use common::calls::{AGAIN, c, connect_on, listen, read_streams};

static DATA: [u8; 300_000] = {
    let mut d = [0u8; 300_000];
    let mut i = 0;
    while i < d.len() {
        d[i] = (i % 253) as u8;
        i += 1;
    }
    d
};

/// A caller-driven, non-blocking client endpoint.
fn client() -> i64 {
    // SAFETY: a NUL-terminated string that lives across the call.
    let ep = unsafe { quark_client(c("127.0.0.1:0").as_ptr(), QUARK_FLAG_CALLER_DRIVEN) };
    assert!(ep > 0, "client: {ep}");
    assert_eq!(quark_set_nonblocking(ep, 1), 0);
    ep
}

/// Runs `ep` with `quark_process_ready` until `call` gives something else
/// than AGAIN; every handle listed meanwhile.
fn until_done(ep: i64, mut call: impl FnMut() -> i64) -> (i64, Vec<i64>) {
    let mut listed = Vec::new();
    for _ in 0..5_000 {
        let r = call();
        if r != AGAIN {
            return (r, listed);
        }
        let mut out = [0i64; 64];
        let mut more = -1i32;
        // SAFETY: `out` has room for its length, `more` is writable.
        let n = unsafe { quark_process_ready(ep, 10, out.as_mut_ptr(), out.len(), &mut more) };
        assert!(n >= 0, "quark_process_ready: {n}");
        assert!(more == 0 || more == 1, "more: {more}");
        listed.extend_from_slice(&out[..n as usize]);
    }
    panic!("still AGAIN after 5000 rounds");
}

/// A non-blocking connection to `port` and a non-blocking stream on it;
/// whether the connection was listed when its handshake ended.
fn open(ep: i64, port: u16) -> (i64, i64, bool) {
    let conn = connect_on(ep, port);
    let (done, listed) = until_done(ep, || i64::from(quark_connected(conn)));
    assert_eq!(done, 0);
    let (s, _) = until_done(ep, || quark_stream_open(conn));
    assert!(s > 0, "open: {s}");
    assert_eq!(quark_set_nonblocking(s, 1), 0);
    (conn, s, listed.contains(&conn))
}

/// A stream's length and SHA-256 as the server read it.
type Received = (usize, Vec<u8>);

/// A server that reads each of `n` streams of one connection to its end
/// (the FIN) and returns their lengths and digests.
fn reader(n: usize) -> (u16, std::thread::JoinHandle<Vec<Received>>) {
    read_streams(n, |all| (all.len(), Sha256::digest(&all).to_vec()))
}

#[test]
fn write_ref_fin_ends_the_stream_after_the_last_byte() {
    let (port, served) = reader(2);
    let ep = client();
    let (conn, s, listed) = open(ep, port);
    assert!(listed, "quark_process_ready did not list the connection");
    // More than the window takes at once: partial writes, each with the
    // flag; only the one that takes the rest ends the stream.
    let mut at = 0;
    let mut partial = 0;
    while at < DATA.len() {
        let rest = &DATA[at..];
        // SAFETY: static bytes, nothing to release.
        let (n, _) = until_done(ep, || unsafe {
            quark_stream_write_ref_fin(s, rest.as_ptr(), rest.len(), None, std::ptr::null_mut())
        });
        assert!(n > 0, "write_ref_fin: {n}");
        partial += usize::from((n as usize) < rest.len());
        at += n as usize;
    }
    assert!(
        partial > 0,
        "every write took everything: no partial write tested"
    );
    // Ended: a further write is refused.
    // SAFETY: static bytes.
    let again =
        unsafe { quark_stream_write_ref_fin(s, DATA.as_ptr(), 10, None, std::ptr::null_mut()) };
    assert!(again < 0 && again != AGAIN, "write after FIN: {again}");
    // With no bytes it only ends the stream.
    let (s2, _) = until_done(ep, || quark_stream_open(conn));
    assert!(s2 > 0, "open: {s2}");
    // SAFETY: NULL with length 0.
    let r =
        unsafe { quark_stream_write_ref_fin(s2, std::ptr::null(), 0, None, std::ptr::null_mut()) };
    assert_eq!(r, 0);
    for _ in 0..2_000 {
        if served.is_finished() {
            break;
        }
        let mut more = 0i32;
        // SAFETY: cap 0 with NULL out; `more` writable.
        let n = unsafe { quark_process_ready(ep, 10, std::ptr::null_mut(), 0, &mut more) };
        assert!(n >= 0, "quark_process_ready: {n}");
    }
    let got = served.join().unwrap();
    assert_eq!(got[0], (DATA.len(), Sha256::digest(DATA).to_vec()));
    assert_eq!(got[1], (0, Sha256::digest(b"").to_vec()));
    for h in [s, s2, conn, ep] {
        assert_eq!(quark_close(h), 0);
    }
}

#[test]
fn process_ready_rejects_what_process_rejects() {
    let mut out = [0i64; 4];
    let mut more = 7i32;
    // SAFETY: `out` has room for its length, `more` is writable.
    let bad = unsafe { quark_process_ready(0, 0, out.as_mut_ptr(), out.len(), &mut more) };
    assert_eq!(bad, QuarkError::BadHandle as i64);
    assert_eq!(more, 7, "untouched on error");
    // A threaded endpoint has no caller-driven rounds.
    let (server, _) = listen(0);
    // SAFETY: as above.
    let threaded =
        unsafe { quark_process_ready(server, 0, out.as_mut_ptr(), out.len(), &mut more) };
    assert_eq!(threaded, QuarkError::WrongKind as i64);
    // NULL `out` with a capacity is invalid; NULL `more` is allowed.
    let ep = client();
    // SAFETY: NULL `out` is what is tested; `more` may be NULL.
    let null_out =
        unsafe { quark_process_ready(ep, 0, std::ptr::null_mut(), 4, std::ptr::null_mut()) };
    assert_eq!(null_out, QuarkError::Inval as i64);
    // SAFETY: `out` has room for its length; NULL `more`.
    let ok =
        unsafe { quark_process_ready(ep, 0, out.as_mut_ptr(), out.len(), std::ptr::null_mut()) };
    assert_eq!(ok, 0);
    for h in [ep, server] {
        assert_eq!(quark_close(h), 0);
    }
}
