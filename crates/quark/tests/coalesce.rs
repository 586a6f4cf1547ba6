//! A request that arrives with the handshake's last flight is answered in the
//! datagram that carries the server's own last handshake frames: the driver lets
//! the tasks its events woke run (here an accept loop that spawns a task per
//! connection and one per stream) before it transmits. Counted with quark-udp's
//! process-wide send counters, so this test has its binary to itself.

mod common;

use common::{data, echo_server_and_client, sha};

const ALPN: &[u8] = b"test";

/// The fewest sends among up to three fresh connections: on a loaded machine
/// a timer can add a datagram now and then (seen without GSO beside two busy
/// loops: 6 sends, the extra ones ~150-byte ACKs), while without the
/// coalescing every connection takes at least five.
#[tokio::test]
async fn a_fresh_connections_request_costs_four_sends() {
    quark_udp::stats::set_enabled(true);
    let mut seen = Vec::new();
    for _ in 0..3 {
        let sent = one_request_on_a_fresh_connection().await;
        let fewest = sent.send_syscalls == 4;
        seen.push(sent);
        if fewest {
            break;
        }
    }
    let fewest = seen.iter().map(|s| s.send_syscalls).min();
    assert_eq!(fewest, Some(4), "{seen:#?}");
}

/// A handshake and one request on a new pair of endpoints: what it sent, both
/// sides. Closes the connection and waits until the endpoints are quiet.
async fn one_request_on_a_fresh_connection() -> quark_udp::stats::Stats {
    let (server, client, config, addr) = echo_server_and_client(ALPN);
    let before = quark_udp::stats::snapshot();

    let conn = client
        .connect(config, addr, "localhost")
        .unwrap()
        .await
        .unwrap();
    let body = data(100, 7);
    let (mut send, mut recv) = conn.open_bi().await.unwrap();
    send.write_all(&body).await.unwrap();
    send.finish().unwrap();
    let got = recv.read_to_end(usize::MAX).await.unwrap();
    assert_eq!(sha(&got), sha(&body));

    // Client Initial; server Initial + Handshake; client Handshake (Finished) +
    // 1-RTT (request); server 1-RTT (HANDSHAKE_DONE and the answer).
    let sent = quark_udp::stats::snapshot().since(&before);
    conn.close(0, b"done");
    client.wait_idle().await;
    server.close(0, b"");
    server.wait_idle().await;
    sent
}
