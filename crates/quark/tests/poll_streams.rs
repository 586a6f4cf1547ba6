//! The poll forms of open and accept (`poll_open_bi`, `poll_open_uni`,
//! `poll_accept_bi`, `poll_accept_uni`), as poll-based adapters (h3-quark)
//! drive them: data through streams they made, a poll that waits on the
//! peer's stream limit and is woken when the peer frees a stream, and the
//! connection's error once it ended.

mod common;

use std::future::poll_fn;
use std::net::SocketAddr;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use common::{connect, data, sha};
use quark::tls::{self, Identity, Verify};
use quark::{ConnectionError, Endpoint, TransportConfig};

#[tokio::test]
async fn poll_open_and_accept_carry_data_and_wait_on_the_limit() {
    let id = Identity::self_signed(&["localhost"]).unwrap();
    let localhost: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let mut server_config = tls::server_config(&id, &[b"echo"]).unwrap();
    server_config.transport = Arc::new(TransportConfig {
        max_concurrent_uni_streams: 1,
        ..TransportConfig::default()
    });
    let server = Endpoint::server(server_config, localhost).unwrap();
    let client = Endpoint::client(localhost).unwrap();
    let config = tls::client_config(Verify::Roots(vec![id.cert.clone()]), &[b"echo"]).unwrap();
    let (c, s) = connect(&server, &client, config).await;

    // Bidirectional: the server echoes what it accepted by poll.
    let body = data(100_000, 3);
    let (mut send, mut recv) = poll_fn(|cx| c.poll_open_bi(cx)).await.unwrap();
    send.write_all(&body).await.unwrap();
    send.finish().unwrap();
    let (mut s_send, mut s_recv) = poll_fn(|cx| s.poll_accept_bi(cx)).await.unwrap();
    assert_eq!(s_recv.id(), send.id());
    let got = s_recv.read_to_end(usize::MAX).await.unwrap();
    s_send.write_all(&got).await.unwrap();
    s_send.finish().unwrap();
    assert_eq!(
        sha(&recv.read_to_end(usize::MAX).await.unwrap()),
        sha(&body)
    );

    // Unidirectional, one at a time: the second open waits until the server
    // has read the first to its end (MAX_STREAMS then grows).
    let mut first = poll_fn(|cx| c.poll_open_uni(cx)).await.unwrap();
    first.write_all(b"first").await.unwrap();
    first.finish().unwrap();
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    assert!(c.poll_open_uni(&mut cx).is_pending(), "over the limit");
    let mut r = poll_fn(|cx| s.poll_accept_uni(cx)).await.unwrap();
    assert_eq!(r.read_to_end(100).await.unwrap(), b"first");
    let mut second =
        tokio::time::timeout(Duration::from_secs(10), poll_fn(|cx| c.poll_open_uni(cx)))
            .await
            .expect("woken when the peer freed a stream")
            .unwrap();
    second.write_all(b"second").await.unwrap();
    second.finish().unwrap();
    let mut r = poll_fn(|cx| s.poll_accept_uni(cx)).await.unwrap();
    assert_eq!(r.read_to_end(100).await.unwrap(), b"second");

    // After the peer closed: the connection's error, not a wait.
    s.close(42, b"bye");
    let err = tokio::time::timeout(Duration::from_secs(10), poll_fn(|cx| c.poll_accept_bi(cx)))
        .await
        .expect("accept ends when the connection does");
    assert!(matches!(
        err.err(),
        Some(ConnectionError::ApplicationClosed { code: 42, .. })
    ));
    match c.poll_open_uni(&mut cx) {
        Poll::Ready(Err(ConnectionError::ApplicationClosed { code: 42, .. })) => {}
        other => panic!("open after close: {:?}", other.map(|r| r.is_ok())),
    }
}
