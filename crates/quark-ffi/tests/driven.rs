//! Caller-driven endpoints (`QUARK_FLAG_CALLER_DRIVEN`): the test's threads
//! run quark's I/O and timers inside `quark_process` and blocking calls; no
//! library thread moves anything. Transfers are checked by SHA-256.

use std::net::UdpSocket;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use quark_ffi::*;
use sha2::{Digest, Sha256};

mod common;
use common::calls::{
    AGAIN, c, connect, connect_on, echo_next_stream, first_stream, listen, read, read_to_end,
    ready, write,
};

const DRIVEN: u32 = QUARK_FLAG_CALLER_DRIVEN;

fn payload(len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31) ^ (i >> 11) as u8)
        .collect()
}

fn sha(data: &[u8]) -> Vec<u8> {
    Sha256::digest(data).to_vec()
}

/// A non-blocking echo server on a caller-driven endpoint, run by its own
/// thread in a `quark_process` / `quark_ready` loop until `stop`. Returns
/// how many handles the ready list gave.
fn echo_server(ep: i64, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<usize> {
    std::thread::spawn(move || {
        assert_eq!(quark_set_nonblocking(ep, 1), 0);
        let (mut conn, mut stream) = (None, None);
        let (mut data, mut sent, mut eof, mut finished) = (Vec::new(), 0, false, false);
        let mut listed = 0;
        let mut more = 1;
        let mut buf = vec![0u8; 70_000];
        while !stop.load(Ordering::Relaxed) {
            more = quark_process(ep, if more > 0 { 0 } else { 20 });
            assert!(more >= 0, "quark_process: {more}");
            listed += ready(ep).len();
            let Some(s) = first_stream(ep, &mut conn, &mut stream) else {
                continue;
            };
            while !eof {
                match read(s, &mut buf) {
                    AGAIN => break,
                    0 => eof = true,
                    n if n > 0 => data.extend_from_slice(&buf[..n as usize]),
                    e => panic!("read: {e}"),
                }
            }
            while eof && sent < data.len() {
                match write(s, &data[sent..]) {
                    AGAIN => break,
                    n if n > 0 => sent += n as usize,
                    e => panic!("write: {e}"),
                }
            }
            if eof && sent == data.len() && !finished {
                assert_eq!(quark_stream_shutdown(s), 0);
                finished = true;
            }
        }
        for h in [stream, conn, Some(ep)].into_iter().flatten() {
            assert_eq!(quark_close(h), 0);
        }
        listed
    })
}

/// The client side in blocking mode: every call drives the client's own
/// caller-driven endpoint while it waits. Returns what was echoed.
fn echo_client(conn: i64, data: &[u8]) -> Vec<u8> {
    let s = quark_stream_open(conn);
    assert!(s > 0, "open: {s}");
    assert_eq!(write(s, data), data.len() as i64);
    assert_eq!(quark_stream_shutdown(s), 0);
    let got = read_to_end(s);
    assert_eq!(quark_close(s), 0);
    got
}

#[test]
fn caller_driven_echo_is_byte_exact() {
    let (ep, port) = listen(DRIVEN);
    let stop = Arc::new(AtomicBool::new(false));
    let server = echo_server(ep, stop.clone());
    let conn = connect(port, DRIVEN);
    let data = payload(1_000);
    assert_eq!(sha(&echo_client(conn, &data)), sha(&data));
    assert_eq!(quark_close(conn), 0);
    stop.store(true, Ordering::Relaxed);
    assert!(
        server.join().unwrap() > 0,
        "the ready list never listed a handle"
    );
}

#[test]
fn caller_driven_megabytes_both_ways() {
    let (ep, port) = listen(DRIVEN);
    let stop = Arc::new(AtomicBool::new(false));
    let server = echo_server(ep, stop.clone());
    let conn = connect(port, DRIVEN);
    let data = payload(5_000_000);
    assert_eq!(sha(&echo_client(conn, &data)), sha(&data));
    assert_eq!(quark_close(conn), 0);
    stop.store(true, Ordering::Relaxed);
    server.join().unwrap();
}

/// A threaded client against a caller-driven server and the other way round.
#[test]
fn caller_driven_and_threaded_endpoints_interoperate() {
    let (ep, port) = listen(DRIVEN);
    let stop = Arc::new(AtomicBool::new(false));
    let server = echo_server(ep, stop.clone());
    let conn = connect(port, 0);
    let data = payload(1_000_000);
    assert_eq!(sha(&echo_client(conn, &data)), sha(&data));
    assert_eq!(quark_close(conn), 0);
    stop.store(true, Ordering::Relaxed);
    server.join().unwrap();

    // Threaded server (the library's thread), caller-driven client.
    let (ep, port) = listen(0);
    let server = std::thread::spawn(move || {
        let conn = quark_accept(ep);
        assert!(conn > 0);
        let s = echo_next_stream(conn);
        // The client closes first; then the endpoint's close ends everything.
        let _ = read(s, &mut [0u8; 16]);
        quark_close(s);
        quark_close(conn);
        quark_close(ep);
    });
    let conn = connect(port, DRIVEN);
    assert_eq!(sha(&echo_client(conn, &data)), sha(&data));
    assert_eq!(quark_close(conn), 0);
    server.join().unwrap();
}

/// A UDP relay between client and server that drops the client's datagrams
/// while `drop` is set (counting them in `dropped`).
fn relay(
    server: u16,
    drop: Arc<AtomicBool>,
    dropped: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
) -> u16 {
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(20)))
        .unwrap();
    let port = sock.local_addr().unwrap().port();
    let server_addr: std::net::SocketAddr = ([127, 0, 0, 1], server).into();
    std::thread::spawn(move || {
        let mut client = None;
        let mut buf = vec![0u8; 65_536];
        while !stop.load(Ordering::Relaxed) {
            let Ok((n, from)) = sock.recv_from(&mut buf) else {
                continue;
            };
            if from == server_addr {
                if let Some(to) = client {
                    let _ = sock.send_to(&buf[..n], to);
                }
            } else if drop.load(Ordering::Relaxed) {
                dropped.fetch_add(1, Ordering::Relaxed);
            } else {
                client = Some(from);
                let _ = sock.send_to(&buf[..n], server_addr);
            }
        }
    });
    port
}

/// Loss recovery needs a timer: with the client's datagrams dropped for a
/// while, only its probe timeout (the timerfd in the caller's poll set)
/// sends the request again. The client thread only polls.
#[test]
fn timers_fire_when_the_caller_only_polls() {
    let (ep, port) = listen(DRIVEN);
    let stop = Arc::new(AtomicBool::new(false));
    let server = echo_server(ep, stop.clone());
    let (drop, dropped) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicUsize::new(0)),
    );
    let relay_port = relay(port, drop.clone(), dropped.clone(), stop.clone());
    let conn = connect(relay_port, DRIVEN);
    assert_eq!(quark_set_nonblocking(conn, 1), 0);
    let s = quark_stream_open(conn);
    assert!(s > 0, "open: {s}");
    assert_eq!(quark_set_nonblocking(s, 1), 0);
    let data = payload(3_000);
    // Nothing is sent until the caller processes: the request is lost whole.
    drop.store(true, Ordering::Relaxed);
    assert_eq!(write(s, &data), data.len() as i64);
    assert_eq!(quark_stream_shutdown(s), 0);
    let fd = quark_ready_fd(conn);
    assert!(fd >= 0);
    let mut got = Vec::new();
    let mut buf = vec![0u8; 10_000];
    let mut more = 1;
    let mut polls = 0;
    loop {
        if dropped.load(Ordering::Relaxed) > 0 && more == 0 {
            // Lost; from now on only a timer can bring it back.
            drop.store(false, Ordering::Relaxed);
        }
        if more == 0 {
            // Wait on the caller's own poll, as a C event loop would.
            let mut p = libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd for the call.
            assert!(unsafe { libc::poll(&mut p, 1, 5_000) } >= 0);
            polls += 1;
            assert!(polls < 200, "no progress: the timer never fired");
        }
        more = quark_process(conn, 0);
        assert!(more >= 0);
        match read(s, &mut buf) {
            AGAIN => {}
            0 => break,
            n if n > 0 => got.extend_from_slice(&buf[..n as usize]),
            e => panic!("read: {e}"),
        }
    }
    assert!(dropped.load(Ordering::Relaxed) > 0, "nothing was dropped");
    assert_eq!(sha(&got), sha(&data));
    assert_eq!(quark_close(s), 0);
    assert_eq!(quark_close(conn), 0);
    stop.store(true, Ordering::Relaxed);
    server.join().unwrap();
}

/// Non-blocking semantics: calls give `QUARK_ERROR_AGAIN` until
/// `quark_process` has run the work, and the ready list names the handles
/// whose waits ended. Also the API's refusals.
#[test]
fn nonblocking_calls_wait_for_quark_process() {
    let (ep, port) = listen(DRIVEN);
    assert_eq!(quark_set_nonblocking(ep, 1), 0);
    assert_eq!(quark_accept(ep), AGAIN);
    // A threaded client: its handshake stalls until the server processes.
    let client = std::thread::spawn(move || {
        let conn = connect(port, 0);
        let s = quark_stream_open(conn);
        assert!(s > 0);
        assert_eq!(write(s, b"hello"), 5);
        assert_eq!(quark_stream_shutdown(s), 0);
        let mut buf = [0u8; 8];
        assert_eq!(
            read(s, &mut buf),
            0,
            "the server shuts its side without data"
        );
        quark_close(s);
        quark_close(conn);
    });
    let mut conn = AGAIN;
    let mut saw_ep = false;
    for _ in 0..500 {
        assert!(quark_process(ep, 20) >= 0);
        saw_ep |= ready(ep).contains(&ep);
        conn = quark_accept(ep);
        if conn != AGAIN {
            break;
        }
    }
    assert!(conn > 0, "accept: {conn}");
    assert!(
        saw_ep,
        "the endpoint was not listed ready before its accept succeeded"
    );
    assert_eq!(quark_set_nonblocking(conn, 1), 0);
    let mut s = AGAIN;
    for _ in 0..500 {
        s = quark_stream_accept(conn);
        if s != AGAIN {
            break;
        }
        assert!(quark_process(ep, 20) >= 0);
    }
    assert!(s > 0, "stream accept: {s}");
    assert_eq!(quark_set_nonblocking(s, 1), 0);
    let mut buf = [0u8; 16];
    let mut got = Vec::new();
    loop {
        match read(s, &mut buf) {
            AGAIN => {
                // Nothing arrives without processing.
                assert_eq!(read(s, &mut buf), AGAIN);
                assert!(quark_process(ep, 20) >= 0);
            }
            0 => break,
            n if n > 0 => got.extend_from_slice(&buf[..n as usize]),
            e => panic!("read: {e}"),
        }
    }
    assert_eq!(got, b"hello");
    assert_eq!(quark_stream_shutdown(s), 0);
    // The FIN goes out only when the endpoint is processed.
    let done = Arc::new(AtomicBool::new(false));
    let watcher = {
        let done = done.clone();
        std::thread::spawn(move || {
            client.join().unwrap();
            done.store(true, Ordering::Relaxed);
        })
    };
    while !done.load(Ordering::Relaxed) {
        assert!(quark_process(ep, 20) >= 0);
    }
    watcher.join().unwrap();
    assert_eq!(quark_close(s), 0);
    assert_eq!(quark_close(conn), 0);
    assert_eq!(quark_close(ep), 0);

    // Refusals: unknown flags, and quark_process on a threaded endpoint.
    let (threaded, _) = listen(0);
    assert_eq!(quark_process(threaded, 0), QuarkError::WrongKind as i64);
    assert_eq!(quark_close(threaded), 0);
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let (cert, key) = (c(&ck.cert.pem()), c(&ck.signing_key.serialize_pem()));
    // SAFETY: NUL-terminated strings that live across the call.
    let bad = unsafe {
        quark_listen_pem_flags(
            c("127.0.0.1:0").as_ptr(),
            cert.as_ptr(),
            key.as_ptr(),
            c("test").as_ptr(),
            0x80,
        )
    };
    assert_eq!(bad, QuarkError::Inval as i64);
}

/// Two connections on one caller-driven client endpoint (`quark_client`,
/// `quark_connect_on`) against a threaded server: one socket, both echoes
/// byte-exact.
#[test]
fn connections_share_a_caller_driven_client_endpoint() {
    let (ep, port) = listen(0);
    let server = std::thread::spawn(move || {
        let mut conns = Vec::new();
        for _ in 0..2 {
            let conn = quark_accept(ep);
            conns.push(conn);
            assert!(conn > 0, "accept: {conn}");
            quark_close(echo_next_stream(conn));
        }
        // Until the client closes each connection.
        for conn in conns {
            assert_eq!(quark_stream_accept(conn), QuarkError::Closed as i64);
            assert_eq!(quark_close(conn), 0);
        }
        assert_eq!(quark_close(ep), 0);
    });
    // SAFETY: a NUL-terminated string that lives across the call.
    let client = unsafe { quark_client(c("127.0.0.1:0").as_ptr(), DRIVEN) };
    assert!(client > 0, "client: {client}");
    let (a, b) = (connect_on(client, port), connect_on(client, port));
    assert_eq!(quark_ready_fd(a), quark_ready_fd(client), "one endpoint");
    let (x, y) = (payload(150_000), payload(70_001));
    assert_eq!(sha(&echo_client(a, &x)), sha(&x));
    assert_eq!(sha(&echo_client(b, &y)), sha(&y));
    assert_eq!(quark_close(a), 0);
    assert_eq!(quark_close(b), 0);
    assert_eq!(quark_close(client), 0);
    server.join().unwrap();
}

extern "C" fn count_hook(arg: *mut std::ffi::c_void) {
    // SAFETY: the test passes a `&'static AtomicUsize` as `arg`.
    unsafe { &*arg.cast::<AtomicUsize>() }.fetch_add(1, Ordering::SeqCst);
}

/// `quark_on_work` hears only of new work, so a hook set while work is
/// already flagged (a new endpoint's first round) is called at once.
#[test]
fn on_work_is_told_of_work_flagged_before_it() {
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let (ep, _) = listen(DRIVEN);
    let arg = (&CALLS as *const AtomicUsize).cast_mut().cast();
    assert_eq!(quark_on_work(ep, Some(count_hook), arg), 0);
    assert_eq!(CALLS.load(Ordering::SeqCst), 1);
    assert!(quark_process(ep, 0) >= 0);
    assert_eq!(quark_on_work(ep, None, std::ptr::null_mut()), 0);
    assert_eq!(quark_close(ep), 0);
}
