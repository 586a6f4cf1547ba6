//! Extended CONNECT (RFC 9220) and HTTP Datagrams (RFC 9297) between
//! quark-h3 client and server: a CONNECT-UDP-style stream (`:protocol`
//! connect-udp) whose datagrams the server echoes, two such streams kept
//! apart by their quarter stream IDs, and the errors around them.

mod common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use common::*;
use quark::tls::{self, Identity, Verify};
use quark::{Connection, ConnectionError, Endpoint, TransportConfig};
use quark_h3::error::*;
use quark_h3::{Config, Protocol, frame};

fn transport(datagrams: bool) -> Arc<TransportConfig> {
    Arc::new(TransportConfig {
        max_datagram_frame_size: datagrams.then_some(u16::MAX),
        ..TransportConfig::default()
    })
}

fn h3(connect: bool, datagrams: bool) -> Config {
    Config {
        extended_connect: connect,
        h3_datagram: datagrams,
        ..Config::default()
    }
}

/// A server endpoint whose connections allow QUIC datagrams when `datagrams`.
fn server(datagrams: bool) -> (Endpoint, Identity) {
    let id = Identity::self_signed(&["localhost"]).unwrap();
    let mut sc = tls::server_config(&id, &[ALPN]).unwrap();
    sc.transport = transport(datagrams);
    (
        Endpoint::server(sc, "127.0.0.1:0".parse().unwrap()).unwrap(),
        id,
    )
}

async fn connect(addr: SocketAddr, id: &Identity, datagrams: bool) -> (Connection, Endpoint) {
    let ep = Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    let mut cc = tls::client_config(Verify::Roots(vec![id.cert.clone()]), &[ALPN]).unwrap();
    cc.transport = transport(datagrams);
    let conn = ep.connect(cc, addr, "localhost").unwrap().await.unwrap();
    (conn, ep)
}

/// Serves CONNECT-UDP-style requests: 200, then every datagram back with
/// the stream ID in front; anything else 404.
fn spawn_echo_server(ep: &Endpoint, config: Config) {
    let ep = ep.clone();
    tokio::spawn(async move {
        while let Some(conn) = ep.accept().await {
            tokio::spawn(async move {
                let mut h3 = quark_h3::Server::with_config(conn, &config).await.unwrap();
                while let Ok(Some((req, mut s))) = h3.accept().await {
                    tokio::spawn(async move {
                        let udp = req.method() == http::Method::CONNECT
                            && req.extensions().get::<Protocol>()
                                == Some(&Protocol("connect-udp".into()))
                            && req.uri().path().starts_with("/.well-known/masque/udp/");
                        let status = if udp { 200 } else { 404 };
                        let resp = http::Response::builder().status(status).body(()).unwrap();
                        if s.send_response(&resp).await.is_err() || !udp {
                            return;
                        }
                        while let Some(d) = s.read_datagram().await {
                            let mut back = (s.id() as u32).to_be_bytes().to_vec();
                            back.extend_from_slice(&d);
                            let _ = s.send_datagram(&back);
                        }
                    });
                }
            });
        }
    });
}

fn connect_udp(target: &str) -> http::Request<()> {
    let mut req = http::Request::connect(format!(
        "https://localhost/.well-known/masque/udp/{target}/"
    ))
    .header("capsule-protocol", "?1")
    .body(())
    .unwrap();
    req.extensions_mut().insert(Protocol("connect-udp".into()));
    req
}

/// Sends `payload` on `s` until its echo comes back (datagrams may be lost),
/// and checks the echo byte for byte.
async fn round_trip(s: &mut quark_h3::RequestStream, payload: &[u8]) {
    let mut want = (s.id() as u32).to_be_bytes().to_vec();
    want.extend_from_slice(payload);
    for _ in 0..20 {
        s.send_datagram(payload).unwrap();
        match tokio::time::timeout(Duration::from_millis(500), s.read_datagram()).await {
            Ok(Some(got)) => {
                assert_eq!(
                    got,
                    Bytes::from(want),
                    "the echo of {} bytes",
                    payload.len()
                );
                return;
            }
            Ok(None) => panic!("datagrams ended"),
            Err(_) => continue, // lost: again
        }
    }
    panic!("no echo");
}

#[tokio::test]
async fn datagrams_through_connect_udp_streams() {
    let (ep, id) = server(true);
    spawn_echo_server(&ep, h3(true, true));
    let (conn, _c) = connect(ep.local_addr().unwrap(), &id, true).await;
    let client = quark_h3::Client::with_config(conn, &h3(false, true))
        .await
        .unwrap();
    let settings = client.peer_settings().await.expect("SETTINGS");
    assert!(settings.enable_connect_protocol && settings.h3_datagram);
    assert!(client.extended_connect());

    let mut a = client
        .send_request(&connect_udp("192.0.2.1/443"))
        .await
        .unwrap();
    assert_eq!(a.recv_response().await.unwrap().status(), 200);
    let mut b = client
        .send_request(&connect_udp("192.0.2.2/53"))
        .await
        .unwrap();
    assert_eq!(b.recv_response().await.unwrap().status(), 200);
    assert_ne!(a.id(), b.id());
    for i in 0..20u32 {
        let len = 1 + (i as usize * 61) % 1100;
        let payload = data(len, i + 1);
        round_trip(&mut a, &payload).await;
        round_trip(&mut b, &data(len, i + 100)).await;
    }
    // A stream without its route any more: its datagrams are dropped, the
    // other stream carries on.
    drop(a);
    round_trip(&mut b, b"still here").await;
    client.connection().close(H3_NO_ERROR, b"");
}

#[tokio::test]
async fn extended_connect_needs_the_servers_setting() {
    let (ep, id) = server(true);
    spawn_echo_server(&ep, h3(false, true));
    let (conn, _c) = connect(ep.local_addr().unwrap(), &id, true).await;
    let client = quark_h3::Client::with_config(conn, &h3(false, true))
        .await
        .unwrap();
    let settings = client.peer_settings().await.expect("SETTINGS");
    assert!(!settings.enable_connect_protocol);
    match client.send_request(&connect_udp("192.0.2.1/443")).await {
        Err(quark_h3::Error::Usage(_)) => {}
        Err(e) => panic!("expected a usage error, got {e:?}"),
        Ok(_) => panic!("sent an Extended CONNECT the server did not enable"),
    }
}

/// A raw QUIC connection (datagrams on) to an HTTP/3 server with `config`.
async fn raw(config: Config, client_datagrams: bool) -> (Connection, Endpoint, Endpoint) {
    let (ep, id) = server(true);
    spawn_echo_server(&ep, config);
    let (conn, c) = connect(ep.local_addr().unwrap(), &id, client_datagrams).await;
    (conn, ep, c)
}

async fn close_code(conn: &Connection) -> u64 {
    match tokio::time::timeout(Duration::from_secs(10), conn.closed()).await {
        Ok(ConnectionError::ApplicationClosed { code, .. }) => code,
        other => panic!("expected an application close, got {other:?}"),
    }
}

/// Opens our control stream with SETTINGS carrying `settings` (id, value pairs).
async fn control(conn: &Connection, settings: &[u8]) -> quark::SendStream {
    let mut bytes = vec![0x00];
    frame::put_frame(&mut bytes, frame::SETTINGS, settings);
    let mut s = conn.open_uni().await.unwrap();
    s.write_all(&bytes).await.unwrap();
    s
}

#[tokio::test]
async fn a_datagram_without_a_quarter_stream_id_is_a_datagram_error() {
    let (conn, ..) = raw(h3(true, true), true).await;
    let _c = control(&conn, &[0x33, 0x01]).await;
    // A two-byte varint cut short.
    conn.send_datagram(Bytes::from_static(&[0x40])).unwrap();
    assert_eq!(close_code(&conn).await, H3_DATAGRAM_ERROR);
}

#[tokio::test]
async fn h3_datagram_without_quic_datagrams_is_a_settings_error() {
    let (conn, ..) = raw(h3(true, true), false).await;
    let _c = control(&conn, &[0x33, 0x01]).await;
    assert_eq!(close_code(&conn).await, H3_SETTINGS_ERROR);
}

/// Sends a request head of `fields` and expects the stream reset with
/// H3_MESSAGE_ERROR.
async fn expect_malformed(config: Config, fields: &[(&[u8], &[u8])]) {
    let (conn, ..) = raw(config, true).await;
    let _c = control(&conn, &[]).await;
    let mut block = Vec::new();
    quark_qpack::encode_section(fields, &mut block);
    let (mut send, mut recv) = conn.open_bi().await.unwrap();
    let mut bytes = Vec::new();
    frame::put_frame(&mut bytes, frame::HEADERS, &block);
    send.write_all(&bytes).await.unwrap();
    let read = tokio::time::timeout(Duration::from_secs(10), recv.read_to_end(1 << 16));
    match read.await {
        Ok(Err(quark::ReadError::Reset(code))) => assert_eq!(code, H3_MESSAGE_ERROR),
        other => panic!("expected a reset with H3_MESSAGE_ERROR, got {other:?}"),
    }
}

#[tokio::test]
async fn misplaced_protocol_is_malformed() {
    // To a server that did not enable Extended CONNECT.
    let connect_udp: &[(&[u8], &[u8])] = &[
        (b":method", b"CONNECT"),
        (b":protocol", b"connect-udp"),
        (b":scheme", b"https"),
        (b":authority", b"localhost"),
        (b":path", b"/.well-known/masque/udp/192.0.2.1/443/"),
    ];
    expect_malformed(h3(false, true), connect_udp).await;
    // On a method other than CONNECT.
    let get: &[(&[u8], &[u8])] = &[
        (b":method", b"GET"),
        (b":protocol", b"connect-udp"),
        (b":scheme", b"https"),
        (b":authority", b"localhost"),
        (b":path", b"/"),
    ];
    expect_malformed(h3(true, true), get).await;
    // Without :path.
    expect_malformed(h3(true, true), &connect_udp[..4]).await;
}
