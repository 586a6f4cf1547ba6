//! Every adapter, client and server in one process: exact bytes, exact counts,
//! exact concurrency.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use quark_lab::adapter::{Cipher, Kind, Request, ServerStats, registry};
use quark_lab::workload::{Workload, prepare, run};
use sha2::{Digest, Sha256};

mod common;
use common::Pair;

async fn pair(proto: &str) -> Pair {
    common::pair(proto, proto).await
}

/// The stream adapters that run in this process (quic-go's is a program of
/// its own, tested through `quark bench` in `quicgo.rs`; nginx takes no
/// request bodies and may be missing, tested in `nginx.rs`).
fn stream_adapters() -> Vec<&'static str> {
    registry()
        .iter()
        .filter(|a| a.kind() == Kind::Stream && a.external_child().is_none())
        .filter(|a| a.name() != "nginx")
        .map(|a| a.name())
        .collect()
}

/// SHA-256 of `n` bytes of the pattern, computed from its definition.
fn expected_hash(n: u64) -> Vec<u8> {
    let mut h = Sha256::new();
    let bytes: Vec<u8> = (0..n).map(|i| (i % 251) as u8).collect();
    h.update(&bytes);
    h.finalize().to_vec()
}

#[tokio::test]
async fn every_stream_adapter_transfers_exactly_the_bytes_asked() {
    for proto in stream_adapters() {
        let p = pair(proto).await;
        let conn = p.client.connect().await.unwrap();
        for (response_len, body_len) in [(1, 0), (1_000_003, 0), (2048, 2048), (3, 300_007)] {
            p.stats.reset();
            conn.request(Request {
                response_len,
                body_len,
            })
            .await
            .unwrap_or_else(|e| panic!("{proto}: {e:#}"));
            let s = p.stats.snapshot();
            assert_eq!(
                (s.requests, s.bytes_out, s.bytes_in, s.errors),
                (1, response_len, body_len, 0),
                "{proto}"
            );
        }
        conn.close().await.unwrap();
        p.client.wait_idle().await;
        // The lab waits for idle between phases: the client connects again after it.
        let again = p
            .client
            .connect()
            .await
            .unwrap_or_else(|e| panic!("{proto}: {e:#}"));
        again
            .request(Request {
                response_len: 7,
                body_len: 0,
            })
            .await
            .unwrap_or_else(|e| panic!("{proto}: {e:#}"));
        again.close().await.unwrap();
        p.client.wait_idle().await;
    }
}

#[tokio::test]
async fn tcp_server_bytes_hash_to_the_pattern() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let p = pair("tcp").await;
    let mut s = tokio::net::TcpStream::connect(p.addr).await.unwrap();
    s.write_all(b"GET /777777 0\r\n").await.unwrap();
    s.shutdown().await.unwrap();
    let mut got = Vec::new();
    s.read_to_end(&mut got).await.unwrap();
    assert_eq!(got.len(), 777_777);
    assert_eq!(Sha256::digest(&got).to_vec(), expected_hash(777_777));
}

/// A raw quinn client, independent of the adapters' clients and verifier,
/// reads 1 234 567 bytes from `proto`'s server.
async fn raw_quinn_fetch(proto: &str) {
    let p = pair(proto).await;
    let mut roots = rustls::RootCertStore::empty();
    roots.add(p.identity.cert.clone()).unwrap();
    let mut tls = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_protocol_versions(&[&rustls::version::TLS13])
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    tls.alpn_protocols = vec![b"hq-interop".to_vec()];
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls).unwrap();
    let mut ep = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    ep.set_default_client_config(quinn::ClientConfig::new(Arc::new(crypto)));
    let conn = ep.connect(p.addr, "localhost").unwrap().await.unwrap();
    let (mut send, mut recv) = conn.open_bi().await.unwrap();
    send.write_all(b"GET /1234567\r\n").await.unwrap();
    send.finish().unwrap();
    let got = recv.read_to_end(10 << 20).await.unwrap();
    assert_eq!(got.len(), 1_234_567, "{proto}");
    assert_eq!(
        Sha256::digest(&got).to_vec(),
        expected_hash(1_234_567),
        "{proto}"
    );
    assert_eq!(p.stats.snapshot().bytes_out, 1_234_567, "{proto}");
    conn.close(0u32.into(), b"");
    ep.wait_idle().await;
}

#[tokio::test]
async fn quinn_server_bytes_hash_to_the_pattern() {
    raw_quinn_fetch("quinn").await;
}

/// s2n-quic's server, read by another stack: the adapter speaks plain hq-interop.
#[tokio::test]
async fn s2n_quic_server_bytes_hash_to_the_pattern() {
    raw_quinn_fetch("s2n-quic").await;
}

#[tokio::test]
async fn malformed_requests_fail_without_killing_the_server() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let p = pair("tcp").await;
    for bad in [
        &b"GET /-1 0\r\n"[..],
        b"HELLO\r\n",
        &[b'x'; 500],
        b"GET /1099511627777 0\r\n",
    ] {
        let mut s = tokio::net::TcpStream::connect(p.addr).await.unwrap();
        s.write_all(bad).await.unwrap();
        let mut got = Vec::new();
        let _ = s.read_to_end(&mut got).await;
        assert!(got.is_empty());
    }
    // Still serving.
    let conn = p.client.connect().await.unwrap();
    conn.request(Request {
        response_len: 10,
        body_len: 0,
    })
    .await
    .unwrap();
}

async fn run_counted(p: &Pair, w: Workload) -> quark_lab::workload::Measured {
    let prepared = prepare(&p.client, &w).await.unwrap();
    if let Workload::Blast {
        warmup,
        bytes,
        payload,
        ..
    } = w
    {
        // Warm-up datagrams must be counted before the interval starts.
        let n = u64::from(warmup) * bytes.div_ceil(u64::from(payload));
        wait_for_datagrams(&p.stats, n).await;
    }
    p.stats.reset();
    let m = run(&p.client, &w, &prepared, &Arc::new(AtomicU64::new(0)))
        .await
        .unwrap();
    prepared.teardown().await;
    m
}

#[tokio::test]
async fn workloads_issue_exact_counts_and_concurrency() {
    for proto in [
        "tcp",
        "tcp+tls",
        "quic",
        "quinn",
        "s2n-quic",
        "http1",
        "http2+tls",
        "h3",
        "h3-on-quark",
        "h3-quinn",
    ] {
        let p = pair(proto).await;
        // Fresh connections (response-time, ephemeral): 7 workers share 40 requests.
        let w = Workload::Fresh {
            requests: 40,
            workers: 7,
            response_len: 1,
            body_len: 5,
            warmup: 2,
        };
        let m = run_counted(&p, w).await;
        let s = p.stats.snapshot();
        assert_eq!(
            (m.requests, m.connections, m.peak_in_flight),
            (40, 40, 7),
            "{proto}"
        );
        assert_eq!(
            (s.requests, s.connections, s.bytes_in, s.bytes_out),
            (40, 40, 200, 40),
            "{proto}"
        );
        assert_eq!(m.latency_ns.len(), 40);
        assert_eq!(m.connect_ns.len(), 40);

        // Long-lived connections (rps, persistent, parallel): 5 connections × 3 in flight, 90 requests.
        let w = Workload::Persistent {
            connections: 5,
            in_flight: 3,
            requests: 90,
            response_len: 2000,
            body_len: 0,
            warmup: 0,
        };
        let m = run_counted(&p, w).await;
        let s = p.stats.snapshot();
        assert_eq!(
            (
                m.requests,
                m.connections,
                m.peak_in_flight,
                m.peak_connections
            ),
            (90, 0, 15, 5),
            "{proto}"
        );
        assert_eq!(
            (s.requests, s.connections, s.peak_connections, s.bytes_out),
            (90, 0, 5, 180_000),
            "{proto}"
        );
        p.client.wait_idle().await;
    }
}

#[tokio::test]
async fn quic_server_workers_count_every_request_exactly() {
    // Two SO_REUSEPORT workers, connections from eight client sockets.
    let p = common::pair_with("quic", "quic", Cipher::Aes128Gcm, Some(2), 8).await;
    let w = Workload::Persistent {
        connections: 16,
        in_flight: 2,
        requests: 200,
        response_len: 2000,
        body_len: 10,
        warmup: 0,
    };
    let m = run_counted(&p, w).await;
    let s = p.stats.snapshot();
    assert_eq!((m.requests, m.peak_connections), (200, 16));
    assert_eq!(
        (
            s.requests,
            s.peak_connections,
            s.bytes_out,
            s.bytes_in,
            s.errors
        ),
        (200, 16, 400_000, 2000, 0)
    );
    let w = Workload::Fresh {
        requests: 30,
        workers: 5,
        response_len: 100_000,
        body_len: 0,
        warmup: 0,
    };
    let m = run_counted(&p, w).await;
    let s = p.stats.snapshot();
    assert_eq!((m.requests, m.connections, m.bytes_in), (30, 30, 3_000_000));
    assert_eq!(
        (s.requests, s.connections, s.bytes_out),
        (30, 30, 3_000_000)
    );
    p.client.wait_idle().await;
}

#[tokio::test]
async fn udp_blast_is_counted_by_the_server() {
    let p = pair("udp").await;
    let w = Workload::Blast {
        bytes: 12_000,
        runs: 3,
        warmup: 1,
        payload: 1200,
    };
    let m = run_counted(&p, w).await;
    assert_eq!(m.datagrams_sent, Some(30));
    assert_eq!(m.bytes_out, 36_000);
    // Loopback at this rate does not drop: wait until all 30 arrived.
    wait_for_datagrams(&p.stats, 30).await;
    let s = p.stats.snapshot();
    assert_eq!((s.datagrams, s.bytes_in, s.bad_datagrams), (30, 36_000, 0));
    // Its request/response side (tests/udp_rr.rs) shares the server socket.
    assert!(p.client.connect().await.is_ok());
}

#[tokio::test]
async fn quic_dgram_blast_is_counted_and_checked_by_the_server() {
    let p = pair("quic-dgram").await;
    let w = Workload::Blast {
        bytes: 1_000_000,
        runs: 3,
        warmup: 1,
        payload: 1000,
    };
    let m = run_counted(&p, w).await;
    assert_eq!(m.datagrams_sent, Some(3000));
    assert_eq!(m.bytes_out, 3_000_000);
    // Congestion controlled and sent before each connection closed: on
    // loopback every datagram arrives, each with its header and pattern.
    wait_for_datagrams(&p.stats, 3000).await;
    let s = p.stats.snapshot();
    assert_eq!(
        (s.datagrams, s.bytes_in, s.bad_datagrams),
        (3000, 3_000_000, 0)
    );
    assert!(p.client.connect().await.is_err());
    p.client.wait_idle().await;
}

async fn wait_for_datagrams(stats: &ServerStats, n: u64) {
    for _ in 0..500 {
        if stats.snapshot().datagrams >= n {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

/// The QUIC adapters all speak hq-interop with the lab's request line, so a
/// client of one stack works against the server of another: quark against
/// s2n-quic and quinn each way, bytes checked by the adapters' verifier and
/// counted by the server.
#[tokio::test]
async fn quic_stacks_interoperate_through_the_lab_adapters() {
    for (server, client) in [
        ("s2n-quic", "quic"),
        ("quic", "s2n-quic"),
        ("s2n-quic", "quinn"),
        ("quinn", "s2n-quic"),
        // hyperium h3 on quark against h3 on quinn and quark-h3, both ways.
        ("h3-quinn", "h3-on-quark"),
        ("h3-on-quark", "h3-quinn"),
        ("h3", "h3-on-quark"),
        ("h3-on-quark", "h3"),
    ] {
        let Pair {
            stats,
            client: cl,
            server: _srv,
            ..
        } = common::pair(server, client).await;
        let conn = cl.connect().await.unwrap();
        for (response_len, body_len) in [(2_000_003, 0), (5, 700_001)] {
            conn.request(Request {
                response_len,
                body_len,
            })
            .await
            .unwrap_or_else(|e| panic!("{client} -> {server}: {e:#}"));
        }
        let s = stats.snapshot();
        assert_eq!(
            (s.requests, s.bytes_out, s.bytes_in, s.errors),
            (2, 2_000_008, 700_001, 0),
            "{client} -> {server}"
        );
        conn.close().await.unwrap();
        cl.wait_idle().await;
    }
}
