//! The client threads against real servers in this process: every request
//! byte-checked (the adapters verify each response byte) and counted once.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Instant;

use super::threads::{Pool, merge};
use crate::adapter::{Cipher, ClientConfig, Identity, ServeConfig, ServerStats, find};
use crate::workload::{Shared, Workload};

#[tokio::test]
async fn two_client_threads_complete_every_request_once() {
    const REQUESTS: u64 = 1_001;
    for proto in ["quic", "tcp+tls"] {
        let adapter = find(proto).unwrap();
        let identity = Identity::generate().unwrap();
        let stats = Arc::new(ServerStats::default());
        let server = adapter
            .serve(ServeConfig {
                listen: "127.0.0.1:0".parse().unwrap(),
                identity: identity.clone(),
                cipher: Cipher::Aes128Gcm,
                stats: stats.clone(),
                workers: None,
            })
            .await
            .unwrap();
        let config = ClientConfig {
            server: server.local_addr(),
            cert: identity.cert.clone(),
            cipher: Cipher::Aes128Gcm,
            sockets: 4,
        };
        let mut pool = Pool::start(adapter, config, 2, false).await.unwrap();
        let w = Workload::Persistent {
            connections: 9,
            in_flight: 2,
            requests: REQUESTS,
            response_len: 2048,
            body_len: 100,
            warmup: 3,
        };
        let shared = Arc::new(Shared::default());
        let progress = Arc::new(AtomicU64::new(0));
        pool.prepare(&w, &shared, &progress).await.unwrap();
        // Setup and warm-up requests are not the measurement's.
        stats.reset();
        let go = Instant::now();
        let runs = pool.go().await.unwrap();
        // Each thread ran its own share of the connections.
        let conns: Vec<u64> = runs.iter().map(|r| r.measured.peak_connections).collect();
        assert_eq!(conns, [5, 4], "{proto}");
        assert!(runs.iter().all(|r| r.measured.requests > 0), "{proto}");
        let m = merge(runs, go, false);
        assert_eq!(m.requests, REQUESTS, "{proto}");
        assert_eq!(m.latency_ns.len() as u64, REQUESTS, "{proto}");
        assert_eq!(m.bytes_in, REQUESTS * 2048, "{proto}");
        assert_eq!(m.bytes_out, REQUESTS * 100, "{proto}");
        assert_eq!(m.peak_connections, 9, "{proto}");
        assert!((1..=18).contains(&m.peak_in_flight), "{proto}");
        assert_eq!(progress.load(Relaxed), REQUESTS, "{proto}");
        let s = stats.snapshot();
        assert_eq!(
            (s.requests, s.bytes_out, s.bytes_in, s.errors),
            (REQUESTS, REQUESTS * 2048, REQUESTS * 100, 0),
            "{proto}"
        );
        pool.teardown().await.unwrap();
    }
}
