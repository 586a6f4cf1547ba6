//! The HTTP/3 file server under a client that asks for much and reads
//! nothing: 256 GETs of a 4 MB file on one connection whose 1 MiB window is
//! never raised. The server reads from disk only what a DATA frame can carry
//! now (`RequestStream::writable`), so the heap grows by a few MB, where
//! each request used to hold a 256 KiB piece and tokio's file buffer (128
//! MiB here). Measured with a counting allocator, so this binary has its own
//! allocator and no other test.

mod common;

use std::alloc::System;
use std::path::PathBuf;
use std::time::Duration;

use common::{body_of, data, quark_server, sha};
use http::{Request, StatusCode};
use quark::tls::{self, Verify};
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

impl Drop for Root {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[tokio::test]
async fn a_client_that_reads_nothing_costs_the_h3_file_server_little_memory() {
    let body = data(FILE, 5);
    let root = Root(std::env::temp_dir().join(format!("quark-h3-memory-{}", std::process::id())));
    std::fs::create_dir_all(&root.0).unwrap();
    std::fs::write(root.0.join("big"), &body).unwrap();

    let (server, id) = quark_server();
    let addr = server.local_addr().unwrap();
    let client = Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    let mut config =
        tls::client_config(Verify::Roots(vec![id.cert.clone()]), &[quark_h3::ALPN]).unwrap();
    config.transport = TransportConfig {
        receive_window: WINDOW,
        receive_window_max: WINDOW,
        ..TransportConfig::default()
    }
    .into();
    let connecting = client.connect(config, addr, "localhost").unwrap();
    let (c, s) = tokio::join!(connecting, server.accept());
    let (c, s) = (c.unwrap(), s.unwrap());
    tokio::spawn(quark_h3::files::serve_connection(s.clone(), root.0.clone()));
    let client = quark_h3::Client::new(c).await.unwrap();
    let before = heap();

    let authority = format!("localhost:{}", addr.port());
    let mut requests = Vec::new();
    for _ in 0..REQUESTS {
        let req = Request::get(format!("https://{authority}/big"))
            .body(())
            .unwrap();
        let mut stream = client.send_request(&req).await.unwrap();
        stream.finish().unwrap();
        requests.push(stream);
    }
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

    // Give up on all but 2; those arrive whole. Read together: the window is
    // shared, and data waiting on one stream would hold up another.
    requests.truncate(2);
    let readers: Vec<_> = requests
        .into_iter()
        .map(|mut stream| {
            tokio::spawn(async move {
                let resp = stream.recv_response().await.unwrap();
                assert_eq!(resp.status(), StatusCode::OK);
                body_of(&mut stream).await
            })
        })
        .collect();
    for reader in readers {
        let got = reader.await.unwrap();
        assert_eq!(got.len(), body.len());
        assert_eq!(sha(&got), sha(&body));
    }
}
