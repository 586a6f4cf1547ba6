//! A file server under a client that asks for much and reads nothing: 256
//! hq-interop requests for a 4 MB file on one connection whose 1 MiB window
//! is never raised. The server reads from disk only what the connection can
//! send (`SendStream::writable`), so what it holds for sending stays within
//! the send budget and the process's heap grows by a few MB, where each
//! request used to hold 512 KiB of buffers (its own and tokio's file buffer:
//! 128 MiB here). Measured with a counting allocator, so this binary has
//! its own allocator and no other test.

mod common;

use std::alloc::System;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use common::{data, sha};
use quark::tls::{self, Identity, Verify};
use quark::{Endpoint, TransportConfig};
use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Bytes on the heap now.
fn heap() -> i64 {
    let s = GLOBAL.stats();
    // stats_alloc counts a realloc's change in these two already.
    s.bytes_allocated as i64 - s.bytes_deallocated as i64
}

const REQUESTS: usize = 256;
const FILE: usize = 4_000_000;
const WINDOW: u64 = 1 << 20;

/// A directory with one file, `big`, removed on drop.
struct Root(PathBuf);

impl Root {
    fn new(body: &[u8]) -> Self {
        let dir = std::env::temp_dir().join(format!("quark-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("big"), body).unwrap();
        Root(dir)
    }
}

impl Drop for Root {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[tokio::test]
async fn a_client_that_reads_nothing_costs_the_file_server_little_memory() {
    let body = data(FILE, 11);
    let root = Root::new(&body);
    let id = Identity::self_signed(&["localhost"]).unwrap();
    let localhost: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let server_config = tls::server_config(&id, &[quark::hq::ALPN]).unwrap();
    let server = Endpoint::server(server_config, localhost).unwrap();
    let client = Endpoint::client(localhost).unwrap();
    let mut config =
        tls::client_config(Verify::Roots(vec![id.cert.clone()]), &[quark::hq::ALPN]).unwrap();
    config.transport = TransportConfig {
        receive_window: WINDOW,
        receive_window_max: WINDOW,
        ..TransportConfig::default()
    }
    .into();
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
    // The server fills the window and the client acknowledges it all; then
    // every request waits for credit. Sample the heap until then and a while
    // after.
    let (mut most, mut settled, mut most_held) = (0, 0, 0);
    for _ in 0..3_000 {
        tokio::time::sleep(Duration::from_millis(10)).await;
        let (held, budget) = s.send_buffered();
        assert!(held <= budget, "{held} bytes held, budget {budget}");
        most_held = most_held.max(held);
        most = most.max(heap() - before);
        if s.stats().bytes_out > WINDOW && held == 0 {
            settled += 1;
            if settled == 50 {
                break;
            }
        }
    }
    assert_eq!(settled, 50, "the server never filled the window");
    eprintln!(
        "{REQUESTS} requests: the heap grew by {most} bytes at most, \
         {most_held} bytes held for sending at most"
    );
    assert!(
        most < 12 << 20,
        "the heap grew by {most} bytes for {REQUESTS} waiting requests"
    );

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
