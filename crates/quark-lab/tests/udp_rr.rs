//! `udp` request/response (the cloud study's udp cells): client and server in
//! one process over loopback, every byte checked.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use quark_lab::adapter::udp_rr::{CHUNK, DATAGRAM, SOCKET_BUFFER, grow_buffers};
use quark_lab::adapter::{Cipher, ClientConfig, Identity, Request, ServerStats, find};
use quark_lab::workload::{Workload, prepare, run};
use sha2::{Digest, Sha256};
use tokio::net::UdpSocket;

mod common;
use common::Pair;

async fn pair() -> Pair {
    common::pair("udp", "udp").await
}

/// The server counts a request after sending its last datagram, which the
/// client may see first.
async fn wait_for_requests(stats: &ServerStats, n: u64) {
    for _ in 0..200 {
        if stats.snapshot().requests >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn udp_request_response_checks_every_byte_at_2k_and_512k() {
    let p = pair().await;
    let conn = p.client.connect().await.unwrap();
    // As the cloud study: request = response size; then an empty response.
    for (response_len, body_len) in [(2 << 10, 2 << 10), (512 << 10, 512 << 10), (0, 0)] {
        p.stats.reset();
        for _ in 0..3 {
            conn.request(Request {
                response_len,
                body_len,
            })
            .await
            .unwrap_or_else(|e| panic!("{response_len}: {e:#}"));
        }
        wait_for_requests(&p.stats, 3).await;
        let s = p.stats.snapshot();
        assert_eq!(
            (s.requests, s.bytes_in, s.bytes_out, s.errors),
            (3, 3 * body_len, 3 * response_len, 0)
        );
    }
    conn.close().await.unwrap();
}

/// SHA-256 of `n` bytes of the pattern, computed from its definition.
fn expected_hash(n: u64) -> Vec<u8> {
    let bytes: Vec<u8> = (0..n).map(|i| (i % 251) as u8).collect();
    Sha256::digest(&bytes).to_vec()
}

#[tokio::test]
async fn udp_server_response_hashes_to_the_pattern() {
    let p = pair().await;
    let sock = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    // Room for the whole response before the test reads it.
    grow_buffers(&sock, SOCKET_BUFFER);
    sock.connect(p.addr).await.unwrap();
    let len: u64 = 512 << 10;
    // A request by hand: header datagram only (no body), id 42.
    let mut d = b"QLRQ".to_vec();
    d.extend_from_slice(&42u64.to_be_bytes());
    d.extend_from_slice(&0u32.to_be_bytes());
    d.extend_from_slice(&1u32.to_be_bytes());
    d.extend_from_slice(format!("GET /{len} 0\r\n").as_bytes());
    sock.send(&d).await.unwrap();
    let total = len.div_ceil(CHUNK as u64) as usize;
    let mut parts = vec![Vec::new(); total];
    let mut buf = vec![0u8; 65_536];
    for _ in 0..total {
        let n = tokio::time::timeout(Duration::from_secs(5), sock.recv(&mut buf))
            .await
            .unwrap()
            .unwrap();
        assert!(n <= DATAGRAM, "{n}-byte datagram");
        assert_eq!(&buf[..4], b"QLRS");
        assert_eq!(buf[4..12], 42u64.to_be_bytes());
        let seq = u32::from_be_bytes(buf[12..16].try_into().unwrap()) as usize;
        assert_eq!(buf[16..20], (total as u32).to_be_bytes());
        parts[seq] = buf[20..n].to_vec();
    }
    assert_eq!(Sha256::digest(parts.concat()).to_vec(), expected_hash(len));
}

#[tokio::test]
async fn bad_udp_requests_are_counted_and_the_server_goes_on() {
    let p = pair().await;
    let sock = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    sock.connect(p.addr).await.unwrap();
    let mut header = b"QLRQ".to_vec();
    header.extend_from_slice(&[0; 8]);
    header.extend_from_slice(&0u32.to_be_bytes());
    header.extend_from_slice(&1u32.to_be_bytes());
    let mut bad_line = header.clone();
    bad_line.extend_from_slice(b"GET /-1 0\r\n");
    let mut huge = header.clone();
    huge.extend_from_slice(b"GET /1 1099511627776\r\n");
    for bad in [&b"QLRQ"[..], &header, &bad_line, &huge] {
        sock.send(bad).await.unwrap();
    }
    let conn = p.client.connect().await.unwrap();
    conn.request(Request {
        response_len: 10,
        body_len: 3,
    })
    .await
    .unwrap();
    assert_eq!(p.stats.snapshot().errors, 4);
}

#[tokio::test]
async fn a_udp_response_that_never_comes_fails_with_its_loss() {
    // A socket that reads nothing: the request's datagrams go unanswered.
    let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let client = find("udp")
        .unwrap()
        .client(ClientConfig {
            server: silent.local_addr().unwrap(),
            cert: Identity::generate().unwrap().cert,
            cipher: Cipher::Aes128Gcm,
            sockets: 1,
        })
        .await
        .unwrap();
    let conn = client.connect().await.unwrap();
    let e = conn
        .request(Request {
            response_len: 4 << 10,
            body_len: 0,
        })
        .await
        .unwrap_err();
    assert!(format!("{e:#}").contains("lost 3 of 3 datagrams"), "{e:#}");
    // A workload counts lost requests and goes on.
    let w = Workload::Fresh {
        requests: 3,
        workers: 3,
        response_len: 10,
        body_len: 0,
        warmup: 0,
    };
    let prepared = prepare(&client, &w).await.unwrap();
    let m = run(&client, &w, &prepared, &Arc::new(AtomicU64::new(0)))
        .await
        .unwrap();
    assert_eq!((m.requests, m.lost, m.latency_ns.len()), (0, 3, 0));
}

#[tokio::test]
async fn udp_workloads_issue_exact_counts_and_concurrency() {
    let p = pair().await;
    let counted = |w: Workload| {
        let p = &p;
        async move {
            let prepared = prepare(&p.client, &w).await.unwrap();
            p.stats.reset();
            let m = run(&p.client, &w, &prepared, &Arc::new(AtomicU64::new(0)))
                .await
                .unwrap();
            prepared.teardown().await;
            m
        }
    };
    // Ephemeral: a socket per request.
    let m = counted(Workload::Fresh {
        requests: 40,
        workers: 4,
        response_len: 8 << 10,
        body_len: 8 << 10,
        warmup: 2,
    })
    .await;
    assert_eq!((m.requests, m.connections, m.peak_in_flight), (40, 40, 4));
    wait_for_requests(&p.stats, 40).await;
    assert_eq!(p.stats.snapshot().bytes_out, 40 * (8 << 10));
    // Parallel: 16 in flight on one client "connection", 512 KiB each way.
    let m = counted(Workload::Persistent {
        connections: 1,
        in_flight: 16,
        requests: 48,
        response_len: 512 << 10,
        body_len: 512 << 10,
        warmup: 0,
    })
    .await;
    assert_eq!((m.requests, m.peak_in_flight), (48, 16));
    wait_for_requests(&p.stats, 48).await;
    let s = p.stats.snapshot();
    assert_eq!(
        (s.requests, s.bytes_in, s.errors),
        (48, 48 * (512 << 10), 0)
    );
}
