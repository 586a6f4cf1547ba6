//! `quark get --h3`'s curl-like options against an in-process HTTP/3 echo
//! server (method, a header and the body come back, the body checked by
//! SHA-256) and against `quark serve --h3` (a Range header gives the slice).

mod common;

use std::process::{Command, Output};

use common::{serve_with, sha, stderr, tempdir};
use http::Response;
use quark::tls::{self, Identity};

/// Answers each request with its body, its method in `x-method`, its
/// `x-test` header in `x-echo` and its content-type in `x-type`.
async fn echo_server() -> (u16, Identity) {
    let id = Identity::self_signed(&["localhost"]).unwrap();
    let config = tls::server_config(&id, &[quark_h3::ALPN]).unwrap();
    let server = quark::Endpoint::server(config, "127.0.0.1:0".parse().unwrap()).unwrap();
    let port = server.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Some(conn) = server.accept().await {
            tokio::spawn(async move {
                let mut h3 = quark_h3::Server::new(conn).await.unwrap();
                while let Ok(Some((req, mut stream))) = h3.accept().await {
                    tokio::spawn(async move {
                        let mut body = Vec::new();
                        while let Some(piece) = stream.recv_data().await.unwrap() {
                            body.extend_from_slice(&piece);
                        }
                        let get = |n: &str| {
                            req.headers()
                                .get(n)
                                .map_or("-".to_owned(), |v| v.to_str().unwrap().to_owned())
                        };
                        let resp = Response::builder()
                            .header("x-method", req.method().as_str())
                            .header("x-echo", get("x-test"))
                            .header("x-type", get("content-type"))
                            .body(())
                            .unwrap();
                        stream.send_response(&resp).await.unwrap();
                        stream.send_data(body.into()).await.unwrap();
                        stream.finish().unwrap();
                        let _ = stream.acked().await;
                    });
                }
            });
        }
    });
    (port, id)
}

/// Runs `quark get --h3 -q -o - --ca CERT <args> URL`.
fn get(cert: &std::path::Path, url: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_quark"))
        .args(["get", "--h3", "-q", "-o", "-", "--ca"])
        .arg(cert)
        .args(args)
        .arg(url)
        .output()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn method_headers_and_body_reach_the_server() {
    let dir = tempdir("quark-cli", "get-options");
    let (port, id) = echo_server().await;
    let cert = dir.join("cert.pem");
    std::fs::write(&cert, id.cert_pem()).unwrap();
    let url = format!("https://localhost:{port}/upload");

    // --data-binary @FILE: 300 kB of every byte value, sent with -X PUT and -H.
    let file: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 256) as u8).collect();
    let path = dir.join("body.bin");
    std::fs::write(&path, &file).unwrap();
    let data = format!("@{}", path.display());
    let out = get(
        &cert,
        &url,
        &[
            "-i",
            "-X",
            "PUT",
            "-H",
            "X-Test: yes please",
            "--data-binary",
            &data,
        ],
    );
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert_eq!(sha(&out.stdout), sha(&file), "the body came back changed");
    // -i: the status line and headers on stderr, the body alone on stdout.
    assert!(err.starts_with("HTTP/3 200\r\n"), "{err}");
    assert!(err.contains("x-method: PUT\r\n"), "{err}");
    assert!(err.contains("x-echo: yes please\r\n"), "{err}");

    // -d STRING: POST by default, form-encoded as curl sends it.
    let out = get(&cert, &url, &["-i", "-d", "a=1&b=2"]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert_eq!(out.stdout, b"a=1&b=2");
    assert!(err.contains("x-method: POST\r\n"), "{err}");
    assert!(
        err.contains("x-type: application/x-www-form-urlencoded\r\n"),
        "{err}"
    );
    // -H overrides that content type; without -i nothing is printed.
    let out = get(
        &cert,
        &url,
        &["-d", "{}", "-H", "content-type: application/json"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(out.stdout, b"{}");
    assert!(!stderr(&out).contains("HTTP/3"), "{}", stderr(&out));

    // Bad input is refused before connecting.
    let out = get(&cert, &url, &["-H", "no colon here"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("expected 'name: value'"),
        "{}",
        stderr(&out)
    );
    let out = get(&cert, &url, &["-X", "PO ST"]);
    assert!(!out.status.success());
}

#[test]
fn range_head_and_status_against_quark_serve() {
    let dir = tempdir("quark-cli", "get-range");
    let root = dir.join("root");
    std::fs::create_dir_all(&root).unwrap();
    let file: Vec<u8> = (0..100_000u32).map(|i| (i * 31 % 253) as u8).collect();
    std::fs::write(root.join("f.bin"), &file).unwrap();
    let server = serve_with(&root, &dir, &["--h3", "--no-tcp"]);
    let url = format!("https://localhost:{}/f.bin", server.port);

    let out = get(&server.cert, &url, &["-i", "-H", "Range: bytes=1000-1999"]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert_eq!(out.stdout, &file[1000..2000]);
    assert!(err.starts_with("HTTP/3 206\r\n"), "{err}");
    assert!(
        err.contains("content-range: bytes 1000-1999/100000\r\n"),
        "{err}"
    );

    // -X HEAD: headers, no body.
    let out = get(&server.cert, &url, &["-i", "-X", "HEAD"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(out.stdout.is_empty());
    assert!(stderr(&out).contains("content-length: 100000\r\n"));

    // A status that is not a success is printed with -i and fails.
    let out = get(&server.cert, &url, &["-i", "-X", "DELETE"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).starts_with("HTTP/3 405\r\n"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("allow: GET, HEAD\r\n"));
}

/// `-o` with one URL may name a file (a new one, or /dev/null) rather than a
/// directory; a failed fetch leaves the user's file in place; with several
/// URLs `-o` must be a directory.
#[test]
fn output_to_a_file() {
    let dir = tempdir("quark-cli", "get-file");
    let root = dir.join("root");
    std::fs::create_dir_all(&root).unwrap();
    let file: Vec<u8> = (0..50_000u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(root.join("f.bin"), &file).unwrap();
    let server = serve_with(&root, &dir, &["--h3", "--no-tcp"]);
    let url = |p: &str| format!("https://localhost:{}/{p}", server.port);
    let get_to = |out: &std::path::Path, urls: &[String]| {
        Command::new(env!("CARGO_BIN_EXE_quark"))
            .args(["get", "--h3", "-q", "--ca"])
            .arg(&server.cert)
            .arg("-o")
            .arg(out)
            .args(urls)
            .output()
            .unwrap()
    };

    let named = dir.join("named.out");
    let out = get_to(&named, &[url("f.bin")]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(std::fs::read(&named).unwrap() == file);

    let out = get_to(std::path::Path::new("/dev/null"), &[url("f.bin")]);
    assert!(out.status.success(), "{}", stderr(&out));

    let kept = dir.join("kept.txt");
    std::fs::write(&kept, b"mine").unwrap();
    let out = get_to(&kept, &[url("missing.bin")]);
    assert!(!out.status.success());
    assert!(kept.exists(), "a failed fetch removed the user's file");

    let out = get_to(&named, &[url("f.bin"), url("f.bin")]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("not a directory (with several URLs"),
        "{}",
        stderr(&out)
    );
}
