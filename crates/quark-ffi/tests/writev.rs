//! `quark_stream_writev`: several buffers written as if joined, and the FIN
//! with them, in one call (a message's head, body and end).

use quark_ffi::*;

mod common;
use common::calls::{AGAIN, c, connect, connect_on, read_streams};

fn iov(parts: &[&[u8]]) -> Vec<QuarkIovec> {
    parts
        .iter()
        .map(|p| QuarkIovec {
            base: p.as_ptr(),
            len: p.len(),
        })
        .collect()
}

/// `quark_stream_writev` of `parts`.
fn writev(s: i64, parts: &[&[u8]], fin: bool) -> i64 {
    let v = iov(parts);
    // SAFETY: `v` holds `v.len()` buffers of slices alive across the call.
    unsafe { quark_stream_writev(s, v.as_ptr(), v.len(), i32::from(fin)) }
}

/// A server thread that reads `n` streams of one connection to their end.
fn server(n: usize) -> (u16, std::thread::JoinHandle<Vec<Vec<u8>>>) {
    read_streams(n, |all| all)
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31) ^ seed)
        .collect()
}

#[test]
fn writev_joins_the_buffers_and_ends_the_stream() {
    let (port, served) = server(3);
    let conn = connect(port, 0);
    let body = pattern(3000, 1);
    // Head and body with the FIN: the server reads both joined, then the
    // end, with no `quark_stream_shutdown`.
    let s = quark_stream_open(conn);
    assert!(s > 0, "open: {s}");
    assert_eq!(writev(s, &[b"GET /3000\r\n", &body], true), 3011);
    assert_eq!(quark_close(s), 0);
    // More buffers than fit on the stack, empty ones among them; without
    // `fin` the stream stays open until shut down.
    let parts: Vec<Vec<u8>> = (0..9).map(|i| pattern(i * 100, i as u8)).collect();
    let refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
    let total: usize = refs.iter().map(|p| p.len()).sum();
    let s2 = quark_stream_open(conn);
    assert_eq!(writev(s2, &refs, false), total as i64);
    // A NULL base is fine for an empty buffer.
    let empty = QuarkIovec {
        base: std::ptr::null(),
        len: 0,
    };
    // SAFETY: one buffer, empty.
    assert_eq!(unsafe { quark_stream_writev(s2, &empty, 1, 0) }, 0);
    assert_eq!(quark_stream_shutdown(s2), 0);
    assert_eq!(quark_close(s2), 0);
    // No buffers with `fin`: only the end.
    let s3 = quark_stream_open(conn);
    assert_eq!(
        writev(
            s3,
            b"abc".as_slice().chunks(3).collect::<Vec<_>>().as_slice(),
            false
        ),
        3
    );
    // SAFETY: no buffers, NULL allowed.
    assert_eq!(
        unsafe { quark_stream_writev(s3, std::ptr::null(), 0, 1) },
        0
    );
    assert_eq!(quark_close(s3), 0);
    let got = served.join().unwrap();
    let mut first = b"GET /3000\r\n".to_vec();
    first.extend_from_slice(&body);
    assert_eq!(got[0], first);
    assert_eq!(got[1], refs.concat());
    assert_eq!(got[2], b"abc");
    assert_eq!(quark_close(conn), 0);
}

#[test]
fn writev_nonblocking_takes_what_fits_and_ends_after_the_last() {
    let (port, served) = server(1);
    let flags = QUARK_FLAG_CALLER_DRIVEN | QUARK_FLAG_NONBLOCKING;
    // SAFETY: a NUL-terminated string that lives across the call.
    let ep = unsafe { quark_client(c("127.0.0.1:0").as_ptr(), flags) };
    assert!(ep > 0, "client: {ep}");
    let conn = connect_on(ep, port);
    let s = loop {
        match quark_stream_open(conn) {
            AGAIN => assert!(quark_process(ep, 10) >= 0),
            s => break s,
        }
    };
    assert!(s > 0, "open: {s}");
    // More than flow control lets through at once: taken in pieces.
    let (head, body, tail) = (pattern(10, 3), pattern(6 << 20, 4), pattern(5, 5));
    let mut parts: [&[u8]; 3] = [&head, &body, &tail];
    let mut calls = 0;
    while parts.iter().any(|p| !p.is_empty()) {
        calls += 1;
        let n = writev(s, &parts, true);
        if n == AGAIN {
            assert!(quark_process(ep, 10) >= 0);
            continue;
        }
        assert!(n > 0, "writev: {n}");
        let mut n = n as usize;
        for p in &mut parts {
            let k = n.min(p.len());
            *p = &p[k..];
            n -= k;
        }
        assert_eq!(n, 0, "took more than was given");
    }
    assert!(calls > 1, "6 MiB taken in one non-blocking call");
    assert_eq!(quark_close(s), 0);
    // The server reads it all, then the end.
    while !served.is_finished() {
        assert!(quark_process(ep, 10) >= 0);
    }
    let got = served.join().unwrap();
    assert_eq!(got[0], [head, body, tail].concat());
    for h in [conn, ep] {
        assert_eq!(quark_close_nowait(h), 0);
    }
}

#[test]
fn writev_refuses_bad_arguments() {
    assert_eq!(writev(0, &[b"x"], false), QuarkError::BadHandle as i64);
    let (port, served) = server(1);
    let conn = connect(port, 0);
    // A connection is not a stream.
    assert_eq!(writev(conn, &[b"x"], false), QuarkError::WrongKind as i64);
    let s = quark_stream_open(conn);
    // SAFETY: NULL with a count is refused before it is read.
    let r = unsafe { quark_stream_writev(s, std::ptr::null(), 1, 0) };
    assert_eq!(r, QuarkError::Inval as i64);
    let null = QuarkIovec {
        base: std::ptr::null(),
        len: 1,
    };
    // SAFETY: one buffer, refused for its NULL base.
    assert_eq!(
        unsafe { quark_stream_writev(s, &null, 1, 0) },
        QuarkError::Inval as i64
    );
    let many = vec![&b""[..]; QUARK_IOV_MAX + 1];
    assert_eq!(writev(s, &many, false), QuarkError::Inval as i64);
    // Nothing was written: the stream still works, and ends.
    assert_eq!(writev(s, &[b"ok"], true), 2);
    // After the end, writing is refused.
    assert!(writev(s, &[b"late"], false) < 0);
    assert_eq!(quark_close(s), 0);
    assert_eq!(served.join().unwrap()[0], b"ok");
    assert_eq!(quark_close(conn), 0);
}
