//! A name with several addresses, in the modes where libquark's handshake
//! is not a thread's blocking wait: `localhost` listed as `::1` first, then
//! `127.0.0.1` (Debian's and Ubuntu's hosts file), with the server on
//! 127.0.0.1 only and a socket on `[::1]` that answers nothing (a host that
//! is down: no ICMP error either). A caller-driven endpoint gets through on
//! the second address, blocking and non-blocking, and the second attempt
//! starts on the endpoint's own timer, which its descriptor shows.
//!
//! Each test runs again in a mount namespace with that hosts file (needs
//! root and `unshare`: CI has both; skipped elsewhere).

use std::net::UdpSocket;
use std::process::Command;

use quark_ffi::*;
use sha2::{Digest, Sha256};

mod common;
use common::calls::{
    AGAIN, c, connect_on_addr, listen, read, serve_one_echo, try_connect_addr, until_done, write,
};
use common::{mount_namespaces, scratch};

const INSIDE: &str = "QUARK_FFI_HOSTS_NAMESPACE";

/// Outside: runs the test `name` of this binary again in a mount namespace
/// whose /etc/hosts lists localhost as `::1`, then `127.0.0.1`, and returns
/// false. Inside that run: true.
fn inside(name: &str) -> bool {
    if std::env::var_os(INSIDE).is_some() {
        return true;
    }
    if !mount_namespaces() {
        eprintln!("no mount namespace here (root and unshare needed): skipped");
        return false;
    }
    let hosts = scratch(name).join("hosts");
    std::fs::write(&hosts, "::1 localhost\n127.0.0.1 localhost\n").unwrap();
    let status = Command::new("unshare")
        .args([
            "-m",
            "sh",
            "-c",
            r#"mount --bind "$1" /etc/hosts && exec "$2" --exact "$3" --test-threads 1"#,
            "sh",
        ])
        .arg(&hosts)
        .arg(std::env::current_exe().unwrap())
        .arg(name)
        .env(INSIDE, "1")
        .status()
        .unwrap();
    assert!(status.success(), "{name} in the namespace: {status}");
    false
}

/// The server on 127.0.0.1 (echoing one stream of each connection) and a
/// silent socket on [::1] at the same port.
fn server_and_silent() -> (u16, UdpSocket, std::thread::JoinHandle<()>) {
    let (server, port) = listen(0);
    let silent = UdpSocket::bind(("::1", port)).expect("[::1] on this host");
    silent.set_nonblocking(true).unwrap();
    let served = serve_one_echo(server);
    (port, silent, served)
}

/// Datagrams waiting on `s`.
fn received(s: &UdpSocket) -> usize {
    let mut buf = [0u8; 2048];
    std::iter::from_fn(|| s.recv(&mut buf).ok()).count()
}

/// Echoes 100 000 bytes over `conn` (non-blocking, driven by `ep`) and
/// checks them by hash.
fn echo(ep: i64, conn: i64) {
    let s = until_done(ep, || quark_stream_open(conn));
    assert!(s > 0, "open: {s}");
    assert_eq!(quark_set_nonblocking(s, 1), 0);
    let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
    let mut sent = 0;
    while sent < data.len() {
        let n = until_done(ep, || write(s, &data[sent..]));
        assert!(n > 0, "write: {n}");
        sent += n as usize;
    }
    assert_eq!(quark_stream_shutdown(s), 0);
    let (mut got, mut buf) = (Vec::new(), vec![0u8; 7000]);
    loop {
        match until_done(ep, || read(s, &mut buf)) {
            0 => break,
            n if n > 0 => got.extend_from_slice(&buf[..n as usize]),
            e => panic!("read: {e}"),
        }
    }
    assert_eq!(Sha256::digest(&got), Sha256::digest(&data));
    assert_eq!(quark_close(s), 0);
}

/// Whether `fd` polls readable within `ms` milliseconds.
fn readable(fd: i32, ms: i32) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd for the call.
    unsafe { libc::poll(&mut p, 1, ms) == 1 }
}

#[test]
fn a_nonblocking_caller_driven_connect_tries_every_address() {
    if !inside("a_nonblocking_caller_driven_connect_tries_every_address") {
        return;
    }
    let (port, silent, served) = server_and_silent();
    // SAFETY: a NUL-terminated string that lives across the call.
    let ep = unsafe { quark_client(c("[::]:0").as_ptr(), QUARK_FLAG_CALLER_DRIVEN) };
    assert!(ep > 0, "client: {ep}");
    assert_eq!(quark_set_nonblocking(ep, 1), 0);
    let conn = connect_on_addr(ep, &format!("localhost:{port}"));
    assert_eq!(quark_connected(conn), AGAIN as i32);
    // The first attempt's Initial goes to [::1]; then the endpoint sleeps
    // until its timer: the second attempt's start (10 ms on loopback), well
    // before the first attempt's retransmission (a PTO, about a second).
    assert!(quark_process(ep, 0) >= 0);
    assert!(
        readable(quark_ready_fd(ep), 20_000),
        "the descriptor never woke"
    );
    assert!(quark_process(ep, 0) >= 0);
    assert_eq!(
        received(&silent),
        1,
        "woken by the second attempt's delay, before any retransmission to [::1]"
    );
    assert_eq!(until_done(ep, || i64::from(quark_connected(conn))), 0);
    echo(ep, conn);
    for h in [conn, ep] {
        assert_eq!(quark_close(h), 0);
    }
    served.join().unwrap();
}

#[test]
fn a_blocking_caller_driven_connect_tries_every_address() {
    if !inside("a_blocking_caller_driven_connect_tries_every_address") {
        return;
    }
    let (port, silent, served) = server_and_silent();
    let conn = try_connect_addr(
        &format!("localhost:{port}"),
        QUARK_FLAG_CALLER_DRIVEN | QUARK_FLAG_NONBLOCKING,
    );
    assert!(conn > 0, "connect: {conn}");
    assert!(received(&silent) >= 1, "[::1] was tried first");
    echo(conn, conn);
    assert_eq!(quark_close(conn), 0);
    served.join().unwrap();
}
