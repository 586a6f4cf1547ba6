//! Interoperation with two more HTTP/3 stacks, run as child processes:
//! aioquic (`interop/aioquic/h3_peer.py` in the `.venv` Python) and quic-go's
//! http3 package (`${CARGO_TARGET_DIR:-target}/interop/quicgo-h3`), both
//! installed by `interop/setup.sh`. Each one's client against quark-h3's
//! server, and quark-h3's client against each one's server: `GET /bytes/<n>`
//! for several sizes and a `POST /echo`, every body checked by SHA-256.
//!
//! A missing peer fails its tests unless `QUARK_INTEROP_OPTIONAL=1`, which
//! skips them (prints `SKIP: ...`). Overrides: `QUARK_INTEROP_PYTHON` (a
//! Python with aioquic), `QUICGO_H3_BIN`, `CARGO_TARGET_DIR`. A failed test
//! keeps its certificates and the peers' stderr under the system temp dir
//! (`quark-h3-interop-*`), and says where on stderr.

mod common;

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use common::peers::*;
use common::*;
use quark::Endpoint;
use quark::tls::{self, Identity};
use tokio::time::timeout;

/// A quark-h3 server of the two routes on 127.0.0.1 (any port) with `id`.
fn quark_h3_server(id: &Identity) -> (Endpoint, QpackStats) {
    let config = tls::server_config(id, &[ALPN]).unwrap();
    let server = Endpoint::server(config, (Ipv4Addr::LOCALHOST, 0).into()).unwrap();
    let stats = spawn_quark_h3_server_stats(&server);
    (server, stats)
}

/// `peer`'s client against a quark-h3 server.
async fn peer_client_against_quark_server(peer: Peer) {
    if peer.command_or_skip().await.is_none() {
        return;
    }
    let scratch = Scratch::new(&format!("{peer:?}-client"));
    let certs = Certs::generate(&scratch.0);
    let (server, stats) = quark_h3_server(&certs.id);
    let port = server.local_addr().unwrap().port();
    let Some(lines) = run_client(peer, &scratch, &certs, port).await else {
        return;
    };
    assert_eq!(lines, expected_lines(), "{peer:?} client's results");
    // Our decoder's table: aioquic's encoder (pylsqpack) fills it, quic-go's
    // has no dynamic table. Recorded once the connection has ended.
    let deadline = tokio::time::Instant::now() + LIMIT;
    while stats.lock().unwrap().is_empty() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (_, _, theirs) = stats.lock().unwrap()[0];
    match peer {
        Peer::Aioquic => assert!(theirs > 0, "aioquic inserted nothing"),
        Peer::QuicGo => assert_eq!(theirs, 0),
    }
    server.close(0, b"done");
}

/// quark-h3's client against `peer`'s server.
async fn quark_client_against_peer_server(peer: Peer) {
    if peer.command_or_skip().await.is_none() {
        return;
    }
    let scratch = Scratch::new(&format!("{peer:?}-server"));
    let certs = Certs::generate(&scratch.0);
    let Some((server, port)) = start_server(peer, &scratch, &certs).await else {
        return;
    };
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let exchanges = quark_client_exchanges(addr, &certs.id);
    let Ok((ours, acked, theirs)) = timeout(LIMIT, exchanges).await else {
        panic!(
            "quark-h3 client against {peer:?}: hung\n{}",
            server.log_tail()
        );
    };
    // Both ways with aioquic: our :authority went into its table and was
    // acknowledged, and its encoder inserted into ours. quic-go has none.
    match peer {
        Peer::Aioquic => {
            assert!(
                ours > 0 && theirs > 0,
                "inserts: ours {ours}, theirs {theirs}"
            );
            assert_eq!(acked, ours, "aioquic acknowledged our inserts");
        }
        Peer::QuicGo => assert_eq!((ours, theirs), (0, 0)),
    }
}

/// The GETs and the POST, on one connection, each checked by SHA-256.
async fn quark_client_exchanges(addr: SocketAddr, id: &Identity) -> (u64, u64, u64) {
    let client = quark_h3_client(addr, id).await;
    for n in SIZES {
        get_bytes(&client, n).await;
    }
    echo(&client, &data(ECHO_LEN, ECHO_SEED), ECHO_LEN, true).await;
    client.connection().close(H3_NO_ERROR, b"done");
    client.qpack_inserts()
}

#[tokio::test]
async fn aioquic_client_against_quark_server() {
    peer_client_against_quark_server(Peer::Aioquic).await;
}

#[tokio::test]
async fn quark_client_against_aioquic_server() {
    quark_client_against_peer_server(Peer::Aioquic).await;
}

#[tokio::test]
async fn quicgo_client_against_quark_server() {
    peer_client_against_quark_server(Peer::QuicGo).await;
}

#[tokio::test]
async fn quark_client_against_quicgo_server() {
    quark_client_against_peer_server(Peer::QuicGo).await;
}
