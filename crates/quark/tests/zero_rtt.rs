//! 0-RTT over loopback: a second connection with the first one's ticket
//! writes its request before the handshake completes; the server echoes it.
//! Accepted by a server with 0-RTT on, sent again in 1-RTT by one with it
//! off; compared byte for byte either way.

use std::net::SocketAddr;

use quark::tls::{self, Identity, Verify};
use quark::{Connection, Endpoint};

const ALPN: &[u8] = b"test";

fn localhost() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// Echo every stream of every connection.
fn spawn_echo_server(server: &Endpoint) {
    let server = server.clone();
    tokio::spawn(async move {
        while let Some(conn) = server.accept().await {
            tokio::spawn(async move {
                while let Ok((mut send, mut recv)) = conn.accept_bi().await {
                    let body = recv.read_to_end(1 << 20).await.unwrap();
                    send.write_all(&body).await.unwrap();
                    send.finish().unwrap();
                }
            });
        }
    });
}

async fn echo(conn: &Connection, body: &[u8]) -> Vec<u8> {
    let (mut send, mut recv) = conn.open_bi().await.unwrap();
    send.write_all(body).await.unwrap();
    send.finish().unwrap();
    recv.read_to_end(1 << 20).await.unwrap()
}

/// A first connection for the ticket, then a 0-RTT one; returns whether
/// the server accepted the early data.
async fn resume(accept: bool) -> bool {
    let id = Identity::self_signed(&["localhost"]).unwrap();
    let mut server_config = tls::server_config(&id, &[ALPN]).unwrap().with_0rtt(256);
    server_config.zero_rtt = accept;
    let server = Endpoint::server(server_config, localhost()).unwrap();
    spawn_echo_server(&server);
    let addr = server.local_addr().unwrap();
    let client = Endpoint::client(localhost()).unwrap();
    let config = tls::client_config(Verify::Roots(vec![id.cert.clone()]), &[ALPN])
        .unwrap()
        .with_0rtt();

    let first = client
        .connect(config.clone(), addr, "localhost")
        .unwrap()
        .await
        .unwrap();
    assert_eq!(echo(&first, b"first").await, b"first");
    assert!(!first.is_0rtt_accepted());

    let connecting = client.connect(config, addr, "localhost").unwrap();
    let conn = match connecting.into_0rtt() {
        Ok(conn) => conn,
        Err(_) => panic!("no 0-RTT with the first connection's ticket"),
    };
    let body: Vec<u8> = (0..20_000u32).map(|i| (i * 7 + 3) as u8).collect();
    let (mut send, mut recv) = conn.open_bi().await.unwrap();
    send.write_all(&body).await.unwrap();
    send.finish().unwrap();
    let accepted = conn.handshake().await.unwrap();
    assert_eq!(recv.read_to_end(1 << 20).await.unwrap(), body);
    assert_eq!(conn.is_0rtt_accepted(), accepted);
    accepted
}

#[tokio::test]
async fn zero_rtt_accepted_over_loopback() {
    assert!(resume(true).await, "0-RTT rejected by a server with it on");
}

#[tokio::test]
async fn zero_rtt_rejected_then_replayed_over_loopback() {
    assert!(
        !resume(false).await,
        "0-RTT accepted by a server with it off"
    );
}
