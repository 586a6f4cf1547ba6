//! Readiness: an event loop on `poll(2)` over `quark_ready_fd`, serving a
//! client's bidirectional and unidirectional streams in one thread with every
//! handle non-blocking. A lost wake-up shows as a poll that times out.

use quark_ffi::*;

mod common;
use common::calls::{AGAIN, nonblocking, read, ready, write};

fn listen() -> (i64, u16) {
    common::calls::listen(0)
}

fn connect(port: u16) -> i64 {
    common::calls::connect(port, 0)
}

/// Whether `fd` polls readable within `ms` milliseconds.
fn readable(fd: i32, ms: i32) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd for the call.
    let n = unsafe { libc::poll(&mut p, 1, ms) };
    assert!(n >= 0, "poll failed");
    n == 1 && p.revents & libc::POLLIN != 0
}

/// A payload not aligned with any buffer size.
fn payload(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(7).wrapping_add(seed))
        .collect()
}

/// What the event loop serves: echo on a bidirectional stream, collect a
/// unidirectional one.
#[derive(Default)]
struct Server {
    conn: Option<i64>,
    bi: Option<i64>,
    uni: Option<i64>,
    echo: Vec<u8>,
    echo_written: usize,
    echo_fin_seen: bool,
    echo_done: bool,
    uni_got: Vec<u8>,
    uni_done: bool,
}

impl Server {
    /// Advance whatever can advance without waiting; whether anything did.
    fn step(&mut self, ep: i64) -> bool {
        let mut progress = false;
        if self.conn.is_none() {
            self.conn = nonblocking(quark_accept(ep), "accept");
            progress |= self.conn.is_some();
        }
        let Some(conn) = self.conn else {
            return progress;
        };
        if self.bi.is_none() {
            self.bi = nonblocking(quark_stream_accept(conn), "stream accept");
            progress |= self.bi.is_some();
        }
        if self.uni.is_none() {
            self.uni = nonblocking(quark_stream_accept_uni(conn), "uni accept");
            if let Some(h) = self.uni {
                // Read-only: writing is refused.
                assert_eq!(write(h, b"x"), QuarkError::Shutdown as i64);
                progress = true;
            }
        }
        let mut buf = [0u8; 3000];
        if let (Some(s), false) = (self.uni, self.uni_done) {
            loop {
                match read(s, &mut buf) {
                    AGAIN => break,
                    0 => {
                        self.uni_done = true;
                        progress = true;
                        break;
                    }
                    n if n > 0 => {
                        self.uni_got.extend_from_slice(&buf[..n as usize]);
                        progress = true;
                    }
                    e => panic!("uni read: {e}"),
                }
            }
        }
        if let (Some(s), false) = (self.bi, self.echo_done) {
            while !self.echo_fin_seen {
                match read(s, &mut buf) {
                    AGAIN => break,
                    0 => self.echo_fin_seen = true,
                    n if n > 0 => self.echo.extend_from_slice(&buf[..n as usize]),
                    e => panic!("read: {e}"),
                }
                progress = true;
            }
            while self.echo_written < self.echo.len() {
                match write(s, &self.echo[self.echo_written..]) {
                    AGAIN => break,
                    n if n > 0 => {
                        self.echo_written += n as usize;
                        progress = true;
                    }
                    e => panic!("write: {e}"),
                }
            }
            if self.echo_fin_seen && self.echo_written == self.echo.len() {
                assert_eq!(quark_stream_shutdown(s), 0);
                self.echo_done = true;
                progress = true;
            }
        }
        progress
    }
}

#[test]
fn an_event_loop_on_the_ready_fd_serves_bi_and_uni_streams() {
    let (ep, port) = listen();
    assert_eq!(quark_set_nonblocking(ep, 1), 0);
    let fd = quark_ready_fd(ep);
    assert!(fd >= 0, "ready fd: {fd}");
    assert_eq!(quark_accept(ep), AGAIN);
    assert!(!readable(fd, 0), "nothing is ready before a client comes");

    let bi_data = payload(700_000, 3);
    let uni_data = payload(300_001, 11);
    let (bi_sent, uni_sent) = (bi_data.clone(), uni_data.clone());
    let client = std::thread::spawn(move || {
        let conn = connect(port);
        let uni = quark_stream_open_uni(conn);
        assert!(uni > 0, "open uni: {uni}");
        // Write-only: reading is refused.
        assert_eq!(read(uni, &mut [0u8; 4]), QuarkError::WrongKind as i64);
        assert_eq!(write(uni, &uni_sent), uni_sent.len() as i64);
        assert_eq!(quark_stream_shutdown(uni), 0);
        let bi = quark_stream_open(conn);
        assert!(bi > 0, "open: {bi}");
        assert_eq!(write(bi, &bi_sent), bi_sent.len() as i64);
        assert_eq!(quark_stream_shutdown(bi), 0);
        let mut echoed = Vec::new();
        let mut buf = [0u8; 8192];
        loop {
            match read(bi, &mut buf) {
                0 => break,
                n if n > 0 => echoed.extend_from_slice(&buf[..n as usize]),
                e => panic!("client read: {e}"),
            }
        }
        assert_eq!(quark_close(uni), 0);
        assert_eq!(quark_close(bi), 0);
        assert_eq!(quark_close(conn), 0);
        echoed
    });

    let mut server = Server::default();
    let mut wakeups = 0;
    while !(server.echo_done && server.uni_done) {
        if server.step(ep) {
            continue;
        }
        // Nothing can advance: the fd must signal what will.
        assert!(
            readable(fd, 10_000),
            "no readiness within 10 s (a lost wake-up)"
        );
        let list = ready(ep);
        assert!(!list.is_empty(), "fd readable but the ready list is empty");
        let known = [Some(ep), server.conn, server.bi, server.uni];
        for h in &list {
            assert!(known.contains(&Some(*h)), "unknown handle {h} on the list");
        }
        // Every handle of the endpoint gives the same descriptor.
        assert_eq!(quark_ready_fd(list[0]), fd);
        wakeups += 1;
    }
    assert_eq!(server.uni_got, uni_data, "unidirectional bytes differ");
    assert_eq!(client.join().unwrap(), bi_data, "echoed bytes differ");
    assert!(wakeups > 0);
    // Drained: the descriptor no longer polls readable.
    ready(ep);
    assert!(!readable(fd, 0));
    for h in [server.bi, server.uni, server.conn].into_iter().flatten() {
        assert_eq!(quark_close(h), 0);
    }
    assert_eq!(quark_close(ep), 0);
}

#[test]
fn ready_rejects_bad_arguments() {
    let (ep, _) = listen();
    // SAFETY: a NULL buffer with a non-zero capacity is refused before use.
    let r = unsafe { quark_ready(ep, std::ptr::null_mut(), 4) };
    assert_eq!(r, QuarkError::Inval as i64);
    // SAFETY: capacity 0 never touches the buffer.
    assert_eq!(unsafe { quark_ready(ep, std::ptr::null_mut(), 0) }, 0);
    assert_eq!(quark_close(ep), 0);
    assert_eq!(quark_ready_fd(ep), QuarkError::BadHandle as i32);
}
