//! RFC 9218 priorities against aioquic's and quic-go's HTTP/3 servers: a
//! quark-h3 client sends the Priority header field and PRIORITY_UPDATE
//! frames (which a server may ignore, RFC 9218 §2), and the responses still
//! arrive whole on a connection that stays open. Peers as in
//! `interop_peers.rs` (`interop/setup.sh`; `QUARK_INTEROP_OPTIONAL=1` skips).

mod common;

use std::net::{Ipv4Addr, SocketAddr};

use common::peers::*;
use common::*;
use quark_h3::Priority;
use tokio::time::timeout;

async fn priorities_against(peer: Peer) {
    if peer.command_or_skip().await.is_none() {
        return;
    }
    let scratch = Scratch::new(&format!("{peer:?}-priority"));
    let certs = Certs::generate(&scratch.0);
    let Some((server, port)) = start_server(peer, &scratch, &certs).await else {
        return;
    };
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let run = async {
        let client = quark_h3_client(addr, &certs.id).await;
        let n = 2_000_000;
        let req = http::Request::get(format!("https://localhost/bytes/{n}"))
            .header("priority", "u=6, i")
            .body(())
            .unwrap();
        let (resp, mut big) = exchange(&client, &req).await;
        assert_eq!(resp.status(), 200);
        // Reprioritized while its body is under way.
        let update = Priority {
            urgency: 1,
            incremental: false,
        };
        big.set_priority(update).await.unwrap();
        let small = http::Request::get("https://localhost/bytes/5000")
            .header("priority", "u=0")
            .body(())
            .unwrap();
        let (resp, mut s) = exchange(&client, &small).await;
        assert_eq!(resp.status(), 200);
        assert_eq!(sha(&body_of(&mut s).await), sha(&data(5000, 5000)));
        assert_eq!(sha(&body_of(&mut big).await), sha(&data(n, n as u32)));
        // The connection is still good for more.
        get_bytes(&client, 1).await;
        client.connection().close(H3_NO_ERROR, b"done");
    };
    if timeout(LIMIT, run).await.is_err() {
        panic!("{peer:?} with priorities: hung\n{}", server.log_tail());
    }
}

#[tokio::test]
async fn priorities_against_aioquic_server() {
    priorities_against(Peer::Aioquic).await;
}

#[tokio::test]
async fn priorities_against_quicgo_server() {
    priorities_against(Peer::QuicGo).await;
}
