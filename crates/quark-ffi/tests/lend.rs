//! The calls without a copy at the boundary: `quark_stream_write_ref` lends
//! the caller's bytes until its release callback, `quark_stream_read_with`
//! visits the received bytes in place. Transfers are checked by SHA-256;
//! every lent buffer is released exactly once.

use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};

use quark_ffi::*;
use sha2::{Digest, Sha256};

mod common;
use common::calls::{AGAIN, connect, first_stream, listen, ready};

/// Counts the releases of the buffers lent with it as `arg`.
extern "C" fn count_release(arg: *mut c_void) {
    // SAFETY: every `arg` given with this callback is a `&'static AtomicUsize`.
    let n = unsafe { &*arg.cast::<AtomicUsize>() };
    n.fetch_add(1, Ordering::SeqCst);
}

/// Appends each visited piece to the `Vec<u8>` behind `arg`.
extern "C" fn append(arg: *mut c_void, data: *const u8, len: usize) {
    // SAFETY: `arg` is the `&mut Vec<u8>` of the read call, and libquark
    // passes `len` readable bytes at `data` for the callback's duration.
    let (out, piece) = unsafe {
        (
            &mut *arg.cast::<Vec<u8>>(),
            std::slice::from_raw_parts(data, len),
        )
    };
    out.extend_from_slice(piece);
}

fn read_with(stream: i64, max: usize, out: &mut Vec<u8>) -> i64 {
    quark_stream_read_with(stream, max, Some(append), (out as *mut Vec<u8>).cast())
}

fn write_ref(stream: i64, data: &[u8], released: &'static AtomicUsize) -> i64 {
    let arg = (released as *const AtomicUsize).cast_mut().cast();
    // SAFETY: `data` outlives every stream of the test (the caller keeps it
    // until the connection is closed); `arg` is what `count_release` expects.
    unsafe { quark_stream_write_ref(stream, data.as_ptr(), data.len(), Some(count_release), arg) }
}

fn payload(len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i % 251) as u8 ^ (i >> 13) as u8)
        .collect()
}

/// A blocking client lends 3 MB in one call; a non-blocking caller-driven
/// server visits it in place and lends it back piece by piece.
#[test]
fn lent_writes_and_visiting_reads_echo_byte_exact() {
    static CLIENT_RELEASED: AtomicUsize = AtomicUsize::new(0);
    static SERVER_RELEASED: AtomicUsize = AtomicUsize::new(0);
    let (ep, port) = listen(QUARK_FLAG_CALLER_DRIVEN);
    let data = payload(3_000_000);
    let sent = data.clone();
    let client = std::thread::spawn(move || {
        let conn = connect(port, 0);
        let s = quark_stream_open(conn);
        assert!(s > 0, "open: {s}");
        assert_eq!(write_ref(s, &sent, &CLIENT_RELEASED), sent.len() as i64);
        assert_eq!(quark_stream_shutdown(s), 0);
        let mut got = Vec::new();
        loop {
            match read_with(s, 5_000, &mut got) {
                0 => break,
                n => assert!((1..=5_000).contains(&n), "read_with: {n}"),
            }
        }
        assert_eq!(quark_close(s), 0);
        // Closing waits for the acknowledgements: nothing is lent any more.
        assert_eq!(quark_close(conn), 0);
        assert_eq!(CLIENT_RELEASED.load(Ordering::SeqCst), 1);
        got
    });

    assert_eq!(quark_set_nonblocking(ep, 1), 0);
    let (mut conn, mut stream) = (None, None);
    let mut echo = Vec::new();
    let (mut eof, mut sent_back, mut calls, mut finished) = (false, 0, 0, false);
    while !finished {
        let more = quark_process(ep, 20);
        assert!(more >= 0, "quark_process: {more}");
        ready(ep);
        let Some(s) = first_stream(ep, &mut conn, &mut stream) else {
            continue;
        };
        while !eof {
            match read_with(s, usize::MAX, &mut echo) {
                AGAIN => break,
                0 => eof = true,
                n => assert!(n > 0, "read_with: {n}"),
            }
        }
        // `echo` is complete and no longer grows: lending slices of it is sound.
        while eof && sent_back < echo.len() {
            calls += 1;
            match write_ref(s, &echo[sent_back..], &SERVER_RELEASED) {
                AGAIN => break,
                n => {
                    assert!(n > 0, "write_ref: {n}");
                    sent_back += n as usize;
                }
            }
        }
        if eof && sent_back == echo.len() {
            assert_eq!(quark_stream_shutdown(s), 0);
            finished = true;
        }
    }
    // Serve until the client has what it wants and closed.
    while !client.is_finished() {
        assert!(quark_process(ep, 20) >= 0);
    }
    let got = client.join().unwrap();
    assert_eq!(Sha256::digest(&echo), Sha256::digest(&data));
    assert_eq!(Sha256::digest(&got), Sha256::digest(&data));
    for h in [stream, conn, Some(ep)].into_iter().flatten() {
        assert_eq!(quark_close(h), 0);
    }
    // Everything freed with the endpoint: one release per call, whether it
    // took bytes or gave AGAIN (released at once).
    assert!(calls > 0);
    assert_eq!(SERVER_RELEASED.load(Ordering::SeqCst), calls);
}

/// Every way a lending call fails still releases, once, before it returns.
#[test]
fn failed_lending_calls_release_at_once() {
    static RELEASED: AtomicUsize = AtomicUsize::new(0);
    let (ep, _) = listen(0);
    let data = b"abc";
    assert_eq!(write_ref(ep, data, &RELEASED), QuarkError::WrongKind as i64);
    assert_eq!(RELEASED.load(Ordering::SeqCst), 1);
    assert_eq!(
        write_ref(ep + 7, data, &RELEASED),
        QuarkError::BadHandle as i64
    );
    assert_eq!(RELEASED.load(Ordering::SeqCst), 2);
    let arg = (&RELEASED as *const AtomicUsize).cast_mut().cast();
    // SAFETY: a NULL buffer is refused before any use; `arg` is what the
    // callback expects.
    let r = unsafe { quark_stream_write_ref(ep, std::ptr::null(), 3, Some(count_release), arg) };
    assert!(r < 0);
    assert_eq!(RELEASED.load(Ordering::SeqCst), 3);
    let mut out = Vec::new();
    assert_eq!(read_with(ep, 10, &mut out), QuarkError::WrongKind as i64);
    assert_eq!(
        quark_stream_read_with(ep, 10, None, std::ptr::null_mut()),
        QuarkError::WrongKind as i64
    );
    assert_eq!(quark_close(ep), 0);
}
