//! The C API called from Rust: handles, errors and a stream round trip
//! through `quark_listen` / `quark_connect` in one process.

use std::ffi::{CStr, CString};
use std::path::PathBuf;

use quark_ffi::*;

fn c(s: &str) -> CString {
    CString::new(s).unwrap()
}

/// A self-signed certificate for "localhost" and its key, as PEM files.
fn cert_files(name: &str) -> (PathBuf, PathBuf) {
    let dir = std::env::temp_dir().join(format!("quark-ffi-api-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, ck.cert.pem()).unwrap();
    std::fs::write(&key, ck.signing_key.serialize_pem()).unwrap();
    (cert, key)
}

fn listen(name: &str) -> (i64, u16, PathBuf) {
    let (cert, key) = cert_files(name);
    let cert_c = c(cert.to_str().unwrap());
    let key_c = c(key.to_str().unwrap());
    // SAFETY: NUL-terminated strings that live across the call.
    let ep = unsafe {
        quark_listen(
            c("127.0.0.1:0").as_ptr(),
            cert_c.as_ptr(),
            key_c.as_ptr(),
            c("test").as_ptr(),
        )
    };
    assert!(ep > 0, "listen: {ep}");
    let port = quark_local_port(ep);
    assert!(port > 0);
    (ep, port as u16, cert)
}

fn connect(port: u16, ca: &CStr, insecure: i32) -> i64 {
    let addr = c(&format!("127.0.0.1:{port}"));
    // SAFETY: NUL-terminated strings that live across the call.
    unsafe {
        quark_connect(
            addr.as_ptr(),
            c("localhost").as_ptr(),
            c("test").as_ptr(),
            insecure,
            ca.as_ptr(),
        )
    }
}

fn write(stream: i64, data: &[u8]) -> i64 {
    // SAFETY: `data` is valid for `data.len()` bytes.
    unsafe { quark_stream_write(stream, data.as_ptr(), data.len()) }
}

fn read_to_end(stream: i64) -> Result<Vec<u8>, i64> {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        // SAFETY: `buf` is valid and writable for its length.
        let n = unsafe { quark_stream_read(stream, buf.as_mut_ptr(), buf.len()) };
        match n {
            0 => return Ok(out),
            n if n < 0 => return Err(n),
            n => out.extend_from_slice(&buf[..n as usize]),
        }
    }
}

#[test]
fn strerror_covers_every_code() {
    for code in -13..=0 {
        // SAFETY: quark_strerror returns a static NUL-terminated string.
        let text = unsafe { CStr::from_ptr(quark_strerror(code)) };
        assert!(!text.to_bytes().is_empty());
    }
    // SAFETY: as above.
    let unknown = unsafe { CStr::from_ptr(quark_strerror(-1000)) };
    assert_eq!(unknown.to_str().unwrap(), "unknown error");
}

#[test]
fn bad_handles_and_arguments_are_errors() {
    let bad = QuarkError::BadHandle as i64;
    assert_eq!(quark_close(0) as i64, bad);
    assert_eq!(quark_close(-5) as i64, bad);
    assert_eq!(quark_accept(12345), bad);
    assert_eq!(quark_stream_open(1 << 40), bad);
    // SAFETY: null pointers are rejected before use.
    unsafe {
        assert_eq!(
            quark_listen(
                std::ptr::null(),
                std::ptr::null(),
                std::ptr::null(),
                std::ptr::null()
            ),
            QuarkError::Inval as i64
        );
        // No way to check the certificate: refused rather than insecure.
        assert_eq!(
            quark_connect(
                c("127.0.0.1:1").as_ptr(),
                c("localhost").as_ptr(),
                c("test").as_ptr(),
                0,
                std::ptr::null()
            ),
            QuarkError::Inval as i64
        );
        assert_eq!(
            quark_stream_read(1, std::ptr::null_mut(), 0),
            QuarkError::BadHandle as i64
        );
    }
    // A certificate file that does not exist.
    // SAFETY: NUL-terminated strings that live across the call.
    let ep = unsafe {
        quark_listen(
            c("127.0.0.1:0").as_ptr(),
            c("/nonexistent/cert.pem").as_ptr(),
            c("/nonexistent/key.pem").as_ptr(),
            c("test").as_ptr(),
        )
    };
    assert_eq!(ep, QuarkError::Tls as i64);
}

#[test]
fn stream_round_trip_and_stale_handles() {
    let (ep, port, cert) = listen("round-trip");
    assert_eq!(quark_stream_open(ep), QuarkError::WrongKind as i64);

    // The server echoes one stream, reversed, in a thread of its own.
    let server = std::thread::spawn(move || {
        let conn = quark_accept(ep);
        assert!(conn > 0, "accept: {conn}");
        let stream = quark_stream_accept(conn);
        assert!(stream > 0, "stream accept: {stream}");
        let mut data = read_to_end(stream).unwrap();
        data.reverse();
        assert_eq!(write(stream, &data), data.len() as i64);
        assert_eq!(quark_stream_shutdown(stream), 0);
        assert_eq!(
            quark_stream_shutdown(stream),
            0,
            "a second shutdown is harmless"
        );
        assert_eq!(write(stream, b"x"), QuarkError::Shutdown as i64);
        assert_eq!(quark_close(stream), 0);
        // The client's second stream carries nothing; then it closes.
        let next = loop {
            let s = quark_stream_accept(conn);
            if s < 0 {
                break s;
            }
            assert_eq!(read_to_end(s), Ok(Vec::new()));
            assert_eq!(quark_close(s), 0);
        };
        assert_eq!(next, QuarkError::Closed as i64);
        assert_eq!(quark_close(conn), 0);
    });

    let ca = c(cert.to_str().unwrap());
    let conn = connect(port, &ca, 0);
    assert!(conn > 0, "connect: {conn}");
    let stream = quark_stream_open(conn);
    assert!(stream > 0);
    let data: Vec<u8> = (0..300_000u32).map(|i| (i * 7 + i / 251) as u8).collect();
    assert_eq!(write(stream, &data), data.len() as i64);
    assert_eq!(quark_stream_shutdown(stream), 0);
    let mut back = read_to_end(stream).unwrap();
    back.reverse();
    assert!(back == data, "echoed bytes differ");

    assert_eq!(quark_close(stream), 0);
    // Closed once: the handle is dead, even for another close.
    assert_eq!(quark_close(stream), QuarkError::BadHandle as i64 as i32);
    assert_eq!(write(stream, b"late"), QuarkError::BadHandle as i64);
    // A new handle may reuse the slot, but never the number.
    let again = quark_stream_open(conn);
    assert!(again > 0 && again != stream);
    assert_eq!(quark_close(again), 0);
    assert_eq!(quark_close(conn), 0);
    server.join().unwrap();
    assert_eq!(quark_close(ep), 0);
    assert_eq!(quark_accept(ep), QuarkError::BadHandle as i64);
}

#[test]
fn connect_to_wrong_certificate_fails() {
    let (ep, port, _) = listen("wrong-cert");
    // Trust another certificate than the server's.
    let (other, _) = cert_files("wrong-cert-other");
    let ca = c(other.to_str().unwrap());
    let server = std::thread::spawn(move || quark_accept(ep));
    assert_eq!(connect(port, &ca, 0), QuarkError::Connect as i64);
    assert_eq!(quark_close(ep), 0);
    assert!(server.join().unwrap() < 0);
}

/// Retry a non-blocking call while it says `QUARK_ERROR_AGAIN` (bounded,
/// so a bug fails the test instead of hanging it).
fn retry(mut f: impl FnMut() -> i64) -> i64 {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let r = f();
        if r != QuarkError::Again as i64 || std::time::Instant::now() > deadline {
            return r;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

#[test]
fn non_blocking_calls_return_again_instead_of_waiting() {
    let (ep, port, cert) = listen("non-blocking");
    assert_eq!(quark_set_nonblocking(ep, 1), 0);
    // Nobody has connected yet.
    assert_eq!(quark_accept(ep), QuarkError::Again as i64);

    let client = std::thread::spawn(move || {
        let ca = c(cert.to_str().unwrap());
        let conn = connect(port, &ca, 0);
        assert!(conn > 0, "connect: {conn}");
        let stream = quark_stream_open(conn);
        assert_eq!(write(stream, b"ping"), 4);
        let reply = read_to_end(stream).unwrap();
        assert_eq!(quark_close(stream), 0);
        assert_eq!(quark_close(conn), 0);
        reply
    });

    let conn = retry(|| quark_accept(ep));
    assert!(conn > 0, "accept: {conn}");
    assert_eq!(quark_set_nonblocking(conn, 1), 0);
    let stream = retry(|| quark_stream_accept(conn));
    assert!(stream > 0, "stream accept: {stream}");
    assert_eq!(quark_set_nonblocking(stream, 1), 0);
    let mut buf = [0u8; 16];
    let mut got = Vec::new();
    while got.len() < 4 {
        // SAFETY: `buf` is valid and writable for its length.
        let n = retry(|| unsafe { quark_stream_read(stream, buf.as_mut_ptr(), buf.len()) });
        assert!(n > 0, "read: {n}");
        got.extend_from_slice(&buf[..n as usize]);
    }
    assert_eq!(got, b"ping");
    // The client has not finished its stream: nothing more to read yet.
    // SAFETY: as above.
    let n = unsafe { quark_stream_read(stream, buf.as_mut_ptr(), buf.len()) };
    assert_eq!(n, QuarkError::Again as i64);
    assert_eq!(retry(|| write(stream, b"pong")), 4);
    assert_eq!(quark_stream_shutdown(stream), 0);
    assert_eq!(client.join().unwrap(), b"pong");
    assert_eq!(quark_close(stream), 0);
    assert_eq!(quark_close(conn), 0);
    assert_eq!(quark_close(ep), 0);
}

#[test]
fn closing_a_handle_wakes_a_call_blocked_on_it() {
    let (ep, _, _) = listen("close-wakes");
    let waiter = std::thread::spawn(move || quark_accept(ep));
    // Give the waiter time to block (the result is the same if it has not).
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_eq!(quark_close(ep), 0);
    let r = waiter.join().unwrap();
    assert!(
        r == QuarkError::Closed as i64 || r == QuarkError::BadHandle as i64,
        "accept on a closed endpoint: {r}"
    );
}

#[test]
fn a_panic_inside_becomes_an_error_code() {
    let (ep, _, _) = listen("panic");
    // Blocking inside an async runtime panics in tokio; the panic must not
    // cross the C boundary.
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let r = rt.block_on(async { quark_accept(ep) });
    assert_eq!(r, QuarkError::Internal as i64);
    // The library still works afterwards.
    assert!(quark_local_port(ep) > 0);
    assert_eq!(quark_close(ep), 0);
}

#[test]
fn listen_with_pem_in_memory() {
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let (cert, key) = (c(&ck.cert.pem()), c(&ck.signing_key.serialize_pem()));
    // SAFETY: NUL-terminated strings that live across the calls.
    let (bad, ep) = unsafe {
        (
            quark_listen_pem(
                c("127.0.0.1:0").as_ptr(),
                c("not a certificate").as_ptr(),
                key.as_ptr(),
                c("test").as_ptr(),
            ),
            quark_listen_pem(
                c("127.0.0.1:0").as_ptr(),
                cert.as_ptr(),
                key.as_ptr(),
                c("test").as_ptr(),
            ),
        )
    };
    assert_eq!(bad, QuarkError::Tls as i64);
    assert!(ep > 0, "listen_pem: {ep}");
    let port = quark_local_port(ep) as u16;
    let server = std::thread::spawn(move || {
        let conn = quark_accept(ep);
        let stream = quark_stream_accept(conn);
        let data = read_to_end(stream).unwrap();
        assert_eq!(write(stream, &data), data.len() as i64);
        assert_eq!(quark_close(stream), 0);
        assert_eq!(quark_stream_accept(conn), QuarkError::Closed as i64);
        assert_eq!(quark_close(conn), 0);
    });
    // `insecure`: no CA file needed.
    let conn = connect(port, &c("unused"), 1);
    assert!(conn > 0, "connect: {conn}");
    let stream = quark_stream_open(conn);
    assert_eq!(write(stream, b"from memory"), 11);
    assert_eq!(quark_stream_shutdown(stream), 0);
    assert_eq!(read_to_end(stream).unwrap(), b"from memory");
    assert_eq!(quark_close(stream), 0);
    assert_eq!(quark_close(conn), 0);
    server.join().unwrap();
    assert_eq!(quark_close(ep), 0);
}
