//! The C examples in `examples/c`, built with `make` against
//! `target/debug/libquark_ffi.a` and run: `quark-get` against an in-process
//! quark hq-interop server (body checked by SHA-256), `echo-server` against
//! a quark Rust client (bytes compared); and the Python binding's
//! `quark_get.py` the same way as `quark-get`.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use quark::{Endpoint, hq, tls};
use sha2::{Digest, Sha256};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("quark-ffi-c-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `target/debug`: the test runs from its `deps` directory.
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().and_then(Path::parent).unwrap().to_path_buf()
}

/// Build the static library (the test harness builds only the rlib) and the
/// C examples, once; returns the directory holding the programs.
fn examples() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let target = target_dir();
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut build = Command::new(cargo);
        // The test's own environment (CARGO_PKG_*, ...) would make build
        // scripts that watch it rerun and rebuild the whole tree.
        for (key, _) in std::env::vars_os() {
            let key = key.to_string_lossy();
            if (key.starts_with("CARGO_") && key != "CARGO_HOME" && key != "CARGO_TARGET_DIR")
                || key.contains("MAKEFLAGS")
                || key == "LD_LIBRARY_PATH"
            {
                build.env_remove(&*key);
            }
        }
        let status = build
            // `--tests` keeps the features of `cargo test`, so nothing is rebuilt.
            .args(["build", "-p", "quark-ffi", "--lib", "--tests"])
            .current_dir(workspace())
            .status()
            .unwrap();
        assert!(status.success(), "cargo build -p quark-ffi failed");
        let out = scratch("bin");
        let status = Command::new("make")
            .arg("-B")
            .arg("-C")
            .arg(workspace().join("examples/c"))
            .arg(format!("OUT={}", out.display()))
            .arg(format!("TARGET_DIR={}", target.display()))
            .status()
            .unwrap();
        assert!(status.success(), "make -C examples/c failed");
        out
    })
}

/// Wait for `child`, failing the test rather than hanging on it.
fn wait(child: &mut std::process::Child, limit: Duration) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("C example did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

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

fn digest_of(path: &Path) -> String {
    hex::encode(Sha256::digest(std::fs::read(path).unwrap()))
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
    let lib = target_dir().join("libquark_ffi.so");
    let out = root.join("out.bin");
    let mut child = Command::new("python3")
        .arg(workspace().join("bindings/python/quark_get.py"))
        .arg(format!("127.0.0.1:{}", server.port))
        .arg("/file.bin")
        .arg(&out)
        .arg("--insecure")
        .env("QUARK_LIB", &lib)
        .spawn()
        .unwrap();
    assert!(wait(&mut child, Duration::from_secs(60)).success());
    assert_eq!(digest_of(&out), want, "downloaded file differs");
    server.endpoint.close(0, b"");
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn c_echo_server_echoes_to_a_rust_client() {
    let bin = examples();
    let dir = scratch("echo");
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, ck.cert.pem()).unwrap();
    std::fs::write(&key, ck.signing_key.serialize_pem()).unwrap();

    // One connection, then it exits.
    let mut child = Command::new(bin.join("echo-server"))
        .args([
            "127.0.0.1:0".as_ref(),
            cert.as_os_str(),
            key.as_os_str(),
            "1".as_ref(),
        ])
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

    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let config =
            tls::client_config(tls::Verify::CaFile(cert.clone()), &[b"quark-echo"]).unwrap();
        let client = Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = format!("127.0.0.1:{port}").parse().unwrap();
        let conn = client
            .connect(config, addr, "localhost")
            .unwrap()
            .await
            .unwrap();
        // Empty, small, and larger than the server's 64 KiB buffer.
        for size in [0usize, 5, 700_001] {
            let message: Vec<u8> = (0..size).map(|i| (i % 253) as u8).collect();
            let (mut send, mut recv) = conn.open_bi().await.unwrap();
            send.write_all(&message).await.unwrap();
            send.finish().unwrap();
            let reply = recv.read_to_end(1 << 21).await.unwrap();
            assert!(reply == message, "echo of {size} bytes differs");
        }
        conn.close(0, b"done");
        client.wait_idle().await;
    });
    assert!(wait(&mut child, Duration::from_secs(30)).success());
}
