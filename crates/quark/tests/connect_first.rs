//! `Endpoint::connect_first` (RFC 8305 over QUIC): the first address to
//! answer wins wherever it stands in the list, silent ones only delay it,
//! the losing attempts are gone once it returns, a server that refuses
//! ends the race, and when none answers the error says so.

mod common;

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::Duration;

use common::{data, echo, echo_server_and_client, sha};
use quark::connect_first::ATTEMPT_DELAY;
use quark::{ConnectFirstError, ConnectionError};

const ALPN: &[u8] = b"first";

/// An address that swallows datagrams: a bound socket nobody reads (no
/// ICMP error comes back, as from a host that is down).
fn silent() -> (UdpSocket, SocketAddr) {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = s.local_addr().unwrap();
    (s, addr)
}

/// Datagrams waiting on `s`.
fn received(s: &UdpSocket) -> usize {
    s.set_nonblocking(true).unwrap();
    let mut buf = [0u8; 2048];
    std::iter::from_fn(|| s.recv(&mut buf).ok()).count()
}

#[tokio::test]
async fn the_address_that_answers_wins_wherever_it_stands() {
    let (_server, client, config, live) = echo_server_and_client(ALPN);
    let (s1, quiet1) = silent();
    let (s2, quiet2) = silent();
    for (i, addrs) in [
        vec![quiet1, live],
        vec![live, quiet1],
        vec![quiet1, quiet2, live],
    ]
    .into_iter()
    .enumerate()
    {
        let conn = tokio::time::timeout(
            Duration::from_secs(5),
            client.connect_first(config.clone(), &addrs, "localhost", ATTEMPT_DELAY),
        )
        .await
        .expect("within 5 s")
        .unwrap();
        assert_eq!(conn.remote_address(), live, "{addrs:?}");
        let body = data(100_000, i as u32);
        assert_eq!(sha(&echo(&conn, &body).await), sha(&body));
        // The losers are gone once the winner is returned: no attempt
        // lingers in a closing state waiting for an answer.
        for _ in 0..100 {
            if client.connection_count() == 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(client.connection_count(), 1, "{addrs:?}");
        conn.close(0, b"");
        client.wait_idle().await;
    }
    // The silent addresses were tried (their Initials, and the closes).
    assert!(received(&s1) > 0);
    assert!(received(&s2) > 0);
}

#[tokio::test]
async fn no_answer_from_any_address_is_an_error() {
    let (_server, client, mut config, _) = echo_server_and_client(ALPN);
    config.transport = Arc::new(quark::TransportConfig {
        handshake_timeout: Duration::from_millis(300),
        ..(*config.transport).clone()
    });
    let (_s1, quiet1) = silent();
    let (_s2, quiet2) = silent();
    let got = client
        .connect_first(
            config.clone(),
            &[quiet1, quiet2],
            "localhost",
            ATTEMPT_DELAY,
        )
        .await;
    match got {
        Err(ConnectFirstError::Failed {
            addr,
            error: ConnectionError::TimedOut,
        }) => assert!(addr == quiet1 || addr == quiet2),
        other => panic!("{:?}", other.map(|c| c.remote_address())),
    }
    assert!(matches!(
        client
            .connect_first(config, &[], "localhost", ATTEMPT_DELAY)
            .await,
        Err(ConnectFirstError::NoAddress)
    ));
}

#[tokio::test]
async fn a_server_that_refuses_ends_the_race() {
    let (_server, client, config, live) = echo_server_and_client(ALPN);
    let (_s1, quiet1) = silent();
    let (_s2, quiet2) = silent();
    // The certificate names localhost: the server answers, and the client
    // refuses it. The silent attempts would take the handshake timeout
    // (10 s) to fail.
    let got = tokio::time::timeout(
        Duration::from_secs(5),
        client.connect_first(config, &[quiet1, live, quiet2], "other.test", ATTEMPT_DELAY),
    )
    .await
    .expect("the refusal ends it, not the silent attempts' timeout");
    match got {
        Err(ConnectFirstError::Failed { addr, error }) => {
            assert_eq!(addr, live);
            assert_ne!(error, ConnectionError::TimedOut);
        }
        other => panic!("{:?}", other.map(|c| c.remote_address())),
    }
}

/// Like quark itself, it needs no tokio timer: the delays between attempts
/// run on the endpoint's driver (its timerfd).
#[test]
fn a_runtime_without_tokio_timers_will_do() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .unwrap();
    rt.block_on(async {
        let (_server, client, config, live) = echo_server_and_client(ALPN);
        let (_s1, quiet) = silent();
        let conn = client
            .connect_first(config, &[quiet, live], "localhost", ATTEMPT_DELAY)
            .await
            .unwrap();
        assert_eq!(conn.remote_address(), live);
        let body = data(10_000, 7);
        assert_eq!(sha(&echo(&conn, &body).await), sha(&body));
    });
}
