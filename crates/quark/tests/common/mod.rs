//! Helpers shared by the integration tests: deterministic payloads, their
//! digests and a client-side echo, so every test checks transfers the same way.

#![allow(dead_code)]

use quark::Connection;
use sha2::{Digest, Sha256};

/// Deterministic pseudo-random bytes (xorshift from `seed`) that a test can regenerate.
pub(crate) fn data(len: usize, seed: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 4);
    let mut x = seed | 1;
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(len);
    out
}

/// SHA-256 of `b`: transfers are compared by digest, not byte by byte.
pub(crate) fn sha(b: &[u8]) -> [u8; 32] {
    Sha256::digest(b).into()
}

/// Sends `body` on a new bidirectional stream and returns what the peer echoes back.
pub(crate) async fn echo(conn: &Connection, body: &[u8]) -> Vec<u8> {
    let (mut send, mut recv) = conn.open_bi().await.unwrap();
    let body = body.to_vec();
    let writer = tokio::spawn(async move {
        send.write_all(&body).await.unwrap();
        send.finish().unwrap();
    });
    let out = recv.read_to_end(usize::MAX).await.unwrap();
    writer.await.unwrap();
    out
}
