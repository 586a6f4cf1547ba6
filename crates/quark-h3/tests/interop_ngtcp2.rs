//! Interoperation with ngtcp2 + nghttp3 (C; Debian's `ngtcp2-client` and
//! `ngtcp2-server` packages, binaries `gtlsclient` and `gtlsserver`, built
//! with GnuTLS): a second independent HTTP/3 stack with QPACK's dynamic table
//! and RFC 9218 priorities, beside aioquic.
//!
//! - nghttp3's client against quark-h3's server (QPACK capacity on): every
//!   body hash-checked, and nghttp3's encoder inserted into our decoder's
//!   table.
//! - quark-h3's client against ngtcp2's file server: files hash-checked, our
//!   encoder's inserts acknowledged by nghttp3's decoder, nghttp3's encoder
//!   inserted into ours, and requests with
//!   the Priority header and a PRIORITY_UPDATE answered whole.
//!
//! Missing binaries skip the tests (`SKIP: ...`) unless
//! `QUARK_REQUIRE_NGTCP2=1` (CI sets it). Overrides: `NGTCP2_CLIENT_BIN`,
//! `NGTCP2_SERVER_BIN`.

mod common;

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use common::peers::*;
use common::*;
use quark::Endpoint;
use quark::tls;
use quark_h3::Priority;
use tokio::process::Command;
use tokio::time::timeout;

/// `GET` sizes against quark's server (0, one packet, many).
const NG_SIZES: [usize; 4] = [0, 1, 5_000, 2_000_000];
/// Against ngtcp2's file server, which answers an empty file with 404.
const FILE_SIZES: [usize; 3] = [1, 5_000, 2_000_000];

/// The binary named by `var`, else `default`; `None` (after printing why)
/// when it is missing and not required.
fn binary(var: &str, default: &str) -> Option<PathBuf> {
    let bin = std::env::var_os(var).map_or_else(|| PathBuf::from(default), PathBuf::from);
    if bin.is_file() {
        return Some(bin);
    }
    let why = format!(
        "no ngtcp2 binary at {} (apt-get install ngtcp2-client ngtcp2-server, or set {var})",
        bin.display()
    );
    if std::env::var("QUARK_REQUIRE_NGTCP2").is_ok_and(|v| v == "1") {
        panic!("{why}; QUARK_REQUIRE_NGTCP2=1");
    }
    println!("SKIP: {why}");
    None
}

#[tokio::test]
async fn nghttp3_client_against_quark_server() {
    let Some(bin) = binary("NGTCP2_CLIENT_BIN", "/usr/bin/gtlsclient") else {
        return;
    };
    let scratch = Scratch::new("ngtcp2-client");
    let certs = Certs::generate(&scratch.0);
    let config = tls::server_config(&certs.id, &[ALPN]).unwrap();
    let server = Endpoint::server(config, (Ipv4Addr::LOCALHOST, 0).into()).unwrap();
    let stats = spawn_quark_h3_server_stats(&server);
    let port = server.local_addr().unwrap().port();
    let out = scratch.0.join("download");
    std::fs::create_dir_all(&out).unwrap();

    // All the GETs on one connection; the client saves each body under the
    // last path segment. (It does not check our certificate: it has no
    // option for a CA file.) Its requests wait a moment after the handshake
    // for our SETTINGS: sent at once, they could only use the static table
    // (the peer's capacity is 0 until SETTINGS, RFC 9204 §3.2.3).
    let mut cmd = Command::new(bin);
    cmd.args([
        "--quiet",
        "--exit-on-all-streams-close",
        "--delay-stream=300ms",
    ])
    .arg("--download")
    .arg(&out)
    .args(["--timeout", "30s", "127.0.0.1", &port.to_string()]);
    for n in NG_SIZES {
        cmd.arg(format!("https://localhost:{port}/bytes/{n}"));
    }
    let mut client = Process::spawn(cmd, scratch.0.join("client.log"));
    let status = timeout(LIMIT, client.child.wait()).await;
    let Ok(Ok(status)) = status else {
        panic!("nghttp3 client: hung\n{}", client.log_tail());
    };
    assert!(
        status.success(),
        "nghttp3 client: {status}\n{}",
        client.log_tail()
    );
    for n in NG_SIZES {
        let got = std::fs::read(out.join(n.to_string()))
            .unwrap_or_else(|e| panic!("GET /bytes/{n}: no body saved: {e}"));
        assert_eq!(sha(&got), sha(&data(n, n as u32)), "GET /bytes/{n}");
    }

    // nghttp3's encoder filled our decoder's table (its :authority at
    // least). Recorded once the connection has ended.
    let deadline = tokio::time::Instant::now() + LIMIT;
    while stats.lock().unwrap().is_empty() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (_, _, theirs) = stats.lock().unwrap()[0];
    assert!(theirs > 0, "nghttp3 inserted nothing into our table");
    server.close(0, b"done");
}

/// ngtcp2's file server on 127.0.0.1 with `www` as its root: the process
/// and its port. Retries on another port when it exits at once (the port
/// was taken since we picked it).
async fn ngtcp2_server(
    scratch: &Scratch,
    certs: &Certs,
    www: &std::path::Path,
) -> Option<(Process, u16)> {
    let bin = binary("NGTCP2_SERVER_BIN", "/usr/sbin/gtlsserver")?;
    for attempt in 0..START_ATTEMPTS {
        let port = free_port();
        let mut cmd = Command::new(&bin);
        cmd.arg("--quiet")
            .arg("--htdocs")
            .arg(www)
            .args(["--timeout", "30s", "127.0.0.1", &port.to_string()])
            .arg(&certs.key)
            .arg(&certs.cert);
        let mut server = Process::spawn(cmd, scratch.0.join(format!("server-{attempt}.log")));
        // It prints nothing when it is ready; a bind failure ends it at
        // once, and a client's Initial sent too early is retransmitted.
        tokio::time::sleep(Duration::from_millis(300)).await;
        if server.child.try_wait().unwrap().is_none() {
            return Some((server, port));
        }
    }
    panic!("ngtcp2 server: did not start in {START_ATTEMPTS} attempts");
}

/// Files `bytes-<n>` holding `data(n, n)` in `dir`.
fn write_files(dir: &std::path::Path, sizes: &[usize]) {
    std::fs::create_dir_all(dir).unwrap();
    for &n in sizes {
        std::fs::write(dir.join(format!("bytes-{n}")), data(n, n as u32)).unwrap();
    }
}

/// `GET /bytes-<n>` from ngtcp2's server, with `priority` as the Priority
/// header when given: 200 and the body hash-checked.
async fn get_file(client: &quark_h3::Client, n: usize, priority: Option<&str>) {
    let mut req = http::Request::get(format!("https://localhost/bytes-{n}"));
    if let Some(p) = priority {
        req = req.header("priority", p);
    }
    let (resp, mut s) = exchange(client, &req.body(()).unwrap()).await;
    assert_eq!(resp.status(), 200, "GET /bytes-{n}");
    assert_eq!(
        sha(&body_of(&mut s).await),
        sha(&data(n, n as u32)),
        "GET /bytes-{n}"
    );
}

#[tokio::test]
async fn quark_client_against_ngtcp2_server() {
    let scratch = Scratch::new("ngtcp2-server");
    let certs = Certs::generate(&scratch.0);
    let www = scratch.0.join("www");
    write_files(&www, &FILE_SIZES);
    let Some((server, port)) = ngtcp2_server(&scratch, &certs, &www).await else {
        return;
    };
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let run = async {
        let client = quark_h3_client(addr, &certs.id).await;
        for n in FILE_SIZES {
            get_file(&client, n, None).await;
        }
        // One more round trip, so nghttp3's Section Acknowledgments of the
        // last requests have come back.
        get_file(&client, 1, None).await;
        client.connection().close(H3_NO_ERROR, b"done");
        client.qpack_inserts()
    };
    let Ok((ours, acked, theirs)) = timeout(LIMIT, run).await else {
        panic!(
            "quark-h3 client against ngtcp2: hung\n{}",
            server.log_tail()
        );
    };
    // Our encoder inserted (the :authority) and nghttp3's decoder
    // acknowledged every insert (RFC 9204 §4.4).
    assert!(ours > 0, "our encoder inserted nothing");
    assert_eq!(acked, ours, "nghttp3 acknowledged our inserts");
    assert!(
        theirs > 0,
        "nghttp3's encoder inserted nothing into our table"
    );
}

/// RFC 9218 against nghttp3's server, which schedules by urgency: the
/// Priority header on each request and a PRIORITY_UPDATE for a response
/// under way; every body arrives whole and the connection stays usable.
#[tokio::test]
async fn priorities_against_ngtcp2_server() {
    let scratch = Scratch::new("ngtcp2-priority");
    let certs = Certs::generate(&scratch.0);
    let www = scratch.0.join("www");
    let big = 2_000_000;
    write_files(&www, &[1, 5_000, big]);
    let Some((server, port)) = ngtcp2_server(&scratch, &certs, &www).await else {
        return;
    };
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let run = async {
        let client = quark_h3_client(addr, &certs.id).await;
        let req = http::Request::get(format!("https://localhost/bytes-{big}"))
            .header("priority", "u=6, i")
            .body(())
            .unwrap();
        let (resp, mut big_stream) = exchange(&client, &req).await;
        assert_eq!(resp.status(), 200);
        let update = Priority {
            urgency: 1,
            incremental: false,
        };
        big_stream.set_priority(update).await.unwrap();
        get_file(&client, 5_000, Some("u=0")).await;
        let body = body_of(&mut big_stream).await;
        assert_eq!(sha(&body), sha(&data(big, big as u32)));
        get_file(&client, 1, Some("u=3, i")).await;
        client.connection().close(H3_NO_ERROR, b"done");
    };
    if timeout(LIMIT, run).await.is_err() {
        panic!("ngtcp2 with priorities: hung\n{}", server.log_tail());
    }
}
