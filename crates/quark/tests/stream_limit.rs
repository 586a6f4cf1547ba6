//! Many tasks opening streams on one connection at once, against a peer that
//! allows few: each waits for its turn and all complete (a single waiting
//! slot once kept only the last task to wait; the rest slept for good).

mod common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use common::{connect, data, sha, spawn_echo};
use quark::tls::{self, Identity, Verify};
use quark::{Endpoint, TransportConfig};

const LIMIT: u64 = 8;
const TASKS: usize = 60;

#[tokio::test]
async fn tasks_waiting_on_the_stream_limit_all_get_their_turn() {
    let id = Identity::self_signed(&["localhost"]).unwrap();
    let localhost: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let mut server_config = tls::server_config(&id, &[b"echo"]).unwrap();
    server_config.transport = Arc::new(TransportConfig {
        max_concurrent_bidi_streams: LIMIT,
        ..TransportConfig::default()
    });
    let server = Endpoint::server(server_config, localhost).unwrap();
    let client = Endpoint::client(localhost).unwrap();
    let config = tls::client_config(Verify::Roots(vec![id.cert.clone()]), &[b"echo"]).unwrap();
    let (c, s) = connect(&server, &client, config).await;
    spawn_echo(s);
    let tasks: Vec<_> = (0..TASKS)
        .map(|i| {
            let c = c.clone();
            tokio::spawn(async move {
                let body = data(20_000 + i, i as u32);
                let (mut send, mut recv) = c.open_bi().await.unwrap();
                send.write_all(&body).await.unwrap();
                send.finish().unwrap();
                let back = recv.read_to_end(usize::MAX).await.unwrap();
                assert_eq!(sha(&back), sha(&body), "stream {i}");
            })
        })
        .collect();
    let all = futures_join(tasks);
    tokio::time::timeout(Duration::from_secs(30), all)
        .await
        .expect("every task got a stream in time");
}

async fn futures_join(tasks: Vec<tokio::task::JoinHandle<()>>) {
    for t in tasks {
        t.await.unwrap();
    }
}
