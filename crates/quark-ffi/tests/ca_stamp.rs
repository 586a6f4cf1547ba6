//! A client endpoint's TLS configuration is reused without reading the CA
//! file again while the file's stamp is unchanged, and a changed file is
//! still honoured: at once after a write, and after the stamp is trusted.
//! Roots given in memory (`quark_connect_on_pem`) verify the same way.

use std::time::Duration;

use quark_ffi::*;

mod common;
use common::calls::c;

/// A threaded server endpoint with a fresh self-signed certificate for
/// "localhost" (ALPN "test") that accepts connections until it is closed
/// (then closes them); its handle, port and the certificate's PEM.
fn server() -> (i64, u16, String, std::thread::JoinHandle<()>) {
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let pem = ck.cert.pem();
    let (cert, key) = (c(&pem), c(&ck.signing_key.serialize_pem()));
    // SAFETY: NUL-terminated strings that live across the call.
    let ep = unsafe {
        quark_listen_pem(
            c("127.0.0.1:0").as_ptr(),
            cert.as_ptr(),
            key.as_ptr(),
            c("test").as_ptr(),
        )
    };
    assert!(ep > 0, "listen: {ep}");
    let t = std::thread::spawn(move || {
        let mut conns = Vec::new();
        loop {
            let conn = quark_accept(ep);
            if conn <= 0 {
                break;
            }
            conns.push(conn);
        }
        for conn in conns {
            quark_close_nowait(conn);
        }
    });
    (ep, quark_local_port(ep) as u16, pem, t)
}

/// The roots a connect verifies with: a CA file, or PEM text in memory.
#[derive(Clone, Copy)]
enum Ca<'a> {
    File(&'a std::path::Path),
    Pem(&'a str),
}

impl<'a> From<&'a std::path::PathBuf> for Ca<'a> {
    fn from(path: &'a std::path::PathBuf) -> Self {
        Ca::File(path)
    }
}

/// A blocking connect on `ep` to `port` verified with `ca`: the connection
/// handle, or the error.
fn connect<'a>(ep: i64, port: u16, ca: impl Into<Ca<'a>>) -> i64 {
    let addr = c(&format!("127.0.0.1:{port}"));
    let (call, ca): (unsafe extern "C" fn(_, _, _, _, _, _, _) -> _, _) = match ca.into() {
        Ca::File(path) => (quark_connect_on, c(path.to_str().unwrap())),
        Ca::Pem(pem) => (quark_connect_on_pem, c(pem)),
    };
    // SAFETY: NUL-terminated strings that live across the call; NULL ciphers.
    unsafe {
        call(
            ep,
            addr.as_ptr(),
            c("localhost").as_ptr(),
            c("test").as_ptr(),
            0,
            ca.as_ptr(),
            std::ptr::null(),
        )
    }
}

/// Connects, expecting success; whether the handshake resumed.
fn connect_ok<'a>(ep: i64, port: u16, ca: impl Into<Ca<'a>>) -> i32 {
    let conn = connect(ep, port, ca);
    assert!(conn > 0, "connect: {conn}");
    let resumed = quark_resumed(conn);
    // The server's session tickets follow its handshake: let them land.
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(quark_close_nowait(conn), 0);
    resumed
}

#[test]
fn a_stamped_ca_file_is_reused_and_a_changed_one_honoured() {
    let (a, port_a, pem_a, ta) = server();
    let (b, port_b, pem_b, tb) = server();
    let dir = common::scratch("ca-stamp");
    let ca = dir.join("ca.pem");
    std::fs::write(&ca, &pem_a).unwrap();
    // SAFETY: a NUL-terminated string that lives across the call.
    let ep = unsafe { quark_client(c("127.0.0.1:0").as_ptr(), 0) };
    assert!(ep > 0, "client: {ep}");

    // A fresh file is read at each connect (its stamp is not trusted yet).
    assert_eq!(connect_ok(ep, port_a, &ca), 0);
    std::thread::sleep(Duration::from_millis(1100));
    // Read once more, now with a trusted stamp; then reused on the stamp
    // alone, with the session tickets of the configuration.
    assert_eq!(connect_ok(ep, port_a, &ca), 1);
    assert_eq!(connect_ok(ep, port_a, &ca), 1);
    assert!(connect(ep, port_b, &ca) < 0, "B's certificate accepted");

    // Replaced: B's certificate is trusted at once, A's no longer.
    std::fs::write(&ca, &pem_b).unwrap();
    assert_eq!(connect_ok(ep, port_b, &ca), 0);
    assert!(connect(ep, port_a, &ca) < 0, "A's certificate accepted");
    // Also once the new stamp is trusted.
    std::thread::sleep(Duration::from_millis(1100));
    assert_eq!(connect_ok(ep, port_b, &ca), 1);
    assert_eq!(connect_ok(ep, port_b, &ca), 1);
    assert!(connect(ep, port_a, &ca) < 0, "A's certificate accepted");

    // Gone: the connect fails rather than using what was read before.
    std::fs::remove_file(&ca).unwrap();
    assert!(connect(ep, port_b, &ca) < 0, "connected without a CA file");

    assert_eq!(quark_close(ep), 0);
    for (server, t) in [(a, ta), (b, tb)] {
        assert_eq!(quark_close(server), 0);
        t.join().unwrap();
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// Roots in memory: the right ones verify and, the same text again, reuse
/// the configuration with its session tickets; another server's are
/// refused, as is text that holds no certificate.
#[test]
fn roots_in_memory_verify_and_are_reused() {
    let (a, port_a, pem_a, ta) = server();
    let (b, port_b, pem_b, tb) = server();
    // SAFETY: a NUL-terminated string that lives across the call.
    let ep = unsafe { quark_client(c("127.0.0.1:0").as_ptr(), 0) };
    assert!(ep > 0, "client: {ep}");

    assert_eq!(connect_ok(ep, port_a, Ca::Pem(&pem_a)), 0);
    assert_eq!(connect_ok(ep, port_a, Ca::Pem(&pem_a)), 1, "not reused");
    assert!(
        connect(ep, port_b, Ca::Pem(&pem_a)) < 0,
        "B's certificate accepted"
    );
    assert_eq!(connect_ok(ep, port_b, Ca::Pem(&pem_b)), 0);
    assert!(
        connect(ep, port_a, Ca::Pem(&pem_b)) < 0,
        "A's certificate accepted"
    );
    assert_eq!(
        connect(ep, port_a, Ca::Pem("no certificate here")),
        QuarkError::Tls as i64
    );
    // No roots and not insecure: refused before any packet.
    // SAFETY: NUL-terminated strings that live across the call; NULL roots
    // and ciphers.
    let none = unsafe {
        quark_connect_on_pem(
            ep,
            c(&format!("127.0.0.1:{port_a}")).as_ptr(),
            c("localhost").as_ptr(),
            c("test").as_ptr(),
            0,
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(none, QuarkError::Inval as i64);

    assert_eq!(quark_close(ep), 0);
    for (server, t) in [(a, ta), (b, tb)] {
        assert_eq!(quark_close(server), 0);
        t.join().unwrap();
    }
}
