//! Connections on one client endpoint share their TLS configuration, so the
//! second handshake to a server resumes the session of the first;
//! `QUARK_FLAG_NO_RESUMPTION` keeps every handshake a full one.

use quark_ffi::*;

mod common;
use common::calls::{c, connect_on, listen};

/// `n` blocking insecure connects on a new threaded client endpoint made
/// with `flags` to a new server made with `server_flags`; whether each
/// resumed.
fn resumed(flags: u32, server_flags: u32, n: usize) -> Vec<i32> {
    let (server, port) = listen(server_flags);
    let accepted = std::thread::spawn(move || {
        (0..n)
            .map(|_| {
                let conn = quark_accept(server);
                assert!(conn > 0, "accept: {conn}");
                conn
            })
            .collect::<Vec<_>>()
    });
    // SAFETY: a NUL-terminated string that lives across the call.
    let ep = unsafe { quark_client(c("127.0.0.1:0").as_ptr(), flags) };
    assert!(ep > 0, "client: {ep}");
    let mut out = Vec::new();
    let mut conns = Vec::new();
    for _ in 0..n {
        let conn = connect_on(ep, port);
        out.push(quark_resumed(conn));
        conns.push(conn);
        // The server's session tickets follow its handshake: let them land.
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    for conn in accepted.join().unwrap().into_iter().chain(conns) {
        assert_eq!(quark_close(conn), 0);
    }
    assert_eq!(quark_close(ep), 0);
    assert_eq!(quark_close(server), 0);
    out
}

#[test]
fn connections_on_one_endpoint_resume_the_first_ones_session() {
    assert_eq!(resumed(0, 0, 3), [0, 1, 1]);
}

#[test]
fn no_resumption_keeps_every_handshake_full() {
    assert_eq!(resumed(QUARK_FLAG_NO_RESUMPTION, 0, 3), [0, 0, 0]);
    // A server with the flag issues no tickets.
    assert_eq!(resumed(0, QUARK_FLAG_NO_RESUMPTION, 2), [0, 0]);
}

#[test]
fn unknown_flags_and_kinds_are_errors() {
    // SAFETY: a NUL-terminated string that lives across the call.
    let ep = unsafe { quark_client(c("127.0.0.1:0").as_ptr(), 16) };
    assert_eq!(ep, QuarkError::Inval as i64);
    // SAFETY: as above.
    let ep = unsafe { quark_client(c("127.0.0.1:0").as_ptr(), QUARK_FLAG_NO_SPIN_BIT) };
    assert!(ep > 0, "a known flag: {ep}");
    assert_eq!(quark_close(ep), 0);
    // SAFETY: as above.
    let ep = unsafe { quark_client(c("127.0.0.1:0").as_ptr(), 0) };
    assert!(ep > 0);
    assert_eq!(quark_resumed(ep), QuarkError::WrongKind as i32);
    assert_eq!(quark_close(ep), 0);
    assert_eq!(quark_resumed(ep), QuarkError::BadHandle as i32);
}
