//! qlog files and ECN counters over real loopback sockets: with a qlog
//! directory, both sides write a JSON-SEQ file per connection that parses
//! record by record; ECN marks survive loopback and both sides validate them.

mod common;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{data, echo, sha};
use quark::tls::{self, Identity, Verify};
use quark::{EcnState, Endpoint, EndpointConfig};

const ALPN: &[u8] = b"test";

/// A fresh directory under the system's temporary directory.
fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("quark-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Server and client on 127.0.0.1 with `config`, and a client config trusting the server.
fn pair(config: EndpointConfig) -> (Endpoint, Endpoint, quark::ClientConfig) {
    let id = Identity::self_signed(&["localhost"]).unwrap();
    let local: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let server_tls = tls::server_config(&id, &[ALPN]).unwrap();
    let server = Endpoint::with_config(config.clone(), Some(server_tls), local).unwrap();
    let client = Endpoint::with_config(config, None, local).unwrap();
    let client_tls = tls::client_config(Verify::Roots(vec![id.cert.clone()]), &[ALPN]).unwrap();
    (server, client, client_tls)
}

/// Every record of a JSON-SEQ file, parsed.
fn read_records(path: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.starts_with('\u{1e}'), "{}: JSON-SEQ", path.display());
    text.split('\u{1e}')
        .skip(1)
        .map(|r| serde_json::from_str(r).unwrap_or_else(|e| panic!("{e}: {r}")))
        .collect()
}

#[tokio::test]
async fn qlog_files_for_both_sides() {
    let dir = temp_dir("qlog-loopback");
    let config = EndpointConfig {
        qlog_dir: Some(dir.clone()),
        ..EndpointConfig::default()
    };
    let (server, client, tls) = pair(config);
    assert!(server.qlog_enabled() && client.qlog_enabled());
    let (c, s) = common::connect(&server, &client, tls).await;
    common::spawn_echo(s);
    let body = data(200_000, 9);
    let got = tokio::time::timeout(Duration::from_secs(60), echo(&c, &body))
        .await
        .unwrap();
    assert_eq!(sha(&got), sha(&body));
    let stats = c.stats();
    c.close(0, b"done");
    client.wait_idle().await;
    server.wait_idle().await;
    client.flush_qlog();
    server.flush_qlog();

    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names.len(), 2, "one file per side: {names:?}");
    let odcid = names[0].split('_').next().unwrap().to_string();
    assert_eq!(
        names,
        [
            format!("{odcid}_client.sqlog"),
            format!("{odcid}_server.sqlog")
        ]
    );
    for name in &names {
        let records = read_records(&dir.join(name));
        let side = if name.ends_with("client.sqlog") {
            "client"
        } else {
            "server"
        };
        assert_eq!(records[0]["qlog_format"], "JSON-SEQ");
        assert_eq!(records[0]["trace"]["vantage_point"]["type"], side);
        assert_eq!(
            records[0]["trace"]["common_fields"]["ODCID"],
            odcid.as_str()
        );
        let count = |n: &str| records.iter().filter(|r| r["name"] == n).count();
        assert_eq!(count("transport:parameters_set"), 2, "{side}");
        assert!(count("transport:packet_received") > 0, "{side}");
        assert_eq!(count("connectivity:connection_closed"), 1, "{side}");
        if side == "client" {
            // Taken before the close, which sends one more packet at least.
            assert!(count("transport:packet_sent") as u64 > stats.packets_out);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn ecn_counted_and_validated_on_loopback() {
    let (server, client, tls) = pair(EndpointConfig::default());
    assert!(!client.qlog_enabled() || std::env::var_os(quark::QLOGDIR_ENV).is_some());
    let (c, s) = common::connect(&server, &client, tls).await;
    let server_side = s.clone();
    common::spawn_echo(s);
    let body = data(1 << 20, 3);
    let got = tokio::time::timeout(Duration::from_secs(60), echo(&c, &body))
        .await
        .unwrap();
    assert_eq!(sha(&got), sha(&body));
    // A little more traffic after validation, so the marks resume on both sides.
    let got = echo(&c, &body[..100_000]).await;
    assert_eq!(sha(&got), sha(&body[..100_000]));
    for (side, conn) in [("client", &c), ("server", &server_side)] {
        let stats = conn.stats();
        eprintln!("{side}: {stats:?} {:?}", conn.ecn_state());
        assert!(stats.ecn_ect0_in > 0, "{side} received ECT(0): {stats:?}");
        assert!(stats.ecn_marked_out > 0, "{side} marked: {stats:?}");
        assert_eq!(stats.ecn_ce_in, 0, "{side}: loopback marks no congestion");
        assert_eq!(conn.ecn_state(), Some(EcnState::Capable), "{side}");
    }
    c.close(0, b"done");
}
