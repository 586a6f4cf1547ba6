//! Fewer calls per message: `quark_stream_read_with_fin` (a read that says
//! the stream ended, so no read for the end) and `QUARK_FLAG_NONBLOCKING`
//! (every handle of an endpoint non-blocking from the start, no
//! `quark_set_nonblocking` per connection or stream).

use std::ffi::c_void;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use quark_ffi::*;

mod common;
use common::calls::{AGAIN, c, connect_on, listen, until_done, write};

/// A caller-driven client endpoint whose handles start non-blocking.
fn client() -> i64 {
    let flags = QUARK_FLAG_CALLER_DRIVEN | QUARK_FLAG_NONBLOCKING;
    // SAFETY: a NUL-terminated string that lives across the call.
    let ep = unsafe { quark_client(c("127.0.0.1:0").as_ptr(), flags) };
    assert!(ep > 0, "client: {ep}");
    ep
}

extern "C" fn append(arg: *mut c_void, data: *const u8, len: usize) {
    // SAFETY: `arg` is the test's `Vec<u8>`, `data` holds `len` bytes.
    let (out, piece) = unsafe {
        (
            &mut *arg.cast::<Vec<u8>>(),
            std::slice::from_raw_parts(data, len),
        )
    };
    out.extend_from_slice(piece);
}

/// One `quark_stream_read_with_fin` into `out`: the count and `*fin`.
fn read_fin(s: i64, out: &mut Vec<u8>) -> (i64, i32) {
    let mut fin = -1i32;
    let arg = (out as *mut Vec<u8>).cast::<c_void>();
    // SAFETY: `fin` is writable; `append` takes `arg` as the Vec it is.
    let n = unsafe { quark_stream_read_with_fin(s, usize::MAX, Some(append), arg, &mut fin) };
    (n, fin)
}

/// A server that answers each of `n` streams of one connection with
/// `reply`, in one write then a shutdown after `gap` (the FIN alone), or
/// with the FIN on the data when `gap` is zero. It closes the connection
/// once told to (a peer's close may overtake a FIN not yet read).
fn server(
    n: usize,
    reply: &'static [u8],
    gap: std::time::Duration,
) -> (u16, std::thread::JoinHandle<()>, mpsc::Sender<()>) {
    let (ep, port) = listen(0);
    let (done, told) = mpsc::channel();
    let t = std::thread::spawn(move || {
        let conn = quark_accept(ep);
        assert!(conn > 0, "accept: {conn}");
        for _ in 0..n {
            let s = quark_stream_accept(conn);
            assert!(s > 0, "stream accept: {s}");
            if gap.is_zero() {
                // SAFETY: static bytes, nothing to release.
                let w = unsafe {
                    quark_stream_write_ref_fin(
                        s,
                        reply.as_ptr(),
                        reply.len(),
                        None,
                        std::ptr::null_mut(),
                    )
                };
                assert_eq!(w, reply.len() as i64);
            } else {
                assert_eq!(write(s, reply), reply.len() as i64);
                std::thread::sleep(gap);
                assert_eq!(quark_stream_shutdown(s), 0);
            }
            assert_eq!(quark_close(s), 0);
        }
        told.recv().unwrap();
        // Lingers until what was written is acknowledged.
        assert_eq!(quark_close(conn), 0);
        assert_eq!(quark_close(ep), 0);
    });
    (port, t, done)
}

/// Opens a stream on `conn` and sends one byte so the server sees it.
fn request(ep: i64, conn: i64) -> i64 {
    let s = until_done(ep, || quark_stream_open(conn));
    assert!(s > 0, "open: {s}");
    assert_eq!(until_done(ep, || write(s, b"?")), 1);
    s
}

/// `read_fin` until it gives something else than AGAIN, running `ep`
/// meanwhile (`*fin` untouched by the AGAINs).
fn read_fin_ready(ep: i64, s: i64, out: &mut Vec<u8>) -> (i64, i32) {
    for _ in 0..5_000 {
        let (n, fin) = read_fin(s, out);
        if n != AGAIN {
            return (n, fin);
        }
        assert_eq!(fin, -1, "fin written with AGAIN");
        assert!(quark_process(ep, 10) >= 0);
    }
    panic!("still AGAIN after 5000 rounds");
}

/// Runs `ep` for `d` without reading: what the peer sent arrives.
fn settle(ep: i64, d: Duration) {
    let until = Instant::now() + d;
    while Instant::now() < until {
        assert!(quark_process(ep, 5) >= 0);
    }
}

#[test]
fn read_with_fin_reports_the_end_with_the_last_bytes() {
    static REPLY: [u8; 3000] = [7; 3000];
    let (port, served, done) = server(2, &REPLY, Duration::ZERO);
    let ep = client();
    let conn = connect_on(ep, port);
    for _ in 0..2 {
        let s = request(ep, conn);
        // The whole answer and its FIN arrive before the first read (the
        // FIN may come in a frame of its own): one read takes it all and
        // says the stream ended.
        settle(ep, Duration::from_millis(300));
        let mut got = Vec::new();
        assert_eq!(read_fin_ready(ep, s, &mut got), (REPLY.len() as i64, 1));
        assert_eq!(got, REPLY);
        // Reading again: the end, and fin again.
        assert_eq!(read_fin(s, &mut got), (0, 1));
        assert_eq!(quark_close(s), 0);
    }
    finish(ep, conn, served, done);
}

#[test]
fn read_with_fin_reports_a_later_fin_with_a_read_of_0() {
    static REPLY: [u8; 100] = [9; 100];
    let (port, served, done) = server(1, &REPLY, Duration::from_millis(300));
    let ep = client();
    let conn = connect_on(ep, port);
    let s = request(ep, conn);
    let mut got = Vec::new();
    // The data, without the end (which comes 300 ms later).
    assert_eq!(read_fin_ready(ep, s, &mut got), (REPLY.len() as i64, 0));
    assert_eq!(got, REPLY);
    // Then the end alone.
    assert_eq!(read_fin_ready(ep, s, &mut got), (0, 1));
    assert_eq!(quark_close(s), 0);
    finish(ep, conn, served, done);
}

/// Lets the server close, runs `ep` until its thread is done, then
/// closes this side.
fn finish(ep: i64, conn: i64, served: std::thread::JoinHandle<()>, done: mpsc::Sender<()>) {
    done.send(()).unwrap();
    serve_out(ep, served);
    for h in [conn, ep] {
        assert_eq!(quark_close(h), 0);
    }
}

/// Runs `ep` until the server's thread is done.
fn serve_out(ep: i64, served: std::thread::JoinHandle<()>) {
    for _ in 0..2_000 {
        if served.is_finished() {
            break;
        }
        assert!(quark_process(ep, 10) >= 0);
    }
    served.join().unwrap();
}

/// The server closes its connection right after a FIN sent on its own
/// (`quark_close` lingers until what was written is acknowledged, the FIN
/// included): the client still reads the end, and reads it again, not a
/// closed connection. A close once overtook a FIN not yet sent.
#[test]
fn a_close_right_after_a_fin_alone_still_reads_as_the_end() {
    static REPLY: [u8; 100] = [5; 100];
    // A caller-driven server: nothing is sent between its calls but what
    // they drive, so its FIN is still unsent when it closes.
    let (sep, port) = listen(QUARK_FLAG_CALLER_DRIVEN);
    let served = std::thread::spawn(move || {
        let conn = quark_accept(sep);
        assert!(conn > 0, "accept: {conn}");
        let s = quark_stream_accept(conn);
        assert!(s > 0, "stream accept: {s}");
        assert_eq!(write(s, &REPLY), REPLY.len() as i64);
        // The data goes out and is acknowledged.
        settle(sep, Duration::from_millis(300));
        assert_eq!(quark_stream_shutdown(s), 0);
        assert_eq!(quark_close(s), 0);
        assert_eq!(quark_close(conn), 0);
        assert_eq!(quark_close(sep), 0);
    });
    let ep = client();
    let conn = connect_on(ep, port);
    let s = request(ep, conn);
    let mut got = Vec::new();
    let (n, fin) = read_fin_ready(ep, s, &mut got);
    assert_eq!(n, REPLY.len() as i64);
    assert_eq!(got, REPLY);
    serve_out(ep, served);
    if fin == 0 {
        assert_eq!(read_fin_ready(ep, s, &mut got), (0, 1));
    }
    assert_eq!(read_fin(s, &mut got), (0, 1));
    for h in [s, conn, ep] {
        assert_eq!(quark_close(h), 0);
    }
}

#[test]
fn read_with_fin_errors_leave_fin_alone() {
    let mut got = Vec::new();
    assert_eq!(read_fin(0, &mut got), (QuarkError::BadHandle as i64, -1));
    let ep = client();
    // An endpoint is not a stream.
    assert_eq!(read_fin(ep, &mut got), (QuarkError::WrongKind as i64, -1));
    // A NULL visitor is invalid; a NULL `fin` is allowed.
    let mut fin = -1;
    // SAFETY: `fin` is writable.
    let r = unsafe { quark_stream_read_with_fin(ep, 1, None, std::ptr::null_mut(), &mut fin) };
    assert_eq!((r, fin), (QuarkError::WrongKind as i64, -1));
    // SAFETY: NULL `fin` is allowed.
    let r = unsafe {
        quark_stream_read_with_fin(
            0,
            1,
            Some(append),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
    };
    assert_eq!(r, QuarkError::BadHandle as i64);
    assert_eq!(quark_close(ep), 0);
}

#[test]
fn nonblocking_flag_makes_every_new_handle_nonblocking() {
    // A threaded server endpoint with the flag: accept gives AGAIN at once.
    let (server, port) = listen(QUARK_FLAG_NONBLOCKING);
    assert_eq!(quark_accept(server), AGAIN);
    let ep = client();
    // The endpoint is non-blocking: the connect returns before the handshake.
    let conn = connect_on(ep, port);
    assert_eq!(until_done(ep, || i64::from(quark_connected(conn))), 0);
    let s = until_done(ep, || quark_stream_open(conn));
    assert!(s > 0, "open: {s}");
    // No quark_set_nonblocking: the stream's read gives AGAIN, not a wait.
    let mut got = Vec::new();
    assert_eq!(read_fin(s, &mut got).0, AGAIN);
    assert_eq!(until_done(ep, || write(s, b"x")), 1);
    // The server's accepted connection and stream start non-blocking too.
    // (The server endpoint is threaded: `until_done` only gives it time.)
    let accepted = until_done(ep, || quark_accept(server));
    assert!(accepted > 0, "accept: {accepted}");
    let stream = until_done(ep, || quark_stream_accept(accepted));
    assert!(stream > 0, "stream accept: {stream}");
    let mut buf = Vec::new();
    let n = until_done(ep, || read_fin(stream, &mut buf).0);
    assert_eq!((n, buf.as_slice()), (1, &b"x"[..]));
    // Nothing more has come: AGAIN, not a wait.
    assert_eq!(read_fin(stream, &mut buf).0, AGAIN);
    // Switching one handle back still works.
    assert_eq!(quark_set_nonblocking(stream, 0), 0);
    for h in [stream, accepted, s, conn, ep, server] {
        assert_eq!(quark_close_nowait(h), 0);
    }
    // An unknown flag is still refused.
    // SAFETY: a NUL-terminated string that lives across the call.
    let bad = unsafe { quark_client(c("127.0.0.1:0").as_ptr(), 0x100) };
    assert_eq!(bad, QuarkError::Inval as i64);
}
