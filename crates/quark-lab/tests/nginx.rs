//! The `nginx` baseline: Debian's nginx serving the pattern over HTTPS,
//! checked byte for byte by the lab client, its requests counted from
//! nginx's access log and its CPU read from /proc. Skipped (with a line
//! saying so) where nginx is not installed, unless QUARK_REQUIRE_NGINX=1.

use std::time::Duration;

mod common;

use quark_lab::adapter::{Request, Server, ServerStats, find};

fn nginx_or_skip() -> bool {
    let a = find("nginx").unwrap();
    match a.unavailable() {
        None => true,
        Some(why) if std::env::var_os("QUARK_REQUIRE_NGINX").is_some() => panic!("{why}"),
        Some(why) => {
            eprintln!("skipped: {why}");
            false
        }
    }
}

/// Waits until nginx's access log was read for `n` requests and `bytes`.
async fn counted(
    server: &dyn Server,
    stats: &ServerStats,
    n: u64,
    bytes: u64,
) -> quark_lab::adapter::ServerCounters {
    for _ in 0..500 {
        server.sync_counters();
        let s = stats.snapshot();
        if s.requests >= n && s.bytes_out >= bytes {
            return s;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    stats.snapshot()
}

#[tokio::test]
async fn nginx_serves_exact_bytes_over_tls13_and_counts_them() {
    if !nginx_or_skip() {
        return;
    }
    let common::Pair {
        server,
        stats,
        client,
        ..
    } = common::pair("nginx", "nginx").await;
    let cpu0 = server.helper_cpu().unwrap();
    let conn = client.connect().await.unwrap();
    // 0 bytes, one span, and three spans (16 MiB each) at shifted pattern offsets.
    let sizes = [0u64, 1, 1_000_003, (33 << 20) + 7];
    for n in sizes {
        conn.request(Request {
            response_len: n,
            body_len: 0,
        })
        .await
        .unwrap_or_else(|e| panic!("{n}: {e:#}"));
    }
    let total = sizes.iter().sum::<u64>();
    let s = counted(server.as_ref(), &stats, sizes.len() as u64, total).await;
    assert_eq!(
        (s.connections, s.requests, s.bytes_out, s.errors),
        (1, 4, total, 0)
    );
    // A body is refused by the client, not sent.
    let err = conn
        .request(Request {
            response_len: 1,
            body_len: 1,
        })
        .await
        .unwrap_err();
    assert!(err.to_string().contains("body"), "{err}");
    conn.close().await.unwrap();
    // nginx's own processes did the TLS work for 35 MB.
    let cpu1 = server.helper_cpu().unwrap();
    assert!(cpu1.0 + cpu1.1 > cpu0.0 + cpu0.1, "{cpu0:?} {cpu1:?}");
}
