//! Socket tests, over loopback only (127.0.0.1 and ::1, plus a private network
//! namespace for the full-buffer test).

mod basic;
mod bench;
mod ecn;
mod errors;
mod fallback;
mod gso;
mod would_block;

use std::io::IoSliceMut;
use std::net::SocketAddr;
use std::time::Duration;

use super::UdpSocket;
use crate::{RecvMeta, Transmit};

/// Binds a socket on `addr` (e.g. "127.0.0.1:0").
fn bind(addr: &str) -> UdpSocket {
    UdpSocket::bind(addr.parse().unwrap()).unwrap()
}

/// A single-datagram transmit.
fn datagram(to: SocketAddr, contents: &[u8]) -> Transmit<'_> {
    Transmit {
        destination: to,
        ecn: 0,
        contents,
        segment_size: None,
        src_ip: None,
    }
}

/// A recognisable payload: `tag` in the first four bytes, then a pattern.
fn payload(tag: u32, len: usize) -> Vec<u8> {
    let mut p: Vec<u8> = (0..len)
        .map(|i| (i as u32).wrapping_mul(7).wrapping_add(tag) as u8)
        .collect();
    let n = len.min(4);
    p[..n].copy_from_slice(&tag.to_be_bytes()[..n]);
    p
}

/// Receives exactly `count` messages (waiting for them), as (bytes, meta).
async fn recv_msgs(sock: &UdpSocket, count: usize) -> Vec<(Vec<u8>, RecvMeta)> {
    let mut storage = vec![vec![0u8; 65536]; 8];
    let mut out = Vec::new();
    while out.len() < count {
        let mut bufs: Vec<IoSliceMut<'_>> =
            storage.iter_mut().map(|b| IoSliceMut::new(b)).collect();
        let mut meta = [RecvMeta::default(); 8];
        let want = (count - out.len()).min(8);
        // A guard against hanging forever, not a timing assertion.
        let got = tokio::time::timeout(
            Duration::from_secs(20),
            sock.recv(&mut bufs[..want], &mut meta),
        )
        .await
        .expect("datagrams missing")
        .unwrap();
        assert!(got >= 1 && got <= want);
        for (buf, m) in bufs.iter().zip(&meta).take(got) {
            out.push((buf[..m.len].to_vec(), *m));
        }
    }
    out
}

/// Asserts that nothing more is waiting on `sock`.
fn assert_drained(sock: &UdpSocket) {
    let mut buf = [0u8; 65536];
    let mut meta = [RecvMeta::default()];
    let err = sock
        .try_recv(&mut [IoSliceMut::new(&mut buf)], &mut meta)
        .unwrap_err();
    assert_eq!(
        err.kind(),
        std::io::ErrorKind::WouldBlock,
        "unexpected extra message"
    );
}
