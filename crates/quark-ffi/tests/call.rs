//! The safe Rust wrappers (`quark_ffi::call`): the same entry points as C,
//! and the duplicated ready descriptor, which polls like `quark_ready_fd`'s
//! and stays the caller's after the endpoint is gone.

use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};

use quark_ffi::{QuarkError, call, quark_accept, quark_close, quark_local_port};
use quark_ffi::{quark_ready_fd, quark_set_nonblocking};

fn c(s: &str) -> CString {
    CString::new(s).unwrap()
}

fn readable(fd: &OwnedFd, ms: i32) -> bool {
    let mut p = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd for the call.
    let n = unsafe { libc::poll(&mut p, 1, ms) };
    assert!(n >= 0, "poll failed");
    n == 1 && p.revents & libc::POLLIN != 0
}

#[test]
fn the_duplicated_ready_fd_signals_the_ready_list() {
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let ep = call::listen_pem(
        &c("127.0.0.1:0"),
        &c(&ck.cert.pem()),
        &c(&ck.signing_key.serialize_pem()),
        &c("test"),
    );
    assert!(ep > 0, "listen: {} ({ep})", call::strerror(ep));
    let fd = call::ready_fd(ep).unwrap();
    assert_ne!(fd.as_raw_fd(), quark_ready_fd(ep), "a duplicate");
    assert_eq!(quark_set_nonblocking(ep, 1), 0);
    assert_eq!(quark_accept(ep), QuarkError::Again as i64);
    assert!(!readable(&fd, 0), "nothing listed yet");

    let port = quark_local_port(ep);
    let addr = c(&format!("127.0.0.1:{port}"));
    let client = std::thread::spawn(move || {
        let conn = call::connect(
            call::Via::Own(0),
            &addr,
            &c("localhost"),
            &c("test"),
            true,
            None,
            Some(&c("aes256")),
        );
        assert!(conn > 0, "connect: {}", call::strerror(conn));
        conn
    });
    // The accept that gave AGAIN lists the endpoint once a client is in.
    assert!(readable(&fd, 10_000), "the endpoint was listed");
    let mut out = [0i64; 4];
    assert_eq!(call::ready(ep, &mut out), 1);
    assert_eq!(out[0], ep);
    assert!(!readable(&fd, 0), "drained");
    let conn = quark_accept(ep);
    assert!(conn > 0, "accept: {conn}");
    let client_conn = client.join().unwrap();

    // Bad input through the wrappers: typed errors, no panic.
    let mut buf = [0u8; 8];
    assert_eq!(
        call::stream_read(conn, &mut buf),
        QuarkError::WrongKind as i64
    );
    assert_eq!(call::stream_write(ep, b"x"), QuarkError::WrongKind as i64);
    assert_eq!(
        call::strerror(QuarkError::Again as i64),
        "operation would block; try again"
    );

    assert_eq!(quark_close(client_conn), 0);
    assert_eq!(quark_close(conn), 0);
    assert_eq!(quark_close(ep), 0);
    // The copy is still ours; the closed handle is refused.
    assert!(fd.as_raw_fd() >= 0);
    assert_eq!(call::ready_fd(ep).err(), Some(QuarkError::BadHandle as i64));
    assert_eq!(call::ready(ep, &mut out), QuarkError::BadHandle as i64);
}
