//! `quic-c`: quark through libquark's C API, in one process with the lab's
//! workloads: exact bytes and counts, and the same wire protocol as `quic`
//! (each side talks to the other's adapter).

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use quark_lab::adapter::{Cipher, ClientConfig, Identity, Request, find};
use quark_lab::workload::{Measured, Workload, prepare, run};

mod common;
use common::Pair;

async fn pair(server: &str, client: &str, cipher: Cipher) -> Pair {
    common::pair_with(server, client, cipher, None, 1).await
}

/// Requests of every shape on one connection, then a second connection
/// after the first closed; the server counts every byte each way.
async fn exact_bytes(server: &str, client: &str, cipher: Cipher) {
    let p = pair(server, client, cipher).await;
    let conn = p.client.connect().await.unwrap();
    for (response_len, body_len) in [(1, 0), (3_000_017, 0), (2048, 2048), (5, 700_001), (0, 0)] {
        p.stats.reset();
        conn.request(Request {
            response_len,
            body_len,
        })
        .await
        .unwrap_or_else(|e| panic!("{client} -> {server}: {e:#}"));
        let s = p.stats.snapshot();
        assert_eq!(
            (s.requests, s.bytes_out, s.bytes_in, s.errors),
            (1, response_len, body_len, 0),
            "{client} -> {server}"
        );
    }
    conn.close().await.unwrap();
    p.client.wait_idle().await;
    let again = p.client.connect().await.unwrap();
    again
        .request(Request {
            response_len: 7,
            body_len: 1,
        })
        .await
        .unwrap();
    again.close().await.unwrap();
    p.client.wait_idle().await;
}

#[tokio::test]
async fn quic_c_transfers_exactly_the_bytes_asked() {
    exact_bytes("quic-c", "quic-c", Cipher::Aes128Gcm).await;
}

#[tokio::test]
async fn quic_c_speaks_the_same_protocol_as_quic() {
    exact_bytes("quic", "quic-c", Cipher::Aes128Gcm).await;
    exact_bytes("quic-c", "quic", Cipher::Aes128Gcm).await;
}

#[tokio::test]
async fn quic_c_offers_the_lab_cipher() {
    exact_bytes("quic-c", "quic-c", Cipher::Chacha20).await;
    // The quic server offers only AES-256-GCM: a quic-c client offering
    // AES-128-GCM alone would fail the handshake, so this one offers 256.
    exact_bytes("quic", "quic-c", Cipher::Aes256Gcm).await;
}

#[tokio::test]
async fn a_quic_c_client_fails_cleanly_without_a_server() {
    let identity = Identity::generate().unwrap();
    let client = find("quic-c")
        .unwrap()
        .client(ClientConfig {
            // Nothing listens on the discard port.
            server: "127.0.0.1:9".parse().unwrap(),
            cert: identity.cert,
            cipher: Cipher::Aes128Gcm,
            sockets: 1,
        })
        .await
        .unwrap();
    let err = client.connect().await.err().expect("no server");
    assert!(format!("{err:#}").contains("handshake"), "{err:#}");
}

async fn run_counted(p: &Pair, w: Workload) -> Measured {
    let prepared = prepare(&p.client, &w).await.unwrap();
    p.stats.reset();
    let m = run(&p.client, &w, &prepared, &Arc::new(AtomicU64::new(0)))
        .await
        .unwrap();
    prepared.teardown().await;
    m
}

/// Many connections and concurrent requests on them all go through the
/// readiness fds: a lost wake-up would hang here (the test harness times
/// the whole run out), a wrong byte fails the verifier.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quic_c_workloads_issue_exact_counts_and_concurrency() {
    let p = pair("quic-c", "quic-c", Cipher::Aes128Gcm).await;
    let w = Workload::Fresh {
        requests: 40,
        workers: 7,
        response_len: 1,
        body_len: 5,
        warmup: 2,
    };
    let m = run_counted(&p, w).await;
    let s = p.stats.snapshot();
    assert_eq!((m.requests, m.connections, m.peak_in_flight), (40, 40, 7));
    assert_eq!(
        (s.requests, s.connections, s.bytes_in, s.bytes_out),
        (40, 40, 200, 40)
    );
    let w = Workload::Persistent {
        connections: 5,
        in_flight: 20,
        requests: 1000,
        response_len: 2048,
        body_len: 100,
        warmup: 0,
    };
    let m = run_counted(&p, w).await;
    let s = p.stats.snapshot();
    assert_eq!(
        (m.requests, m.peak_in_flight, m.peak_connections),
        (1000, 100, 5)
    );
    assert_eq!(
        (s.requests, s.bytes_out, s.bytes_in, s.errors),
        (1000, 2_048_000, 100_000, 0)
    );
    p.client.wait_idle().await;
}
