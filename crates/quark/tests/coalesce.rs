//! A request that arrives with the handshake's last flight is answered in the
//! datagram that carries the server's own last handshake frames: the driver lets
//! the tasks its events woke run (here an accept loop that spawns a task per
//! connection and one per stream) before it transmits. Counted with quark-udp's
//! process-wide send counters, so this test has its binary to itself.

mod common;

use common::{data, echo_server_and_client, sha};

const ALPN: &[u8] = b"test";

#[tokio::test]
async fn a_fresh_connections_request_costs_four_sends() {
    let (_server, client, config, addr) = echo_server_and_client(ALPN);
    quark_udp::stats::set_enabled(true);
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

    let sent = quark_udp::stats::snapshot().since(&before);
    // Client Initial; server Initial + Handshake; client Handshake (Finished) +
    // 1-RTT (request); server 1-RTT (HANDSHAKE_DONE and the answer).
    assert_eq!(sent.send_syscalls, 4, "{sent:?}");
    conn.close(0, b"done");
}
