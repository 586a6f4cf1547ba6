//! Helpers shared by the tests that run the `quark` binary.

// Not every test binary uses every helper.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Output;

use sha2::{Digest, Sha256};

/// An empty directory `<prefix>-<name>-<pid>` under the system temp dir, so runs never share files.
pub(crate) fn tempdir(prefix: &str, name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("{prefix}-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
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
