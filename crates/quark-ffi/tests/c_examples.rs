//! The C examples in `examples/c`, built with `make` against
//! `target/debug/libquark_ffi.a` and run: `quark-get` against an in-process
//! quark hq-interop server (body checked by SHA-256), `echo-server` against
//! a quark Rust client (bytes compared); and the Python binding's
//! `quark_get.py` the same way as `quark-get`.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use quark::{Endpoint, hq, tls};
use sha2::{Digest, Sha256};

mod common;
use common::{digest_of, examples, mount_namespaces, scratch, wait, workspace};

/// A quark hq-interop server on a port of its own, serving `root`.
struct HqServer {
    endpoint: Endpoint,
    port: u16,
    _rt: tokio::runtime::Runtime,
}

fn hq_server(root: &Path) -> HqServer {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let identity = tls::Identity::self_signed(&["localhost"]).unwrap();
    let config = tls::server_config(&identity, &[hq::ALPN]).unwrap();
    let endpoint = {
        let _guard = rt.enter();
        Endpoint::server(config, "127.0.0.1:0".parse().unwrap()).unwrap()
    };
    let port = endpoint.local_addr().unwrap().port();
    let accepting = endpoint.clone();
    let root = root.to_path_buf();
    rt.spawn(async move {
        while let Some(conn) = accepting.accept().await {
            tokio::spawn(hq::serve_connection(conn, root.clone()));
        }
    });
    HqServer {
        endpoint,
        port,
        _rt: rt,
    }
}

/// 1 MiB and a bit, not a multiple of any buffer size, in `root/file.bin`.
fn test_file(root: &Path) -> String {
    let body: Vec<u8> = (0..(1u32 << 20) + 4321)
        .map(|i| (i ^ (i >> 9)).wrapping_mul(31) as u8)
        .collect();
    std::fs::write(root.join("file.bin"), &body).unwrap();
    hex::encode(Sha256::digest(&body))
}

/// `child` ends well within a minute, having written the file `want`
/// digests to `out`.
fn downloaded(mut child: std::process::Child, out: &Path, want: &str) {
    assert!(wait(&mut child, Duration::from_secs(60)).success());
    assert_eq!(digest_of(out), want, "downloaded file differs");
}

#[test]
fn c_quark_get_downloads_a_file() {
    let bin = examples();
    let root = scratch("www");
    let want = test_file(&root);
    let server = hq_server(&root);
    let port = server.port;

    let out = root.join("out.bin");
    let mut child = Command::new(bin.join("quark-get"))
        .arg(format!("https://127.0.0.1:{port}/file.bin"))
        .arg(&out)
        .arg("--insecure")
        .spawn()
        .unwrap();
    assert!(wait(&mut child, Duration::from_secs(60)).success());
    assert_eq!(digest_of(&out), want, "downloaded file differs");

    // A file that is not there: the server resets the stream, quark-get fails.
    let mut child = Command::new(bin.join("quark-get"))
        .arg(format!("https://127.0.0.1:{port}/missing"))
        .arg(root.join("missing.out"))
        .arg("--insecure")
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert!(!wait(&mut child, Duration::from_secs(60)).success());
    server.endpoint.close(0, b"");
    let _ = std::fs::remove_dir_all(&root);
}

/// `localhost` listed as `::1` first, then `127.0.0.1` (Debian's and
/// Ubuntu's /etc/hosts), with the server on 127.0.0.1 only: `quark-get`
/// reaches it on the second address (RFC 8305) where it used to wait out the
/// handshake timeout on the first. The hosts file is swapped in a mount
/// namespace of the child's own (needs root and `unshare`: CI has both).
#[test]
fn c_quark_get_reaches_localhost_on_its_second_address() {
    if !mount_namespaces() {
        eprintln!("no mount namespace here (root and unshare needed): skipped");
        return;
    }
    let bin = examples();
    let root = scratch("www-hosts");
    let want = test_file(&root);
    let server = hq_server(&root);
    let hosts = root.join("hosts");
    std::fs::write(&hosts, "::1 localhost\n127.0.0.1 localhost\n").unwrap();
    let out = root.join("out.bin");
    let child = Command::new("unshare")
        .args([
            "-m",
            "sh",
            "-c",
            r#"mount --bind "$1" /etc/hosts && exec "$2" "$3" "$4" --insecure"#,
            "sh",
        ])
        .arg(&hosts)
        .arg(bin.join("quark-get"))
        .arg(format!("https://localhost:{}/file.bin", server.port))
        .arg(&out)
        .spawn()
        .unwrap();
    downloaded(child, &out, &want);
    server.endpoint.close(0, b"");
    let _ = std::fs::remove_dir_all(&root);
}

/// The Python binding (ctypes over libquark_ffi.so) downloads the same way;
/// skipped when there is no `python3`.
#[test]
fn python_quark_get_downloads_a_file() {
    if Command::new("python3").arg("--version").output().is_err() {
        eprintln!("no python3: skipped");
        return;
    }
    examples();
    let root = scratch("www-py");
    let want = test_file(&root);
    let server = hq_server(&root);
    let lib = common::lib_dir().join("libquark_ffi.so");
    let out = root.join("out.bin");
    let child = Command::new("python3")
        .arg(workspace().join("bindings/python/quark_get.py"))
        .arg(format!("127.0.0.1:{}", server.port))
        .arg("/file.bin")
        .arg(&out)
        .arg("--insecure")
        .env("QUARK_LIB", &lib)
        .spawn()
        .unwrap();
    downloaded(child, &out, &want);
    server.endpoint.close(0, b"");
    let _ = std::fs::remove_dir_all(&root);
}

/// Start the C echo program `name` for `connections` connections with a
/// fresh self-signed certificate; returns it, its port and the certificate.
fn start_echo(name: &str, connections: &str) -> (std::process::Child, u16, PathBuf) {
    start_echo_with(name, &[connections])
}

/// `start_echo` with the arguments after the key file.
fn start_echo_with(name: &str, extra: &[&str]) -> (std::process::Child, u16, PathBuf) {
    let bin = examples();
    // A directory per set of arguments: the tests of one program run at once
    // and must not overwrite each other's certificate.
    let dir = scratch(&format!("{name}-{}", extra.join("-")));
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, ck.cert.pem()).unwrap();
    std::fs::write(&key, ck.signing_key.serialize_pem()).unwrap();
    let mut child = Command::new(bin.join(name))
        .args(["127.0.0.1:0".as_ref(), cert.as_os_str(), key.as_os_str()])
        .args(extra)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port: u16 = line
        .trim()
        .strip_prefix("listening on ")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"));
    (child, port, cert)
}

/// One Rust client connection to an echo program: each message on its own
/// stream, all streams at once; every reply compared with what was sent.
async fn echo_client(port: u16, cert: PathBuf, sizes: &[usize]) {
    let config = tls::client_config(tls::Verify::CaFile(cert), &[b"quark-echo"]).unwrap();
    let client = Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = format!("127.0.0.1:{port}").parse().unwrap();
    let conn = client
        .connect(config, addr, "localhost")
        .unwrap()
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for (n, &size) in sizes.iter().enumerate() {
        let message: Vec<u8> = (0..size).map(|i| ((i + n) % 253) as u8).collect();
        let (mut send, mut recv) = conn.open_bi().await.unwrap();
        tasks.push(tokio::spawn(async move {
            let writer = async {
                send.write_all(&message).await.unwrap();
                send.finish().unwrap();
            };
            let (_, reply) = tokio::join!(writer, recv.read_to_end(1 << 21));
            assert!(reply.unwrap() == message, "echo of {size} bytes differs");
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    conn.close(0, b"done");
    client.wait_idle().await;
}

#[test]
fn c_echo_server_echoes_to_a_rust_client() {
    // One connection, then it exits. Empty, small, and larger than the
    // server's 64 KiB buffer.
    let (mut child, port, cert) = start_echo("echo-server", "1");
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(echo_client(port, cert, &[0, 5, 700_001]));
    assert!(wait(&mut child, Duration::from_secs(30)).success());
}

/// The event-loop server: three connections at once, each with streams in
/// parallel, served from one thread through `quark_ready_fd`.
#[test]
fn c_echo_poll_serves_connections_at_once() {
    let (mut child, port, cert) = start_echo("echo-poll", "3");
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let clients: Vec<_> = (0..3)
            .map(|_| tokio::spawn(echo_client(port, cert.clone(), &[0, 5, 300_001, 123_456])))
            .collect();
        for c in clients {
            c.await.unwrap();
        }
    });
    assert!(wait(&mut child, Duration::from_secs(30)).success());
}

/// The same loop on a caller-driven endpoint: the C program's own thread runs
/// quark inside `quark_process` (no library thread).
#[test]
fn c_echo_poll_caller_driven_serves_connections_at_once() {
    let (mut child, port, cert) = start_echo_with("echo-poll", &["3", "driven"]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let clients: Vec<_> = (0..3)
            .map(|_| tokio::spawn(echo_client(port, cert.clone(), &[0, 5, 300_001, 123_456])))
            .collect();
        for c in clients {
            c.await.unwrap();
        }
    });
    assert!(wait(&mut child, Duration::from_secs(30)).success());
}
