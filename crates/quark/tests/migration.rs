//! Connection migration over real sockets: a client whose socket is replaced
//! mid-download (`Endpoint::rebind`) keeps its connection; the server follows
//! it to the new port and then to a new address. Checked by SHA-256.

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use common::{data, sha};
use quark::Endpoint;
use quark::tls::{self, Identity, Verify};

const ALPN: &[u8] = b"test";
const SIZE: usize = 12 << 20;

fn udp(addr: &str) -> quark_udp::UdpSocket {
    quark_udp::UdpSocket::bind(addr.parse().unwrap()).unwrap()
}

#[tokio::test]
async fn download_survives_the_client_socket_being_replaced() {
    let id = Identity::self_signed(&["localhost"]).unwrap();
    let localhost: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let server = Endpoint::server(tls::server_config(&id, &[ALPN]).unwrap(), localhost).unwrap();
    let client = Endpoint::client(localhost).unwrap();
    let config = tls::client_config(Verify::Roots(vec![id.cert.clone()]), &[ALPN]).unwrap();
    let body = data(SIZE, 7);
    let expected = sha(&body);
    let serving = server.clone();
    let server_task = tokio::spawn(async move {
        let conn = serving.accept().await.unwrap();
        let (mut send, mut recv) = conn.accept_bi().await.unwrap();
        recv.read_to_end(64).await.unwrap();
        send.write_all(&body).await.unwrap();
        send.finish().unwrap();
        let _ = send.stopped().await;
        conn
    });
    let conn = client
        .connect(config, server.local_addr().unwrap(), "localhost")
        .unwrap()
        .await
        .unwrap();
    let (mut send, mut recv) = conn.open_bi().await.unwrap();
    send.write_all(b"get").await.unwrap();
    send.finish().unwrap();
    let first = client.local_addr().unwrap();
    let mut got = Vec::with_capacity(SIZE);
    let mut moves = 0;
    let download = async {
        while let Some(chunk) = recv.read_chunk(64 * 1024).await.unwrap() {
            got.extend_from_slice(&chunk);
            // A new port (NAT rebinding) a third of the way, a new address
            // two thirds of the way.
            if moves == 0 && got.len() > SIZE / 3 {
                client.rebind(udp("127.0.0.1:0")).unwrap();
                moves = 1;
            } else if moves == 1 && got.len() > 2 * SIZE / 3 {
                client.rebind(udp("127.0.0.2:0")).unwrap();
                moves = 2;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(60), download)
        .await
        .expect("download stalled after the rebind");
    assert_eq!(moves, 2);
    assert_eq!(got.len(), SIZE);
    assert_eq!(sha(&got), expected, "bytes differ after the rebind");
    let now = client.local_addr().unwrap();
    assert_ne!(now, first);
    let server_conn = tokio::time::timeout(Duration::from_secs(10), server_task)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(server_conn.remote_address(), now, "server did not follow");
    let st = server_conn.stats();
    assert!(st.migrations >= 2, "{st:?}");
    assert!(st.path_challenges >= 2, "{st:?}");
    // Only the move to another address resets congestion control.
    assert_eq!(st.congestion_resets, 1, "{st:?}");
    let cs = conn.stats();
    assert_eq!(cs.migrations, 2, "{cs:?}");
    conn.close(0, b"done");
}

/// A server on 0.0.0.0 announces 127.0.0.2 (same port) as its preferred
/// address: the client moves there after the handshake, the server answers
/// from there, and a download completes over it.
#[tokio::test]
async fn client_follows_the_servers_preferred_address() {
    let id = Identity::self_signed(&["localhost"]).unwrap();
    let socket = udp("0.0.0.0:0");
    let port = socket.local_addr().unwrap().port();
    let preferred: SocketAddr = format!("127.0.0.2:{port}").parse().unwrap();
    let mut server_config = tls::server_config(&id, &[ALPN]).unwrap();
    server_config.preferred_address = Some(preferred);
    let server = Endpoint::with_socket(Default::default(), Some(server_config), socket).unwrap();
    let client = Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    let config = tls::client_config(Verify::Roots(vec![id.cert.clone()]), &[ALPN]).unwrap();
    let body = data(4 << 20, 9);
    let expected = sha(&body);
    let serving = server.clone();
    tokio::spawn(async move {
        let conn = serving.accept().await.unwrap();
        let (mut send, mut recv) = conn.accept_bi().await.unwrap();
        recv.read_to_end(64).await.unwrap();
        send.write_all(&body).await.unwrap();
        send.finish().unwrap();
        let _ = send.stopped().await;
    });
    let handshake_addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let conn = client
        .connect(config, handshake_addr, "localhost")
        .unwrap()
        .await
        .unwrap();
    let (mut send, mut recv) = conn.open_bi().await.unwrap();
    send.write_all(b"get").await.unwrap();
    send.finish().unwrap();
    let got = tokio::time::timeout(Duration::from_secs(60), recv.read_to_end(usize::MAX))
        .await
        .expect("download stalled")
        .unwrap();
    assert_eq!(sha(&got), expected);
    assert_eq!(conn.remote_address(), preferred, "{:?}", conn.stats());
    let st = conn.stats();
    assert_eq!(st.validation_failures, 0, "{st:?}");
    assert_eq!(st.migrations, 1, "{st:?}");
    conn.close(0, b"done");
}
