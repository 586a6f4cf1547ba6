//! Unreliable datagrams (RFC 9221) through the async API on loopback: an
//! echo checked datagram by datagram, a sender held back by a small send
//! queue without losing anything, and a peer that does not accept them.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use quark::tls::{self, Identity, Verify};
use quark::{Connection, Endpoint, SendDatagramError, TransportConfig};

const ALPN: &[u8] = b"test";

fn transport(max_frame: Option<u16>, send_buffer: usize) -> Arc<TransportConfig> {
    Arc::new(TransportConfig {
        max_datagram_frame_size: max_frame,
        datagram_send_buffer: send_buffer,
        ..TransportConfig::default()
    })
}

/// A connected pair: (client connection, server connection, endpoints to keep).
async fn pair(
    client: Arc<TransportConfig>,
    server: Arc<TransportConfig>,
) -> (Connection, Connection, (Endpoint, Endpoint)) {
    let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let id = Identity::self_signed(&["localhost"]).unwrap();
    let mut sc = tls::server_config(&id, &[ALPN]).unwrap();
    sc.transport = server;
    let server = Endpoint::server(sc, any).unwrap();
    let client_ep = Endpoint::client(any).unwrap();
    let mut cc = tls::client_config(Verify::Roots(vec![id.cert.clone()]), &[ALPN]).unwrap();
    cc.transport = client;
    let addr = server.local_addr().unwrap();
    let (c, s) = tokio::join!(
        async { client_ep.connect(cc, addr, "localhost").unwrap().await },
        server.accept()
    );
    (c.unwrap(), s.unwrap(), (server, client_ep))
}

/// Datagram `i`: its index, then bytes derived from it.
fn datagram(i: u32, len: usize) -> Bytes {
    let mut d = i.to_be_bytes().to_vec();
    d.extend((4..len.max(4)).map(|k| (k as u32 ^ i.wrapping_mul(31)) as u8));
    Bytes::from(d)
}

#[tokio::test]
async fn echo_datagrams() {
    let on = transport(Some(u16::MAX), 1 << 20);
    let (client, server, _eps) = pair(on.clone(), on).await;
    let echo = tokio::spawn(async move {
        while let Ok(d) = server.read_datagram().await {
            server.send_datagram_wait(d).await.unwrap();
        }
    });
    let max = client.max_datagram_size().expect("negotiated");
    assert!(max >= 1000, "{max}");
    assert_eq!(
        client.send_datagram(datagram(0, max + 1)),
        Err(SendDatagramError::TooLarge)
    );
    // In rounds of ten, each round's echoes read back before the next.
    for round in 0..20u32 {
        let sent: Vec<Bytes> = (0..10)
            .map(|k| {
                let i = round * 10 + k;
                datagram(i, (i as usize * 37) % max)
            })
            .collect();
        for d in &sent {
            client.send_datagram(d.clone()).unwrap();
        }
        for d in &sent {
            let got = tokio::time::timeout(Duration::from_secs(5), client.read_datagram())
                .await
                .expect("echo in time")
                .unwrap();
            assert_eq!(&got, d);
        }
    }
    let stats = client.stats();
    assert_eq!(
        (stats.datagram_frames_out, stats.datagram_frames_in),
        (200, 200)
    );
    client.close(0, b"");
    echo.await.unwrap();
}

#[tokio::test]
async fn send_waits_for_room_and_drops_nothing() {
    // Room for 8 datagrams of 1000 bytes: the sender waits for the path.
    let small = transport(
        None,
        8 * (1000 + quark_proto::connection::DATAGRAM_OVERHEAD),
    );
    let (client, server, _eps) = pair(small, transport(Some(u16::MAX), 1 << 20)).await;
    let count = 2000u32;
    let reader = tokio::spawn(async move {
        let mut next = 0;
        while next < count {
            let d = tokio::time::timeout(Duration::from_secs(10), server.read_datagram())
                .await
                .expect("datagram in time")
                .unwrap();
            // In order and intact: nothing dropped on loopback.
            assert_eq!(d, datagram(next, 1000));
            next += 1;
        }
        server
    });
    for i in 0..count {
        client.send_datagram_wait(datagram(i, 1000)).await.unwrap();
    }
    let server = reader.await.unwrap();
    assert_eq!(client.stats().datagram_frames_dropped_out, 0);
    assert_eq!(server.stats().datagram_frames_dropped_in, 0);
}

#[tokio::test]
async fn peer_without_datagrams() {
    let (client, server, _eps) =
        pair(transport(None, 1 << 20), transport(Some(1200), 1 << 20)).await;
    // The server accepts datagrams, the client does not.
    assert_eq!(server.max_datagram_size(), None);
    assert_eq!(
        server.send_datagram(Bytes::from_static(b"x")),
        Err(SendDatagramError::UnsupportedByPeer)
    );
    assert!(client.max_datagram_size().is_some());
    client.send_datagram(Bytes::from_static(b"up")).unwrap();
    let got = tokio::time::timeout(Duration::from_secs(5), server.read_datagram()).await;
    assert_eq!(got.unwrap().unwrap(), Bytes::from_static(b"up"));
    // Closing ends a waiting reader with the connection's error.
    let waiting = tokio::spawn(async move { server.read_datagram().await });
    client.close(7, b"bye");
    let end = tokio::time::timeout(Duration::from_secs(5), waiting).await;
    assert!(end.unwrap().unwrap().is_err());
}
