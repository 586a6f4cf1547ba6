//! ICMP errors end a handshake that cannot succeed: a client connecting to a
//! closed port fails at once with `ConnectionError::Unreachable` (not after
//! its handshake timeout), `connect_first` moves on from such an address
//! without waiting its attempt delay, and a server forgets a half-open
//! connection whose client is gone.

mod common;

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::Duration;

use common::{data, echo, echo_server_and_client, sha};
use quark::{ConnectFirstError, ConnectionError};

const ALPN: &[u8] = b"icmp";

/// An address where nothing listens (bound, then closed): the kernel
/// answers datagrams to it with ICMP port unreachable.
fn closed_port() -> SocketAddr {
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

/// Client settings whose handshake would wait a minute without ICMP.
fn patient(mut config: quark::ClientConfig) -> quark::ClientConfig {
    config.transport = Arc::new(quark::TransportConfig {
        handshake_timeout: Duration::from_secs(60),
        ..(*config.transport).clone()
    });
    config
}

/// A guard against hanging, far beyond the milliseconds the ICMP path takes
/// and far below the minute the timeouts would.
const GUARD: Duration = Duration::from_secs(20);

#[tokio::test]
async fn a_closed_port_fails_the_connect_at_once() {
    let (_server, client, config, _) = echo_server_and_client(ALPN);
    let connecting = client
        .connect(patient(config), closed_port(), "localhost")
        .unwrap();
    let got = tokio::time::timeout(GUARD, connecting)
        .await
        .expect("ended by the ICMP error, not the handshake timeout");
    match got {
        Err(ConnectionError::Unreachable { port_closed: true }) => {}
        other => panic!("{:?}", other.map(|c| c.remote_address())),
    }
    tokio::time::timeout(GUARD, client.wait_idle())
        .await
        .expect("the attempt is gone");
}

#[tokio::test]
async fn connect_first_moves_past_a_closed_port_at_once() {
    let (_server, client, config, live) = echo_server_and_client(ALPN);
    // Without the ICMP error the second attempt would start after a minute.
    let got = tokio::time::timeout(
        GUARD,
        client.connect_first(
            patient(config.clone()),
            &[closed_port(), live],
            "localhost",
            Duration::from_secs(60),
        ),
    )
    .await
    .expect("the refused address does not hold the race");
    let conn = got.unwrap();
    assert_eq!(conn.remote_address(), live);
    let body = data(50_000, 7);
    assert_eq!(sha(&echo(&conn, &body).await), sha(&body));

    // Every address refused: the error names the last.
    let (a, b) = (closed_port(), closed_port());
    let got = tokio::time::timeout(
        GUARD,
        client.connect_first(
            patient(config),
            &[a, b],
            "localhost",
            Duration::from_secs(60),
        ),
    )
    .await
    .expect("both refused at once");
    match got {
        Err(ConnectFirstError::Failed {
            addr,
            error: ConnectionError::Unreachable { port_closed: true },
        }) => assert!(addr == a || addr == b),
        other => panic!("{:?}", other.map(|c| c.remote_address())),
    }
}

/// The client's first datagram reaches the server from a socket that is
/// closed once the server has answered: the server's retransmission meets a
/// closed port, and its half-open connection goes long before its handshake
/// timeout (a minute here).
#[tokio::test]
async fn a_server_forgets_a_client_that_is_gone() {
    use quark::tls::{self, Identity, Verify};
    let id = Identity::self_signed(&["localhost"]).unwrap();
    let mut server_config = tls::server_config(&id, &[ALPN]).unwrap();
    server_config.transport = Arc::new(quark::TransportConfig {
        handshake_timeout: Duration::from_secs(60),
        ..(*server_config.transport).clone()
    });
    let localhost: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let server = quark::Endpoint::server(server_config, localhost).unwrap();
    let client = quark::Endpoint::client(localhost).unwrap();
    let config = tls::client_config(Verify::Roots(vec![id.cert.clone()]), &[ALPN]).unwrap();

    // The client's Initial, caught on its way.
    let catch = UdpSocket::bind("127.0.0.1:0").unwrap();
    catch.set_read_timeout(Some(GUARD)).unwrap();
    let to = catch.local_addr().unwrap();
    let _attempt = client.connect(patient(config), to, "localhost").unwrap();
    let initial = tokio::task::spawn_blocking(move || {
        let mut buf = vec![0u8; 2048];
        let n = catch.recv(&mut buf).expect("the client's Initial");
        buf.truncate(n);
        buf
    })
    .await
    .unwrap();

    // Sent on from a socket that takes the server's first answer, then closes.
    let gone = UdpSocket::bind("127.0.0.1:0").unwrap();
    gone.set_read_timeout(Some(GUARD)).unwrap();
    gone.send_to(&initial, server.local_addr().unwrap())
        .unwrap();
    let gone = tokio::task::spawn_blocking(move || {
        let mut buf = [0u8; 2048];
        gone.recv(&mut buf).expect("the server's answer");
        gone
    })
    .await
    .unwrap();
    assert_eq!(server.connection_count(), 1);
    drop(gone);
    tokio::time::timeout(GUARD, server.wait_idle())
        .await
        .expect("the half-open connection went at the retransmission");
}

/// A handshake refused at once, while the driver runs on another thread,
/// still ends as an error for the one awaiting it: the driver may finish
/// with the connection before `connect` returns, and must not forget it
/// while its `Connecting` exists.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connect_refused_before_it_returns_is_still_reported() {
    let (_server, client, config, _) = echo_server_and_client(ALPN);
    let config = patient(config);
    let port = closed_port();
    for _ in 0..300 {
        let connecting = client.connect(config.clone(), port, "localhost").unwrap();
        // Let the driver run first, as another thread may.
        std::thread::sleep(Duration::from_micros(200));
        let got = tokio::time::timeout(GUARD, connecting)
            .await
            .expect("ended by the ICMP error");
        assert!(
            matches!(got, Err(ConnectionError::Unreachable { .. })),
            "{:?}",
            got.map(|c| c.remote_address())
        );
    }
}
