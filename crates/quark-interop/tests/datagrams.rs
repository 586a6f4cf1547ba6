//! RFC 9221 datagrams between quark and quinn (0.11), both in this process
//! over loopback UDP: a quark client against a quinn echo server and a quinn
//! client against a quark echo server, every echoed datagram compared byte
//! for byte; and each side sees whether the other accepts datagrams.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use quark_interop::harness::certs::Certs;
use quark_interop::quinn_hq::tls::{self as quinn_tls, ALPN};

const ROUNDS: u32 = 10;
const PER_ROUND: u32 = 10;
const WAIT: Duration = Duration::from_secs(5);

fn certs(name: &str) -> Certs {
    let dir: PathBuf = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("dgram-{name}"));
    std::fs::create_dir_all(&dir).unwrap();
    Certs::generate(&dir).unwrap()
}

fn any() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// Datagram `i`: its index, then bytes derived from it; 4..=1000 bytes, below
/// either stack's limit at the 1200-byte starting MTU.
fn datagram(i: u32) -> Bytes {
    let len = 4 + (i as usize * 53) % 997;
    let mut d = i.to_be_bytes().to_vec();
    d.extend((4..len).map(|k| (k as u32 ^ i.wrapping_mul(131)) as u8));
    Bytes::from(d)
}

fn quark_transport(datagrams: bool) -> Arc<quark::TransportConfig> {
    Arc::new(quark::TransportConfig {
        max_datagram_frame_size: datagrams.then_some(u16::MAX),
        ..Default::default()
    })
}

/// Sends rounds of datagrams with `send` and checks each round's echoes,
/// read with `read`, before the next.
async fn echo_rounds<S, R, F>(send: S, mut read: R)
where
    S: Fn(Bytes),
    R: FnMut() -> F,
    F: std::future::Future<Output = Bytes>,
{
    for round in 0..ROUNDS {
        let sent: Vec<Bytes> = (0..PER_ROUND)
            .map(|k| datagram(round * PER_ROUND + k))
            .collect();
        for d in &sent {
            send(d.clone());
        }
        for d in &sent {
            let got = tokio::time::timeout(WAIT, read())
                .await
                .expect("echo in time");
            assert_eq!(&got, d);
        }
    }
}

#[tokio::test]
async fn quark_client_quinn_server_echo() {
    let certs = certs("quinn-server");
    let config = quinn_tls::server_config(&certs.cert, &certs.key, &[], false).unwrap();
    let server = quinn::Endpoint::server(config, any()).unwrap();
    let addr = server.local_addr().unwrap();
    let echo = tokio::spawn(async move {
        let conn = server.accept().await.unwrap().await.unwrap();
        while let Ok(d) = conn.read_datagram().await {
            conn.send_datagram(d).unwrap();
        }
        server
    });

    let id = quark::tls::Identity::from_pem_files(&certs.cert, &certs.key).unwrap();
    let verify = quark::tls::Verify::Roots(vec![id.cert.clone()]);
    let mut config = quark::tls::client_config(verify, &[ALPN]).unwrap();
    config.transport = quark_transport(true);
    let client = quark::Endpoint::client(any()).unwrap();
    let conn = client
        .connect(config, addr, "localhost")
        .unwrap()
        .await
        .unwrap();
    let max = conn.max_datagram_size().expect("quinn accepts datagrams");
    assert!(max >= 1000, "{max}");
    echo_rounds(
        |d| conn.send_datagram(d).unwrap(),
        || async { conn.read_datagram().await.unwrap() },
    )
    .await;
    let stats = conn.stats();
    let n = u64::from(ROUNDS * PER_ROUND);
    assert_eq!(
        (stats.datagram_frames_out, stats.datagram_frames_in),
        (n, n)
    );
    conn.close(0, b"");
    let server = tokio::time::timeout(WAIT, echo).await.unwrap().unwrap();
    server.wait_idle().await;
}

/// A quark echo server accepting datagrams when `datagrams`, and a quinn
/// client connected to it.
async fn quinn_client_to_quark(
    datagrams: bool,
) -> (quinn::Connection, quinn::Endpoint, quark::Endpoint) {
    let certs = certs(if datagrams { "quark-on" } else { "quark-off" });
    let id = quark::tls::Identity::from_pem_files(&certs.cert, &certs.key).unwrap();
    let mut config = quark::tls::server_config(&id, &[ALPN]).unwrap();
    config.transport = quark_transport(datagrams);
    let server = quark::Endpoint::server(config, any()).unwrap();
    let addr = server.local_addr().unwrap();
    let accept = server.clone();
    tokio::spawn(async move {
        let conn = accept.accept().await.unwrap();
        while let Ok(d) = conn.read_datagram().await {
            conn.send_datagram_wait(d).await.unwrap();
        }
    });
    let config = quinn_tls::client_config(quinn_tls::Verify::CaFile(&certs.cert), &[])
        .unwrap()
        .0;
    let mut client = quinn::Endpoint::client(any()).unwrap();
    client.set_default_client_config(config);
    let conn = client.connect(addr, "localhost").unwrap().await.unwrap();
    (conn, client, server)
}

#[tokio::test]
async fn quinn_client_quark_server_echo() {
    let (conn, client, _server) = quinn_client_to_quark(true).await;
    let max = conn.max_datagram_size().expect("quark accepts datagrams");
    assert!(max >= 1000, "{max}");
    echo_rounds(
        |d| conn.send_datagram(d).unwrap(),
        || async { conn.read_datagram().await.unwrap() },
    )
    .await;
    conn.close(0u8.into(), b"");
    client.wait_idle().await;
}

#[tokio::test]
async fn quinn_sees_a_quark_server_without_datagrams() {
    let (conn, client, _server) = quinn_client_to_quark(false).await;
    assert_eq!(conn.max_datagram_size(), None);
    assert!(matches!(
        conn.send_datagram(Bytes::from_static(b"x")),
        Err(quinn::SendDatagramError::UnsupportedByPeer)
    ));
    conn.close(0u8.into(), b"");
    client.wait_idle().await;
}
