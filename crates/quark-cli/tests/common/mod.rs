//! Helpers shared by the tests that run the `quark` binary.

// Not every test binary uses every helper.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Output;

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

/// A finished command's stderr as text, for asserting on its messages.
pub(crate) fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
