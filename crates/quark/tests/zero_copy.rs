//! Zero-copy receive through the driver. Bulk data that arrives in large
//! receives is lent to the connection (kept in the driver's receive buffers
//! until read), and a reader that never reads cannot make the driver hold
//! more than its bound of those buffers: lending stops, what arrives is
//! copied, every byte still arrives, and lending resumes once the reader
//! catches up. One test in this binary: the driver counters are per process.

mod common;

use std::time::Duration;

use common::{connect, data, sha};
use quark::tls::{self, Identity, Verify};
use quark::{Endpoint, counters};

const ALPN: &[u8] = b"test";
const STREAM: usize = 4 << 20;

/// `MAX_PARKED` (64) buffers held by unread data, plus the 16 of the read
/// that was lent when the bound was crossed (crates/quark/src/driver/rx_bufs.rs).
const MOST_HELD: u64 = 64 + 16;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unread_data_holds_a_bounded_number_of_receive_buffers() {
    counters::set_enabled(true);
    let id = Identity::self_signed(&["localhost"]).unwrap();
    let local = "127.0.0.1:0".parse().unwrap();
    let server = Endpoint::server(tls::server_config(&id, &[ALPN]).unwrap(), local).unwrap();
    let client = Endpoint::client(local).unwrap();
    let config = tls::client_config(Verify::Roots(vec![id.cert.clone()]), &[ALPN]).unwrap();
    let (c, s) = connect(&server, &client, config).await;
    // A first transfer, read as it comes: the path MTU reaches loopback's, so
    // every later datagram is a receive worth lending.
    read_one(&c, &s, 9).await;

    // Four streams of 4 MiB: the connection's whole 16 MiB window, unread.
    let mut writers = Vec::new();
    for i in 0..4 {
        let (mut send, _recv) = c.open_bi().await.unwrap();
        writers.push(tokio::spawn(async move {
            send.write_all(&data(STREAM, i)).await.unwrap();
            send.finish().unwrap();
            let _ = send.stopped().await;
        }));
    }
    let mut streams = Vec::new();
    for _ in 0..4 {
        streams.push(s.accept_bi().await.unwrap().1);
    }
    // A guard against hanging forever, not a timing assertion.
    for _ in 0..1_000 {
        if s.stats().bytes_in >= 15 << 20 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let held = counters::driver_snapshot();
    eprintln!("unread: {held:?}");
    assert!(s.stats().bytes_in >= 15 << 20, "{:?}", s.stats());
    assert!(held.lent_receives > 0, "nothing was lent: {held:?}");
    assert!(
        held.unlent_reads > 0,
        "the bound was never reached: {held:?}"
    );
    assert!(held.most_parked <= MOST_HELD, "{held:?}");

    // Everything arrives, in order.
    for (i, recv) in streams.iter_mut().enumerate() {
        let mut got = Vec::with_capacity(STREAM);
        while let Some(bytes) = recv.read_bytes(1 << 20).await.unwrap() {
            got.extend_from_slice(&bytes);
        }
        assert_eq!(sha(&got), sha(&data(STREAM, i as u32)), "stream {i}");
    }
    for w in writers {
        w.await.unwrap();
    }

    // Read as it comes, and the buffers are lent again.
    read_one(&c, &s, 10).await;
    let after = counters::driver_snapshot();
    eprintln!("read as it came: {after:?}");
    assert!(
        after.lent_receives > held.lent_receives,
        "lending did not resume: {held:?} then {after:?}"
    );
    assert!(after.most_parked <= MOST_HELD, "{after:?}");
}

/// One stream of `STREAM` bytes from `c` to `s`, read as it arrives and
/// compared by digest.
async fn read_one(c: &quark::Connection, s: &quark::Connection, seed: u32) {
    let (mut send, _recv) = c.open_bi().await.unwrap();
    let body = data(STREAM, seed);
    let expected = sha(&body);
    let writer = tokio::spawn(async move {
        send.write_all(&body).await.unwrap();
        send.finish().unwrap();
        let _ = send.stopped().await;
    });
    let mut recv = s.accept_bi().await.unwrap().1;
    let mut got = Vec::with_capacity(STREAM);
    while let Some(bytes) = recv.read_bytes(1 << 20).await.unwrap() {
        got.extend_from_slice(&bytes);
    }
    assert_eq!(sha(&got), expected);
    writer.await.unwrap();
}
