//! `quark serve` and `quark get` as a user runs them: transfers checked by hash,
//! and every kind of bad input ending in one clear error line and a non-zero exit.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::{free_port, get, serve, serve_with, sha, stderr, tempdir};

const QUARK: &str = env!("CARGO_BIN_EXE_quark");

fn write_files(root: &Path) -> Vec<(String, Vec<u8>)> {
    let files: Vec<(String, Vec<u8>)> = vec![
        (
            "a.bin".into(),
            (0..3_000_000u32).map(|i| (i * 7 % 251) as u8).collect(),
        ),
        ("b.txt".into(), b"hello quark\n".to_vec()),
        ("empty".into(), Vec::new()),
    ];
    for (name, data) in &files {
        std::fs::write(root.join(name), data).unwrap();
    }
    files
}

#[test]
fn fetches_files_in_parallel_and_to_stdout() {
    let dir = tempdir("quark-cli", "ok");
    let root = dir.join("root");
    let out = dir.join("out");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&out).unwrap();
    let files = write_files(&root);
    let server = serve(&root, &dir);
    let urls: Vec<String> = files
        .iter()
        .map(|(n, _)| format!("https://localhost:{}/{n}", server.port))
        .collect();
    let mut args: Vec<&str> = urls.iter().map(String::as_str).collect();
    let (o, ca) = (out.to_str().unwrap(), server.cert.to_str().unwrap());
    args.extend(["-o", o, "--ca", ca]);
    let result = get(&args);
    assert!(result.status.success(), "{}", stderr(&result));
    for (name, data) in &files {
        assert_eq!(
            sha(&std::fs::read(out.join(name)).unwrap()),
            sha(data),
            "{name}"
        );
    }
    assert!(
        stderr(&result).contains("3 of 3 files"),
        "summary: {}",
        stderr(&result)
    );

    // To stdout, in the order given, with each cipher suite.
    for cipher in ["aes128", "aes256", "chacha20"] {
        let result = get(&[
            &urls[1], &urls[0], "-o", "-", "--ca", ca, "--cipher", cipher, "--quiet",
        ]);
        assert!(result.status.success(), "{}", stderr(&result));
        let expected = [files[1].1.clone(), files[0].1.clone()].concat();
        assert_eq!(sha(&result.stdout), sha(&expected), "{cipher}");
    }

    // SSLKEYLOGFILE: the client's TLS secrets in the NSS key log format
    // (what Wireshark needs to decrypt a capture).
    let keylog = dir.join("keys.log");
    let result = Command::new(env!("CARGO_BIN_EXE_quark"))
        .args(["get", &urls[1], "-o", "-", "--ca", ca, "--quiet"])
        .env("SSLKEYLOGFILE", &keylog)
        .output()
        .unwrap();
    assert!(result.status.success(), "{}", stderr(&result));
    let log = std::fs::read_to_string(&keylog).unwrap();
    for label in ["CLIENT_HANDSHAKE_TRAFFIC_SECRET", "SERVER_TRAFFIC_SECRET_0"] {
        assert!(
            log.lines().any(|l| l.starts_with(label)),
            "{label} in {log}"
        );
    }

    // A key update on demand (the interop runner's keyupdate case): the
    // transfer still matches, and the summary counts the update.
    let result = get(&[&urls[0], "-o", "-", "--ca", ca, "--key-update"]);
    assert!(result.status.success(), "{}", stderr(&result));
    assert_eq!(sha(&result.stdout), sha(&files[0].1));
    assert!(
        stderr(&result).contains(", 1 key update]"),
        "{}",
        stderr(&result)
    );
}

/// The one error line a failing command prints (progress output aside).
fn error_line(o: &Output) -> String {
    let err = stderr(o);
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("error")).collect();
    assert!(!lines.is_empty(), "no error line in: {err}");
    lines.join("\n")
}

#[test]
fn request_errors() {
    let dir = tempdir("quark-cli", "errors");
    let root = dir.join("root");
    std::fs::create_dir_all(&root).unwrap();
    write_files(&root);
    let server = serve(&root, &dir);
    let ca = server.cert.to_str().unwrap();
    let url = |p: &str| format!("https://localhost:{}{p}", server.port);

    let o = get(&[&url("/missing"), "-o", "-", "--ca", ca]);
    assert!(!o.status.success());
    assert!(error_line(&o).contains("not found"), "{}", stderr(&o));

    let o = get(&[&url("/../etc/passwd"), "-o", "-", "--ca", ca]);
    assert!(!o.status.success());
    assert!(error_line(&o).contains("forbidden"), "{}", stderr(&o));

    // A certificate that is not the server's.
    let other = dir.join("other.pem");
    std::fs::write(
        &other,
        quark::tls::Identity::self_signed(&["localhost"])
            .unwrap()
            .cert_pem(),
    )
    .unwrap();
    let o = get(&[&url("/b.txt"), "-o", "-", "--ca", other.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(
        error_line(&o).contains("connection failed"),
        "{}",
        stderr(&o)
    );

    // No way to verify the server at all.
    let o = get(&[&url("/b.txt"), "-o", "-"]);
    assert!(!o.status.success());
    assert!(error_line(&o).contains("--ca"), "{}", stderr(&o));
}

/// Nothing listens at the port: the ICMP port unreachable the kernel
/// answers with ends the attempt at once (not after `--connect-timeout`),
/// with an error that says so.
#[test]
fn unreachable_server() {
    let port = free_port();
    let o = get(&[
        &format!("https://127.0.0.1:{port}/x"),
        "-o",
        "-",
        "--insecure",
        "--connect-timeout",
        "60",
    ]);
    assert!(!o.status.success());
    let line = error_line(&o);
    assert!(
        line.contains(&format!("127.0.0.1:{port}")) && line.contains("refused"),
        "{}",
        stderr(&o)
    );
}

/// A name with several addresses (`--resolve`, as `localhost` often is
/// `::1` and `127.0.0.1`): the one that answers is used, whatever its place
/// (RFC 8305); when none answers, the error names them all.
#[test]
fn the_address_that_answers_is_used() {
    let dir = tempdir("quark-cli", "resolve");
    let root = dir.join("root");
    std::fs::create_dir_all(&root).unwrap();
    let files = write_files(&root);
    let server = serve(&root, &dir);
    let port = server.port;
    // A host that is down: a socket nobody reads (no ICMP error comes back).
    let silent = std::net::UdpSocket::bind(("127.0.0.2", port)).unwrap();
    let url = format!("https://localhost:{port}/a.bin");
    let out = dir.join("a.bin");
    // [::1] has no server either: tried first where this host has IPv6,
    // left out where it has none.
    let resolve = format!("localhost:{port}:[::1],127.0.0.2,127.0.0.1");
    let (ca, o) = (server.cert.to_str().unwrap(), out.to_str().unwrap());
    let result = get(&[&url, "-o", o, "--ca", ca, "--resolve", &resolve]);
    assert!(result.status.success(), "{}", stderr(&result));
    assert_eq!(sha(&std::fs::read(&out).unwrap()), sha(&files[0].1));
    silent.set_nonblocking(true).unwrap();
    assert!(silent.recv(&mut [0u8; 2048]).is_ok(), "127.0.0.2 was tried");

    let resolve = format!("localhost:{port}:127.0.0.2,127.0.0.3");
    let args = [
        &url,
        "-o",
        o,
        "--ca",
        ca,
        "--resolve",
        &resolve,
        "--connect-timeout",
        "1",
    ];
    let result = get(&args);
    assert!(!result.status.success());
    let line = error_line(&result);
    assert!(
        line.contains(&format!("127.0.0.2:{port}, 127.0.0.3:{port}")) && line.contains("no answer"),
        "{line}"
    );
}

/// Whether this process may make mount namespaces (root and `unshare`).
fn mount_namespaces() -> bool {
    let ok = Command::new("unshare").args(["-m", "true"]).status();
    ok.is_ok_and(|s| s.success())
}

/// The README's quick start where `/etc/hosts` lists `localhost` as `::1`
/// before `127.0.0.1` (Debian's and Ubuntu's default): `quark serve` on
/// 127.0.0.1 and `quark get https://localhost:PORT/...`. The hosts file is
/// swapped in a mount namespace of the client's own (needs root and
/// `unshare`: CI has both).
#[test]
fn localhost_first_as_ipv6_still_reaches_the_server() {
    if !mount_namespaces() {
        eprintln!("no mount namespace here (root and unshare needed): skipped");
        return;
    }
    let dir = tempdir("quark-cli", "hosts");
    let root = dir.join("root");
    std::fs::create_dir_all(&root).unwrap();
    let files = write_files(&root);
    let server = serve(&root, &dir);
    let hosts = dir.join("hosts");
    std::fs::write(&hosts, "::1 localhost\n127.0.0.1 localhost\n").unwrap();
    let out = dir.join("a.bin");
    let script = r#"mount --bind "$1" /etc/hosts && exec "$2" get "$3" -o "$4" --ca "$5""#;
    let result = Command::new("unshare")
        .args(["-m", "sh", "-c", script, "sh"])
        .arg(&hosts)
        .arg(QUARK)
        .arg(format!("https://localhost:{}/a.bin", server.port))
        .arg(&out)
        .arg(&server.cert)
        .output()
        .unwrap();
    assert!(result.status.success(), "{}", stderr(&result));
    assert_eq!(sha(&std::fs::read(&out).unwrap()), sha(&files[0].1));
}

#[test]
fn bad_flags() {
    let dir = tempdir("quark-cli", "flags");
    let cases: Vec<Vec<String>> = vec![
        vec!["get".into()],
        vec!["get".into(), "ftp://x/y".into(), "--insecure".into()],
        vec![
            "get".into(),
            "https://localhost:99999/".into(),
            "--insecure".into(),
        ],
        vec![
            "get".into(),
            "https://localhost:1/".into(),
            "--insecure".into(),
            "--cipher".into(),
            "rc4".into(),
        ],
        vec![
            "get".into(),
            "https://localhost:1/".into(),
            "--insecure".into(),
            "--cc".into(),
            "vegas".into(),
        ],
        vec![
            "get".into(),
            "https://a:1/".into(),
            "https://b:1/".into(),
            "--insecure".into(),
        ],
        vec![
            "get".into(),
            "https://localhost:1/".into(),
            "--insecure".into(),
            "-o".into(),
            "/nonexistent/dir".into(),
        ],
        vec![
            "get".into(),
            "https://localhost:1/".into(),
            "--insecure".into(),
            "--resolve".into(),
            "localhost:1:nope".into(),
        ],
        vec!["serve".into(), "--root".into(), "/nonexistent".into()],
        vec![
            "serve".into(),
            "--root".into(),
            dir.to_str().unwrap().into(),
            "--cert".into(),
            "/nonexistent.pem".into(),
            "--key".into(),
            "/nonexistent.key".into(),
        ],
    ];
    for args in cases {
        let o = Command::new(QUARK).args(&args).output().unwrap();
        assert!(!o.status.success(), "{args:?} succeeded");
        let err = stderr(&o);
        assert!(
            err.lines().any(|l| l.starts_with("error")),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn worker_threads_serve_every_client() {
    let dir = tempdir("quark-cli", "workers");
    let root = dir.join("root");
    std::fs::create_dir_all(&root).unwrap();
    let files = write_files(&root);
    let server = serve_with(&root, &dir, &["--workers", "3"]);
    let ca = server.cert.to_str().unwrap();
    // Each `quark get` is a new client socket, so the kernel spreads them.
    for _ in 0..6 {
        let url = format!("https://localhost:{}/a.bin", server.port);
        let result = get(&[&url, "-o", "-", "--ca", ca, "--quiet"]);
        assert!(result.status.success(), "{}", stderr(&result));
        assert_eq!(sha(&result.stdout), sha(&files[0].1));
    }
    let o = Command::new(QUARK)
        .args(["serve", "--workers", "0", "--root"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(error_line(&o).contains("--workers"), "{}", stderr(&o));
}

#[test]
fn busy_polling_server_and_client() {
    let dir = tempdir("quark-cli", "busy-poll");
    let root = dir.join("root");
    std::fs::create_dir_all(&root).unwrap();
    let files = write_files(&root);
    let server = serve_with(&root, &dir, &["--busy-poll", "50"]);
    let ca = server.cert.to_str().unwrap();
    for (name, data) in &files {
        let url = format!("https://localhost:{}/{name}", server.port);
        let result = get(&[&url, "-o", "-", "--ca", ca, "--quiet", "--busy-poll", "50"]);
        assert!(result.status.success(), "{}", stderr(&result));
        assert_eq!(sha(&result.stdout), sha(data), "{name}");
    }
}

#[test]
fn port_in_use() {
    let dir = tempdir("quark-cli", "port");
    let taken = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let o = Command::new(QUARK)
        .args(["serve", "--listen", &format!("127.0.0.1:{port}"), "--root"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(error_line(&o).contains("cannot listen"), "{}", stderr(&o));
}

#[test]
fn http3_serves_and_fetches_files() {
    let dir = tempdir("quark-cli", "h3");
    let root = dir.join("root");
    let out = dir.join("out");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&out).unwrap();
    let files = write_files(&root);
    let server = serve_with(&root, &dir, &["--h3"]);
    let url = |p: &str| format!("https://localhost:{}{p}", server.port);
    let urls: Vec<String> = files.iter().map(|(n, _)| url(&format!("/{n}"))).collect();
    let mut args: Vec<&str> = urls.iter().map(String::as_str).collect();
    let (o, ca) = (out.to_str().unwrap(), server.cert.to_str().unwrap());
    args.extend(["-o", o, "--ca", ca, "--h3"]);
    let result = get(&args);
    assert!(result.status.success(), "{}", stderr(&result));
    for (name, data) in &files {
        let got = std::fs::read(out.join(name)).unwrap();
        assert_eq!(sha(&got), sha(data), "{name}");
    }
    assert!(
        stderr(&result).contains("3 of 3 files"),
        "{}",
        stderr(&result)
    );
    // Both ends use QPACK's dynamic table by default; a client with the
    // static table only fetches the same bytes.
    let out0 = dir.join("out-static");
    std::fs::create_dir_all(&out0).unwrap();
    let mut args: Vec<&str> = urls.iter().map(String::as_str).collect();
    let o0 = out0.to_str().unwrap();
    args.extend(["-o", o0, "--ca", ca, "--h3", "--qpack-capacity", "0"]);
    let result = get(&args);
    assert!(result.status.success(), "{}", stderr(&result));
    for (name, data) in &files {
        let got = std::fs::read(out0.join(name)).unwrap();
        assert_eq!(sha(&got), sha(data), "{name} (static client)");
    }

    // Statuses become one error line each.
    let o = get(&[&url("/missing"), "-o", "-", "--ca", ca, "--h3"]);
    assert!(!o.status.success());
    assert!(error_line(&o).contains("404"), "{}", stderr(&o));
    let o = get(&[&url("/../etc/passwd"), "-o", "-", "--ca", ca, "--h3"]);
    assert!(!o.status.success());
    assert!(error_line(&o).contains("403"), "{}", stderr(&o));

    // An hq-interop client is refused by an HTTP/3 server (no common ALPN).
    let o = get(&[&url("/b.txt"), "-o", "-", "--ca", ca]);
    assert!(!o.status.success());
    assert!(
        error_line(&o).contains("connection failed"),
        "{}",
        stderr(&o)
    );

    // A server with the static table only serves a client with the dynamic
    // table (and a bounded blocked-streams setting) as well.
    let server = serve_with(
        &root,
        &dir,
        &[
            "--h3",
            "--qpack-capacity",
            "0",
            "--qpack-blocked-streams",
            "0",
        ],
    );
    let url = format!("https://localhost:{}/b.txt", server.port);
    let ca = server.cert.to_str().unwrap();
    let o = get(&[
        &url,
        "-o",
        "-",
        "--ca",
        ca,
        "--h3",
        "--qpack-blocked-streams",
        "4",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let b = &files.iter().find(|(n, _)| n == "b.txt").unwrap().1;
    assert_eq!(sha(&o.stdout), sha(b));
}

#[test]
fn client_moves_to_the_preferred_address() {
    let dir = tempdir("quark-cli", "preferred");
    let root = dir.join("root");
    std::fs::create_dir_all(&root).unwrap();
    let files = write_files(&root);
    let server = serve_with(&root, &dir, &["--preferred-address", "127.0.0.2:{port}"]);
    let ca = server.cert.to_str().unwrap();
    let url = format!("https://localhost:{}/a.bin", server.port);
    let result = get(&[&url, "-o", "-", "--ca", ca, "--quiet"]);
    assert!(result.status.success(), "{}", stderr(&result));
    assert_eq!(sha(&result.stdout), sha(&files[0].1));
    // The preferred address must share the listen port.
    let o = Command::new(QUARK)
        .args(["serve", "--listen", "127.0.0.1:4433"])
        .args(["--preferred-address", "127.0.0.2:4434", "--root"])
        .arg(&root)
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(
        error_line(&o).contains("--preferred-address"),
        "{}",
        stderr(&o)
    );
}
