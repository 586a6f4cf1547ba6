//! h3 over h3-quark against two more HTTP/3 stacks run as child processes,
//! aioquic and quic-go's http3 (installed by `interop/setup.sh`; see
//! quark-h3's `interop_peers.rs` for the overrides `QUARK_INTEROP_PYTHON`,
//! `QUICGO_H3_BIN` and `QUARK_INTEROP_OPTIONAL=1`). Each peer's client
//! against an h3 server on h3-quark, and an h3 client on h3-quark against
//! each peer's server: GETs of several sizes and a POST /echo, every body
//! checked by SHA-256.

mod common;

use std::net::{Ipv4Addr, SocketAddr};

use common::peers::*;
use common::*;
use quark::Endpoint;
use quark::tls;
use tokio::time::timeout;

/// `peer`'s client against an h3 server on h3-quark.
async fn peer_client_against_h3_server_on_quark(peer: Peer) {
    if peer.command_or_skip().await.is_none() {
        return;
    }
    let scratch = Scratch::new(&format!("h3-quark-{peer:?}-client"));
    let certs = Certs::generate(&scratch.0);
    let config = tls::server_config(&certs.id, &[ALPN]).unwrap();
    let server = Endpoint::server(config, (Ipv4Addr::LOCALHOST, 0).into()).unwrap();
    spawn_h3_quark_server(&server);
    let port = server.local_addr().unwrap().port();
    let Some(lines) = run_client(peer, &scratch, &certs, port).await else {
        return;
    };
    assert_eq!(lines, expected_lines(), "{peer:?} client's results");
    server.close(0, b"done");
}

/// An h3 client on h3-quark against `peer`'s server.
async fn h3_client_on_quark_against_peer_server(peer: Peer) {
    if peer.command_or_skip().await.is_none() {
        return;
    }
    let scratch = Scratch::new(&format!("h3-quark-{peer:?}-server"));
    let certs = Certs::generate(&scratch.0);
    let Some((server, port)) = start_server(peer, &scratch, &certs).await else {
        return;
    };
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let exchanges = async {
        let mut send = h3_quark_client(addr, &certs.id).await;
        for n in SIZES {
            h3_get(&mut send, n).await;
        }
        h3_echo(&mut send, &data(ECHO_LEN, ECHO_SEED)).await;
    };
    if timeout(LIMIT, exchanges).await.is_err() {
        panic!(
            "h3-quark client against {peer:?}: hung\n{}",
            server.log_tail()
        );
    }
}

#[tokio::test]
async fn aioquic_client_against_h3_server_on_quark() {
    peer_client_against_h3_server_on_quark(Peer::Aioquic).await;
}

#[tokio::test]
async fn h3_client_on_quark_against_aioquic_server() {
    h3_client_on_quark_against_peer_server(Peer::Aioquic).await;
}

#[tokio::test]
async fn quicgo_client_against_h3_server_on_quark() {
    peer_client_against_h3_server_on_quark(Peer::QuicGo).await;
}

#[tokio::test]
async fn h3_client_on_quark_against_quicgo_server() {
    h3_client_on_quark_against_peer_server(Peer::QuicGo).await;
}
