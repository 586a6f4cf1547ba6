//! The async API over real sockets: handshakes, streams in both directions, many
//! streams, close codes, resets, and every cipher suite. Every transfer is
//! compared by SHA-256. Kernel UDP on loopback by default; `QUARK_TEST_XDP=1`
//! (root) runs the same tests over AF_XDP between two network namespaces
//! (`scripts/test.sh` does both).

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use common::{connect, data, echo, sha, spawn_echo};
use quark::tls::{self, Identity, Verify};
use quark::{Connection, ConnectionError, Endpoint};
use quark_udp::netns::VethPair;
use sha2::{Digest, Sha256};

const ALPN: &[u8] = b"test";

fn localhost() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// A server and a client endpoint (on kernel UDP, or AF_XDP: see
/// [`common::sockets`]) and a client config that trusts the server. The last
/// element keeps the AF_XDP test bed alive.
fn pair_with(
    suites: &[rustls::SupportedCipherSuite],
) -> (Endpoint, Endpoint, quark::ClientConfig, Option<VethPair>) {
    let id = Identity::self_signed(&["localhost"]).unwrap();
    let (server, client, net) =
        endpoints(Some(tls::server_config_with(&id, &[ALPN], suites).unwrap()));
    let config =
        tls::client_config_with(Verify::Roots(vec![id.cert.clone()]), &[ALPN], suites).unwrap();
    (server, client, config, net)
}

/// Server and client endpoints on [`common::sockets`].
fn endpoints(server_config: Option<quark::ServerConfig>) -> (Endpoint, Endpoint, Option<VethPair>) {
    let (server_socket, client_socket, net) = common::sockets();
    let server = Endpoint::with_socket(Default::default(), server_config, server_socket).unwrap();
    let client = Endpoint::with_socket(Default::default(), None, client_socket).unwrap();
    (server, client, net)
}

/// Server: accept every connection and echo it, for tests that connect many times.
fn spawn_echo_server(server: &Endpoint) -> tokio::task::JoinHandle<()> {
    let server = server.clone();
    tokio::spawn(async move {
        while let Some(conn) = server.accept().await {
            spawn_echo(conn);
        }
    })
}

/// Client side only: connects to `addr` and waits for the handshake.
async fn dial(client: &Endpoint, config: quark::ClientConfig, addr: SocketAddr) -> Connection {
    client
        .connect(config, addr, "localhost")
        .unwrap()
        .await
        .unwrap()
}

#[tokio::test]
async fn echo_small_and_large() {
    let (server, client, config, _net) = pair_with(&[]);
    let (c, s) = connect(&server, &client, config).await;
    assert_eq!(c.alpn().as_deref(), Some(ALPN));
    spawn_echo(s);
    for len in [0, 1, 1000, 1 << 20, 8 << 20] {
        let body = data(len, u32::from(len as u8));
        let got = tokio::time::timeout(Duration::from_secs(60), echo(&c, &body))
            .await
            .unwrap();
        assert_eq!(got.len(), body.len());
        assert_eq!(sha(&got), sha(&body), "echo of {len} bytes");
    }
    c.close(0, b"done");
}

#[tokio::test]
async fn hundred_parallel_streams() {
    let (server, client, config, _net) = pair_with(&[]);
    let (c, s) = connect(&server, &client, config).await;
    spawn_echo(s);
    let mut tasks = Vec::new();
    for i in 0..100u32 {
        let c = c.clone();
        tasks.push(tokio::spawn(async move {
            let body = data(1000 + i as usize * 531, i);
            assert_eq!(sha(&echo(&c, &body).await), sha(&body));
        }));
    }
    for t in tasks {
        tokio::time::timeout(Duration::from_secs(60), t)
            .await
            .unwrap()
            .unwrap();
    }
}

#[tokio::test]
async fn every_cipher_suite() {
    use rustls::crypto::ring::cipher_suite as cs;
    for suite in [
        cs::TLS13_AES_128_GCM_SHA256,
        cs::TLS13_AES_256_GCM_SHA384,
        cs::TLS13_CHACHA20_POLY1305_SHA256,
    ] {
        let (server, client, config, _net) = pair_with(&[suite]);
        let (c, s) = connect(&server, &client, config).await;
        assert_eq!(c.cipher_suite(), Some(format!("{:?}", suite.suite())));
        spawn_echo(s);
        let body = data(300_000, 3);
        assert_eq!(sha(&echo(&c, &body).await), sha(&body));
    }
}

#[tokio::test]
async fn close_code_reaches_peer() {
    let (server, client, config, _net) = pair_with(&[]);
    let (c, s) = connect(&server, &client, config).await;
    s.close(7, b"bye");
    let err = tokio::time::timeout(Duration::from_secs(5), c.closed())
        .await
        .unwrap();
    assert_eq!(
        err,
        ConnectionError::ApplicationClosed {
            code: 7,
            reason: "bye".into()
        }
    );
    assert!(c.open_bi().await.is_err());
}

/// A client stream with a ping sent: its receiving half, and the server's
/// sending half of it.
async fn pinged(c: &Connection, s: &Connection) -> (quark::RecvStream, quark::SendStream) {
    let (mut send, recv) = c.open_bi().await.unwrap();
    send.write_all(b"ping").await.unwrap();
    let (answer, _) = s.accept_bi().await.unwrap();
    (recv, answer)
}

/// Ends `send` and waits until the peer has acknowledged all of it.
async fn finish_acked(send: &mut quark::SendStream) {
    send.finish().unwrap();
    let acked = tokio::time::timeout(Duration::from_secs(5), send.stopped()).await;
    assert_eq!(acked.unwrap().unwrap(), None);
}

/// After the peer closes, what arrived before the close is still read in full;
/// a stream with nothing left to read, and any send-side call, report the
/// connection's end (the closed connection keeps no other stream state).
#[tokio::test]
async fn streams_after_the_peer_closes() {
    let (server, client, config, _net) = pair_with(&[]);
    let (c, s) = connect(&server, &client, config).await;
    let (mut a_recv, mut sa_send) = pinged(&c, &s).await;
    let answer = data(5000, 4);
    sa_send.write_all(&answer).await.unwrap();
    // Acknowledged: the answer sits in the client's buffer, unread.
    finish_acked(&mut sa_send).await;
    let (mut b_send, mut b_recv) = c.open_bi().await.unwrap();
    s.close(3, b"done");
    let err = tokio::time::timeout(Duration::from_secs(5), c.closed())
        .await
        .unwrap();
    let got = a_recv.read_to_end(1 << 20).await.unwrap();
    assert_eq!(sha(&got), sha(&answer));
    let lost = quark::ReadError::ConnectionLost(err.clone());
    assert_eq!(b_recv.read_to_end(1 << 20).await.unwrap_err(), lost);
    // Reported again, never as the stream's end.
    let mut buf = [0u8; 16];
    assert_eq!(b_recv.read(&mut buf).await.unwrap_err(), lost);
    assert_eq!(
        b_send.finish().unwrap_err(),
        quark::WriteError::ConnectionLost(err.clone())
    );
    assert_eq!(
        b_send.write_all(b"late").await.unwrap_err(),
        quark::WriteError::ConnectionLost(err)
    );
}

/// A stream whose bytes were all read before its FIN came: after the peer
/// closes, the next read reports the end (the FIN arrived before the close),
/// not the connection's end.
#[tokio::test]
async fn the_end_of_a_stream_read_before_the_peer_closes() {
    use tokio::io::AsyncReadExt;
    let (server, client, config, _net) = pair_with(&[]);
    let (c, s) = connect(&server, &client, config).await;
    let (mut a_recv, mut sa_send) = pinged(&c, &s).await;
    let answer = data(3000, 5);
    sa_send.write_all(&answer).await.unwrap();
    let mut got = vec![0u8; answer.len()];
    a_recv.read_exact(&mut got).await.unwrap();
    assert_eq!(sha(&got), sha(&answer));
    // The FIN alone, acknowledged, then the close.
    finish_acked(&mut sa_send).await;
    s.close(3, b"done");
    tokio::time::timeout(Duration::from_secs(5), c.closed())
        .await
        .unwrap();
    // Past the draining period (3 PTO): the endpoint has let the connection go.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut rest = [0u8; 16];
    assert_eq!(a_recv.read(&mut rest).await.unwrap(), None);
}

#[tokio::test]
async fn reset_and_stop_sending() {
    let (server, client, config, _net) = pair_with(&[]);
    let (c, s) = connect(&server, &client, config).await;
    let (mut send, _recv) = c.open_bi().await.unwrap();
    send.write_all(b"partial").await.unwrap();
    send.reset(99).unwrap();
    let (_s_send, mut s_recv) = s.accept_bi().await.unwrap();
    let err = s_recv.read_to_end(1 << 20).await.unwrap_err();
    assert_eq!(err, quark::ReadError::Reset(99));
    // A reset stream reads as reset again, never as ended.
    let mut buf = [0u8; 16];
    assert_eq!(
        s_recv.read(&mut buf).await.unwrap_err(),
        quark::ReadError::Reset(99)
    );

    let (mut send2, _recv2) = c.open_bi().await.unwrap();
    send2.write_all(b"x").await.unwrap();
    let (_ss, mut sr) = s.accept_bi().await.unwrap();
    sr.stop(5).unwrap();
    let outcome = tokio::time::timeout(Duration::from_secs(5), send2.stopped())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(outcome, Some(5));
}

#[tokio::test]
async fn wrong_certificate_fails_the_handshake() {
    let id = Identity::self_signed(&["localhost"]).unwrap();
    let other = Identity::self_signed(&["localhost"]).unwrap();
    let (server, client, _net) = endpoints(Some(tls::server_config(&id, &[ALPN]).unwrap()));
    let config = tls::client_config(Verify::Roots(vec![other.cert.clone()]), &[ALPN]).unwrap();
    let result = tokio::time::timeout(
        Duration::from_secs(5),
        client
            .connect(config, server.local_addr().unwrap(), "localhost")
            .unwrap(),
    )
    .await
    .unwrap();
    match result {
        Err(ConnectionError::TransportError(e)) => {
            assert!(e.code.0 >= 0x100 && e.code.0 < 0x200, "{e}")
        }
        other => panic!("expected a CRYPTO_ERROR, got {other:?}"),
    }
}

#[tokio::test]
async fn unreachable_server_times_out() {
    let client = Endpoint::client(localhost()).unwrap();
    let id = Identity::self_signed(&["localhost"]).unwrap();
    let mut config = tls::client_config(Verify::Roots(vec![id.cert]), &[ALPN]).unwrap();
    config.transport = quark::TransportConfig {
        max_idle_timeout: Duration::from_millis(600),
        ..Default::default()
    }
    .into();
    // A bound socket that never answers.
    let silent = std::net::UdpSocket::bind(localhost()).unwrap();
    let result = client
        .connect(config, silent.local_addr().unwrap(), "localhost")
        .unwrap()
        .await;
    assert_eq!(result.unwrap_err(), ConnectionError::TimedOut);
}

/// Regression: connections sharing one client TLS config resume sessions; the
/// handshake must still validate the new server's transport parameters.
#[tokio::test]
async fn resumed_sessions_on_one_endpoint() {
    let (server, client, config, _net) = pair_with(&[]);
    let addr = server.local_addr().unwrap();
    let accept = spawn_echo_server(&server);
    let mut conns = Vec::new();
    for i in 0..6 {
        let c = dial(&client, config.clone(), addr).await;
        let body = data(5000, i);
        assert_eq!(sha(&echo(&c, &body).await), sha(&body));
        conns.push(c);
    }
    // And several at once.
    let tasks: Vec<_> = (0..10)
        .map(|i| {
            let (client, config) = (client.clone(), config.clone());
            tokio::spawn(async move {
                let c = dial(&client, config, addr).await;
                let body = data(2000, i);
                assert_eq!(sha(&echo(&c, &body).await), sha(&body));
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    accept.abort();
}

/// Regression: more busy connections than one send batch holds (32) must all be
/// served; a driver round that stopped early used to forget the rest.
#[tokio::test]
async fn many_busy_connections() {
    let (server, client, config, _net) = pair_with(&[]);
    let addr = server.local_addr().unwrap();
    let accept = spawn_echo_server(&server);
    let tasks: Vec<_> = (0..100)
        .map(|i| {
            let (client, config) = (client.clone(), config.clone());
            tokio::spawn(async move {
                let c = dial(&client, config, addr).await;
                for j in 0..5u8 {
                    let body = data(3000, u32::from(i as u8 ^ j));
                    assert_eq!(sha(&echo(&c, &body).await), sha(&body));
                }
            })
        })
        .collect();
    for t in tasks {
        tokio::time::timeout(Duration::from_secs(60), t)
            .await
            .unwrap()
            .unwrap();
    }
    accept.abort();
}

#[tokio::test]
async fn unidirectional_streams_both_ways() {
    let (server, client, config, _net) = pair_with(&[]);
    let (c, s) = connect(&server, &client, config).await;
    // Client → server, and the server answers on its own unidirectional stream.
    let server_task = tokio::spawn(async move {
        let mut recv = s.accept_uni().await.unwrap();
        let body = recv.read_to_end(usize::MAX).await.unwrap();
        let mut send = s.open_uni().await.unwrap();
        send.write_all(&Sha256::digest(&body)).await.unwrap();
        send.finish().unwrap();
        let _ = send.stopped().await;
        body.len()
    });
    let body = data(2 << 20, 9);
    let mut send = c.open_uni().await.unwrap();
    send.write_all(&body).await.unwrap();
    send.finish().unwrap();
    let mut reply = c.accept_uni().await.unwrap();
    let digest = reply.read_to_end(64).await.unwrap();
    assert_eq!(digest, sha(&body).to_vec());
    assert_eq!(server_task.await.unwrap(), body.len());
}
