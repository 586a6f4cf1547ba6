//! Helpers shared by the tests that run the `quark` binary.

// Not every test binary uses every helper.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use sha2::{Digest, Sha256};

/// An empty directory `<prefix>-<name>-<pid>` under the system temp dir, so runs
/// never share files; removed with everything in it when the guard drops (each
/// run of the suite left about 30 MB behind before).
pub(crate) fn tempdir(prefix: &str, name: &str) -> TempDir {
    let dir = std::env::temp_dir().join(format!("{prefix}-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    TempDir(dir)
}

/// A directory removed on drop; derefs to its path.
pub(crate) struct TempDir(PathBuf);

impl std::ops::Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for TempDir {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A UDP port on 127.0.0.1 that was free a moment ago, for a server to listen on.
pub(crate) fn free_port() -> u16 {
    std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// SHA-256 of `b`: transfers are compared by digest, not byte by byte.
pub(crate) fn sha(b: &[u8]) -> Vec<u8> {
    Sha256::digest(b).to_vec()
}

/// `quark get ARGS...`, run to the end.
pub(crate) fn get(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_quark"))
        .arg("get")
        .args(args)
        .output()
        .unwrap()
}

/// A finished command's stderr as text, for asserting on its messages.
pub(crate) fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A running `quark serve`, killed on drop.
pub(crate) struct Server {
    pub(crate) child: Child,
    pub(crate) port: u16,
    pub(crate) cert: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Start `quark serve` on `root` and wait until it listens.
pub(crate) fn serve(root: &Path, dir: &Path) -> Server {
    serve_with(root, dir, &[])
}

pub(crate) fn serve_with(root: &Path, dir: &Path, extra: &[&str]) -> Server {
    let cert = dir.join("cert.pem");
    for _ in 0..5 {
        let port = free_port();
        let mut child = Command::new(env!("CARGO_BIN_EXE_quark"))
            .args(["serve", "--listen", &format!("127.0.0.1:{port}"), "--root"])
            .arg(root)
            .arg("--write-cert")
            .arg(&cert)
            // `{port}` in an argument stands for the port chosen here.
            .args(extra.iter().map(|a| a.replace("{port}", &port.to_string())))
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let mut lines = BufReader::new(stderr).lines();
        let mut ready = false;
        for line in lines.by_ref() {
            let line = line.unwrap();
            if line.starts_with("serving ") {
                ready = true;
                break;
            }
        }
        if ready {
            // Keep draining stderr so the server never blocks on a full pipe.
            std::thread::spawn(move || for _ in lines {});
            return Server { child, port, cert };
        }
        let _ = child.wait();
    }
    panic!("quark serve did not start");
}
