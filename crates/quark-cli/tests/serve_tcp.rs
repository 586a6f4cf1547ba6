//! `quark serve --h3`'s TCP side: HTTP/1.1 and HTTP/2 over TLS at the QUIC
//! port with the h3 file server's semantics (checked through hyper's
//! client: 200, 206 with the slice, HEAD, 304, 301, 404, 405, a directory
//! listing), Alt-Svc on
//! every response, access log lines with the protocol, `--no-tcp`, and the
//! connection limit.

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use common::{serve_with, sha, tempdir};
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::{CertificateDer, ServerName, pem::PemObject};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

async fn tls(port: u16, cert: &Path, alpn: &[u8]) -> TlsStream<TcpStream> {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_file(cert).unwrap())
        .unwrap();
    let provider = rustls::crypto::ring::default_provider();
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(provider))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![alpn.to_vec()];
    let tcp = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let name = ServerName::try_from("localhost").unwrap();
    let tls = TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .unwrap();
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(alpn));
    tls
}

/// A request sender over HTTP/1.1 or HTTP/2 (by `alpn`).
enum Sender {
    H1(hyper::client::conn::http1::SendRequest<Empty<Bytes>>),
    H2(hyper::client::conn::http2::SendRequest<Empty<Bytes>>),
}

impl Sender {
    async fn open(port: u16, cert: &Path, alpn: &[u8]) -> Sender {
        let io = TokioIo::new(tls(port, cert, alpn).await);
        if alpn == b"h2" {
            let (send, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), io)
                .await
                .unwrap();
            tokio::spawn(conn);
            Sender::H2(send)
        } else {
            let (send, conn) = hyper::client::conn::http1::handshake(io).await.unwrap();
            tokio::spawn(conn);
            Sender::H1(send)
        }
    }

    /// `method path` with `headers`: the head and the whole body.
    async fn ask(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
    ) -> (Response<()>, Vec<u8>) {
        let mut req = Request::builder().method(method);
        req = match self {
            Sender::H1(_) => req.uri(path).header("host", "localhost"),
            Sender::H2(_) => req.uri(format!("https://localhost{path}")),
        };
        for (n, v) in headers {
            req = req.header(*n, *v);
        }
        let req = req.body(Empty::new()).unwrap();
        let resp = match self {
            // HTTP/1.1 takes the next request once the last one is done.
            Sender::H1(s) => {
                s.ready().await.unwrap();
                s.send_request(req).await.unwrap()
            }
            Sender::H2(s) => s.send_request(req).await.unwrap(),
        };
        let (parts, body) = resp.into_parts();
        let body = body.collect().await.unwrap().to_bytes().to_vec();
        (Response::from_parts(parts, ()), body)
    }
}

fn header<'a>(r: &'a Response<()>, name: &str) -> &'a str {
    r.headers()
        .get(name)
        .map_or("", |v| v.to_str().unwrap_or(""))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http1_and_http2_serve_the_files_with_alt_svc() {
    let dir = tempdir("quark-cli", "serve-tcp");
    let root = dir.join("root");
    std::fs::create_dir_all(root.join("docs")).unwrap();
    let file: Vec<u8> = (0..3_000_000u32).map(|i| (i * 17 % 251) as u8).collect();
    std::fs::write(root.join("big.bin"), &file).unwrap();
    std::fs::write(root.join("index.html"), b"<p>home</p>").unwrap();
    std::fs::write(root.join("docs/index.html"), b"<p>docs</p>").unwrap();
    std::fs::create_dir_all(root.join("listed")).unwrap();
    std::fs::write(root.join("listed/a b.txt"), b"ab").unwrap();
    let log = dir.join("access.log");
    let log_arg = log.to_str().unwrap();
    let server = serve_with(
        &root,
        &dir,
        &["--h3", "--access-log", log_arg, "--list-dirs"],
    );
    let alt_svc = format!("h3=\":{}\"; ma=86400", server.port);

    for alpn in [&b"h2"[..], b"http/1.1"] {
        let mut s = Sender::open(server.port, &server.cert, alpn).await;
        let (r, body) = s.ask("GET", "/big.bin", &[]).await;
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(sha(&body), sha(&file));
        assert_eq!(header(&r, "alt-svc"), alt_svc);
        assert_eq!(header(&r, "content-type"), "application/octet-stream");
        let etag = header(&r, "etag").to_owned();

        let (r, body) = s
            .ask("GET", "/big.bin", &[("range", "bytes=100-1099")])
            .await;
        assert_eq!(r.status(), StatusCode::PARTIAL_CONTENT);
        assert_eq!(body, &file[100..1100]);
        assert_eq!(header(&r, "content-range"), "bytes 100-1099/3000000");
        let (r, _) = s
            .ask("GET", "/big.bin", &[("range", "bytes=5000000-")])
            .await;
        assert_eq!(r.status(), StatusCode::RANGE_NOT_SATISFIABLE);
        // Two ranges far apart: multipart/byteranges, the second part last.
        let (r, body) = s
            .ask("GET", "/big.bin", &[("range", "bytes=0-9,-1000")])
            .await;
        assert_eq!(r.status(), StatusCode::PARTIAL_CONTENT);
        let kind = header(&r, "content-type").to_owned();
        let boundary = kind
            .strip_prefix("multipart/byteranges; boundary=")
            .expect("multipart/byteranges");
        assert_eq!(header(&r, "content-length"), body.len().to_string());
        let close = format!("\r\n--{boundary}--\r\n");
        let last = &body[..body.len() - close.len()];
        assert!(body.ends_with(close.as_bytes()) && last.ends_with(&file[2_999_000..]));

        let (r, body) = s.ask("HEAD", "/big.bin", &[]).await;
        assert_eq!(r.status(), StatusCode::OK);
        assert!(body.is_empty());
        assert_eq!(header(&r, "content-length"), "3000000");

        let (r, body) = s.ask("GET", "/big.bin", &[("if-none-match", &etag)]).await;
        assert_eq!(r.status(), StatusCode::NOT_MODIFIED);
        assert!(body.is_empty());
        assert_eq!(header(&r, "alt-svc"), alt_svc);

        let (r, _) = s.ask("GET", "/docs", &[]).await;
        assert_eq!(r.status(), StatusCode::MOVED_PERMANENTLY);
        assert_eq!(header(&r, "location"), "/docs/");
        let (r, body) = s.ask("GET", "/docs/", &[]).await;
        assert_eq!(body, b"<p>docs</p>");
        assert_eq!(header(&r, "content-type"), "text/html; charset=utf-8");
        // --list-dirs: a directory without index.html is a page of links.
        let (r, body) = s.ask("GET", "/listed/", &[]).await;
        assert_eq!(r.status(), StatusCode::OK);
        let page = String::from_utf8(body).unwrap();
        assert!(
            page.contains("<a href=\"./a%20b.txt\">a b.txt</a>"),
            "{page}"
        );
        let (_, body) = s.ask("GET", "/listed/a%20b.txt", &[]).await;
        assert_eq!(body, b"ab", "the link's target");

        let (r, _) = s.ask("GET", "/missing", &[]).await;
        assert_eq!(r.status(), StatusCode::NOT_FOUND);
        assert_eq!(header(&r, "alt-svc"), alt_svc);
        let (r, _) = s.ask("DELETE", "/big.bin", &[]).await;
        assert_eq!(r.status(), StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(header(&r, "allow"), "GET, HEAD");
    }

    // Logged with their protocol (the log is written as each body ends).
    let mut text = String::new();
    for _ in 0..100 {
        text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.lines().count() >= 20 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        text.contains("\"GET /big.bin HTTP/2\" 200 3000000 "),
        "{text}"
    );
    assert!(
        text.contains("\"GET /big.bin HTTP/1.1\" 206 1000 "),
        "{text}"
    );
    assert!(
        text.contains("\"DELETE /big.bin HTTP/1.1\" 405 0 "),
        "{text}"
    );
}

/// TCP sockets in the listening state that process `pid` holds, from its
/// descriptors and the kernel's socket tables. Asked of the process, not of
/// the port: a connect to the port may reach another test's server (workers
/// bind UDP with SO_REUSEPORT, so two servers can share a UDP port) or the
/// client itself (a TCP connect to a free local port can pick that port as
/// its source and connect to itself). A connect check failed once in CI.
fn tcp_listeners(pid: u32) -> usize {
    let mut listening = std::collections::HashSet::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let text = std::fs::read_to_string(table).unwrap_or_default();
        for line in text.lines().skip(1) {
            let cols: Vec<&str> = line.split_whitespace().collect();
            // st 0A is TCP_LISTEN; the inode is the tenth column.
            if cols.len() > 9 && cols[3] == "0A" {
                listening.insert(format!("socket:[{}]", cols[9]));
            }
        }
    }
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|link| listening.contains(&*link.to_string_lossy()))
        .count()
}

#[tokio::test]
async fn no_tcp_turns_the_listener_off() {
    let dir = tempdir("quark-cli", "serve-no-tcp");
    let server = serve_with(&dir, &dir, &["--h3", "--no-tcp"]);
    assert_eq!(tcp_listeners(server.child.id()), 0, "a TCP listener");
    // The same look finds the listener of a server without the option.
    let with_tcp = serve_with(&dir, &dir, &["--h3"]);
    assert!(
        tcp_listeners(with_tcp.child.id()) >= 1,
        "no TCP listener seen"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_past_the_limit_wait_for_a_free_slot() {
    let dir = tempdir("quark-cli", "serve-tcp-limit");
    std::fs::write(dir.join("a.txt"), b"a").unwrap();
    let server = serve_with(&dir, &dir, &["--h3", "--tcp-max-connections", "1"]);
    let mut first = Sender::open(server.port, &server.cert, b"http/1.1").await;
    assert_eq!(first.ask("GET", "/a.txt", &[]).await.1, b"a");
    // The second waits in the backlog: its handshake is not answered.
    let port = server.port;
    let cert = server.cert.clone();
    let second = tokio::spawn(async move {
        let mut s = Sender::open(port, &cert, b"h2").await;
        s.ask("GET", "/a.txt", &[]).await.1
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!second.is_finished(), "served past --tcp-max-connections");
    drop(first);
    let got = tokio::time::timeout(Duration::from_secs(20), second).await;
    assert_eq!(got.unwrap().unwrap(), b"a");
}

/// Waits (at most 10 s) for the server to close `io`: EOF or an error.
async fn closed(mut io: impl tokio::io::AsyncRead + Unpin) {
    use tokio::io::AsyncReadExt;
    let mut buf = [0u8; 1024];
    let waited = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match io.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    });
    waited.await.expect("the server kept the connection open");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_and_idle_connections_are_dropped() {
    use tokio::io::AsyncWriteExt;
    let dir = tempdir("quark-cli", "serve-tcp-slow");
    std::fs::write(dir.join("a.txt"), b"a").unwrap();
    let args = ["--h3", "--tcp-head-timeout", "1", "--tcp-idle-timeout", "2"];
    let server = serve_with(&dir, &dir, &args);

    // No TLS handshake at all.
    let tcp = TcpStream::connect(("127.0.0.1", server.port))
        .await
        .unwrap();
    closed(tcp).await;

    // A request head that never ends.
    let mut tls1 = tls(server.port, &server.cert, b"http/1.1").await;
    tls1.write_all(b"GET /a.txt HTTP/1.1\r\nhost: localhost\r\n")
        .await
        .unwrap();
    closed(tls1).await;

    // An HTTP/2 connection left idle after a request.
    let io = TokioIo::new(tls(server.port, &server.cert, b"h2").await);
    let (mut send, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), io)
        .await
        .unwrap();
    let conn = tokio::spawn(conn);
    let req = Request::get("https://localhost/a.txt")
        .body(Empty::<Bytes>::new())
        .unwrap();
    let resp = send.send_request(req).await.unwrap();
    assert_eq!(resp.into_body().collect().await.unwrap().to_bytes(), "a");
    let ended = tokio::time::timeout(Duration::from_secs(10), conn).await;
    assert!(ended.is_ok(), "the idle HTTP/2 connection was kept");
}
