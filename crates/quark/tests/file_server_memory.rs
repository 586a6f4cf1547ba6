//! A file server under a client that asks for much and reads nothing: 256
//! hq-interop requests for a 4 MB file on one connection whose 1 MiB window
//! is never raised. The server reads from disk only what the connection can
//! send (`SendStream::writable`), so what it holds for sending stays within
//! the send budget and the process's heap grows by a few MB, where each
//! request used to hold 512 KiB of buffers (its own and tokio's file buffer:
//! 128 MiB here). Measured with a counting allocator, so this binary has
//! its own allocator and no other test.

mod common;
#[path = "support/unread_files.rs"]
mod unread_files;

use std::net::SocketAddr;
use std::time::Duration;

use common::{data, sha};
use quark::tls::{self, Identity, Verify};
use quark::{Endpoint, TransportConfig};
use unread_files::{FILE, REQUESTS, Root, fixed_window, heap, watch_until_settled};

#[tokio::test]
async fn a_client_that_reads_nothing_costs_the_file_server_little_memory() {
    let body = data(FILE, 11);
    let root = Root::new("quark-files", &body);
    let id = Identity::self_signed(&["localhost"]).unwrap();
    let localhost: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let server_config = tls::server_config(&id, &[quark::hq::ALPN]).unwrap();
    let server = Endpoint::server(server_config, localhost).unwrap();
    let client = Endpoint::client(localhost).unwrap();
    let mut config =
        tls::client_config(Verify::Roots(vec![id.cert.clone()]), &[quark::hq::ALPN]).unwrap();
    config.transport = fixed_window();
    let (c, s) = common::connect(&server, &client, config).await;
    tokio::spawn(quark::hq::serve_connection(s.clone(), root.0.clone()));
    let before = heap();

    // 256 requests; the responses are never read (until the end).
    let mut responses = Vec::new();
    for _ in 0..REQUESTS {
        let (mut send, recv) = c.open_bi().await.unwrap();
        send.write_all(b"GET /big\r\n").await.unwrap();
        send.finish().unwrap();
        responses.push(recv);
    }
    watch_until_settled(&s, before).await;

    // Give up on all but 4; those arrive whole. Read together: the window is
    // shared, and data waiting on one stream would hold up another.
    responses.truncate(4);
    let readers: Vec<_> = responses
        .into_iter()
        .map(|mut recv| tokio::spawn(async move { recv.read_to_end(usize::MAX).await }))
        .collect();
    for reader in readers {
        let got = reader.await.unwrap().unwrap();
        assert_eq!(got.len(), body.len());
        assert_eq!(sha(&got), sha(&body));
    }
    c.close(0, b"done");
}

#[tokio::test]
async fn writable_waits_for_room_in_the_budget_and_sets_it_aside() {
    const BUDGET: usize = 64 * 1024;
    let id = Identity::self_signed(&["localhost"]).unwrap();
    let localhost: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let mut server_config = tls::server_config(&id, &[b"test"]).unwrap();
    server_config.transport = TransportConfig {
        send_budget: BUDGET,
        send_budget_max: BUDGET,
        ..TransportConfig::default()
    }
    .into();
    let server = Endpoint::server(server_config, localhost).unwrap();
    let client = Endpoint::client(localhost).unwrap();
    let config = tls::client_config(Verify::Roots(vec![id.cert.clone()]), &[b"test"]).unwrap();
    let (c, s) = common::connect(&server, &client, config).await;
    let (mut a, mut b) = (s.open_uni().await.unwrap(), s.open_uni().await.unwrap());
    // a takes the whole budget; b waits until a's bytes are acknowledged.
    assert_eq!(a.writable(usize::MAX).await.unwrap(), BUDGET);
    let waiting = tokio::spawn(async move {
        let room = b.writable(1000).await.unwrap();
        (b, room)
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!waiting.is_finished(), "b found room set aside for a");
    let body_a = data(BUDGET, 1);
    a.write_all(&body_a).await.unwrap();
    a.finish().unwrap();
    let (mut b, room) = waiting.await.unwrap();
    assert_eq!(room, 1000);
    let body_b = data(1000, 2);
    b.write_all(&body_b).await.unwrap();
    b.finish().unwrap();
    for want in [body_a, body_b] {
        let mut recv = c.accept_uni().await.unwrap();
        let got = recv.read_to_end(usize::MAX).await.unwrap();
        assert_eq!(sha(&got), sha(&want));
    }
}
