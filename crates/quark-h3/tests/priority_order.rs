//! RFC 9218 priorities decide what a busy connection sends: tests that
//! fail when the transport's scheduler ignores urgency.
//!
//! Three 16 MB downloads at urgency 7 keep a loopback connection busy (the
//! congestion window limits it); a 256 KiB response at urgency 0 is then
//! asked for. Counted from the client's qlog (what arrived, in order): with
//! the scheduler serving urgency in order, nothing of the big ones arrives
//! between the urgent body's first and last bytes (0 in every run); the
//! control in the same test, the same responses round-robin (one urgency,
//! incremental), gives them three quarters of the link meanwhile (779 526
//! to 779 551 bytes in six runs; the same as making quark-proto's
//! `Streams::set_priority` a no-op). A PRIORITY_UPDATE that moves a u=0
//! download to u=7 lets a u=1 response through the same way.
//!
//! Not tested here: the reverse (a u=1 body waiting for a u=0 download).
//! The sender is work-conserving, and when the download's writer task has
//! not run yet its queue is empty and the u=1 body goes: 0-914 KB of the
//! download arrived during it. quark-proto's sans-IO tests check it.
//!
//! The server's send budget and the client's windows are large so that every
//! body is written into the transport at once and only the scheduler
//! chooses. (Admission into the connection's credit is first come, first
//! served: with a 256 KB client window, 19 MB of the big downloads were
//! read during a 1 MB urgent body. That is the transport's, not HTTP/3's,
//! to change. The send budget lets a more urgent stream past it by half.)

mod common;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use common::*;
use quark::tls::{self, Identity, Verify};
use quark::{Endpoint, EndpointConfig, TransportConfig};
use quark_h3::error::H3_NO_ERROR;
use quark_h3::{Priority, RequestStream};

const BIG: usize = 16_000_000;
const BIGS: usize = 3;
/// Under the 512 KiB a stream may hold unsent (quark-proto's
/// `NOT_SENT_LIMIT`), so the whole body is queued at once: a larger one is
/// written as sending makes room, and each pass of the sender that finds
/// its queue momentarily empty (its writer not run yet) rightly sends the
/// big ones.
const URGENT: usize = 256 * 1024;

/// A quark-h3 client whose receive windows never hold the server back.
async fn wide_window_client(addr: SocketAddr, id: &Identity, qlog_dir: &Path) -> quark_h3::Client {
    let mut config = tls::client_config(Verify::Roots(vec![id.cert.clone()]), &[ALPN]).unwrap();
    config.transport = Arc::new(TransportConfig {
        receive_window: 1 << 30,
        receive_window_max: 1 << 30,
        stream_receive_window: 1 << 28,
        stream_receive_window_max: 1 << 28,
        ..TransportConfig::default()
    });
    let endpoint_config = EndpointConfig {
        qlog_dir: Some(qlog_dir.to_path_buf()),
        ..EndpointConfig::default()
    };
    let endpoint =
        Endpoint::with_config(endpoint_config, None, "127.0.0.1:0".parse().unwrap()).unwrap();
    let conn = endpoint
        .connect(config, addr, "localhost")
        .unwrap()
        .await
        .unwrap();
    quark_h3::Client::with_config(conn, &h3_config())
        .await
        .unwrap()
}

/// Serves `GET /bytes/<n>` as the common server does, but writes each body
/// in one piece: the whole urgent body is queued in the transport at once,
/// so no pass of the sender finds it momentarily empty and fills the
/// congestion window with the big ones (work-conserving, as it should be).
fn spawn_one_write_server(server: &Endpoint) {
    let server = server.clone();
    tokio::spawn(async move {
        while let Some(conn) = server.accept().await {
            tokio::spawn(async move {
                let mut h3 = quark_h3::Server::with_config(conn, &h3_config())
                    .await
                    .unwrap();
                while let Ok(Some((req, mut stream))) = h3.accept().await {
                    tokio::spawn(async move {
                        let n: usize = req.uri().path()["/bytes/".len()..].parse().unwrap();
                        let resp = http::Response::builder()
                            .header("content-length", n)
                            .body(())
                            .unwrap();
                        stream.send_response(&resp).await?;
                        stream.send_data(data(n, n as u32)).await?;
                        stream.finish()
                    });
                }
            });
        }
    });
}

fn get(n: usize, priority: &str) -> http::Request<()> {
    http::Request::get(format!("https://localhost/bytes/{n}"))
        .header("priority", priority)
        .body(())
        .unwrap()
}

/// Reads a big body in a task, checking each chunk against `expected` as
/// it comes (a compare, so the reader keeps up and the bytes it counts are
/// close to those received), adding its bytes to `count`.
fn read_checking(
    mut s: RequestStream,
    expected: Bytes,
    count: Arc<AtomicU64>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut at = 0;
        while let Some(chunk) = s.recv_data().await.unwrap() {
            assert!(
                chunk[..] == expected[at..at + chunk.len()],
                "big body at {at}"
            );
            at += chunk.len();
            count.fetch_add(chunk.len() as u64, Ordering::SeqCst);
        }
        assert_eq!(at, expected.len(), "big body's length");
    })
}

/// A connection busy with `bigs` downloads at `big_prio` (the client's
/// Priority field); once 1 MB of them has been read, `update` moves them
/// (PRIORITY_UPDATE), and then a 256 KiB response at `urgent_prio` is
/// asked for. Every body is checked. Returns the bytes of the big
/// downloads that arrived between the urgent body's first and last bytes.
async fn race(bigs: usize, big_prio: &str, update: Option<Priority>, urgent_prio: &str) -> u64 {
    let id = Identity::self_signed(&["localhost"]).unwrap();
    let mut config = tls::server_config(&id, &[ALPN]).unwrap();
    config.transport = Arc::new(TransportConfig {
        send_budget: 1 << 28,
        send_budget_max: 1 << 28,
        send_buffer: 1 << 27,
        send_buffer_max: 1 << 27,
        ..TransportConfig::default()
    });
    let server = Endpoint::server(config, "127.0.0.1:0".parse().unwrap()).unwrap();
    spawn_one_write_server(&server);
    static RUN: AtomicU64 = AtomicU64::new(0);
    let run = RUN.fetch_add(1, Ordering::SeqCst);
    let qlog = std::env::temp_dir().join(format!(
        "quark-h3-priority-order-{}-{run}",
        std::process::id()
    ));
    std::fs::create_dir_all(&qlog).unwrap();
    let client = wide_window_client(server.local_addr().unwrap(), &id, &qlog).await;

    let count = Arc::new(AtomicU64::new(0));
    let expected = data(BIG, BIG as u32);
    let mut readers = Vec::new();
    for _ in 0..bigs {
        let (resp, mut s) = exchange(&client, &get(BIG, big_prio)).await;
        assert_eq!(resp.status(), 200);
        if let Some(p) = update {
            s.set_priority(p).await.unwrap();
        }
        readers.push(read_checking(s, expected.clone(), count.clone()));
    }
    // Busy: the big bodies are flowing.
    while count.load(Ordering::SeqCst) < 1 << 20 {
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }

    let (resp, mut urgent) = exchange(&client, &get(URGENT, urgent_prio)).await;
    assert_eq!(resp.status(), 200);
    let body = body_of(&mut urgent).await;
    assert_eq!(sha(&body), sha(&data(URGENT, URGENT as u32)));
    for reader in readers {
        reader.await.unwrap();
    }
    client.connection().close(H3_NO_ERROR, b"");
    client.connection().closed().await;

    // What the client received, in order (its qlog; what its application
    // read would lag behind by whatever sat in its buffers).
    let during = big_bytes_during(&qlog, urgent.id());
    let _ = std::fs::remove_dir_all(&qlog);
    eprintln!(
        "{bigs} x {big_prio} (then {update:?}), urgent {urgent_prio}: \
         {during} bytes of the big downloads arrived during the urgent body"
    );
    during
}

#[tokio::test]
async fn an_urgent_response_goes_before_busy_downloads() {
    // What shares the urgent body's packets at most (0 in every run).
    let during = race(BIGS, "u=7", None, "u=0").await;
    assert!(during <= URGENT as u64 / 2, "{during} bytes during it");
    // The control: priorities that say nothing (one urgency, all
    // incremental: round-robin) give the big ones three quarters of the
    // link meanwhile.
    let shared = race(BIGS, "u=3, i", None, "u=3, i").await;
    assert!(
        shared > URGENT as u64,
        "{shared} bytes during it, round-robin"
    );
}

#[tokio::test]
async fn a_priority_update_demotes_a_download_under_way() {
    // The big one asks for u=0 (it would go first), then is moved to u=7.
    let update = Priority {
        urgency: 7,
        incremental: false,
    };
    let during = race(1, "u=0", Some(update), "u=1").await;
    assert!(during <= URGENT as u64 / 2, "{during} bytes during it");
}

/// From the client's qlog: the STREAM bytes of other request streams
/// received between the first and the last of `urgent`'s.
fn big_bytes_during(dir: &Path, urgent: u64) -> u64 {
    let file = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with("_client.sqlog"))
        .expect("the client's qlog");
    let text = std::fs::read_to_string(file).unwrap();
    // (stream, offset, length) of each STREAM frame received, in order.
    let mut frames = Vec::new();
    for line in text
        .lines()
        .filter(|l| l.contains("transport:packet_received"))
    {
        for part in line.split("\"frame_type\":\"stream\",").skip(1) {
            let field = |name: &str| -> u64 {
                let at = part.find(name).unwrap() + name.len();
                let digits: String = part[at..]
                    .chars()
                    .take_while(char::is_ascii_digit)
                    .collect();
                digits.parse().unwrap()
            };
            frames.push((
                field("\"stream_id\":"),
                field("\"offset\":"),
                field("\"length\":"),
            ));
        }
    }
    // The body's first bytes: past the response head (a frame of its own
    // when the server's write of the body came after it).
    let first = frames
        .iter()
        .position(|&(id, off, len)| id == urgent && off + len > 256)
        .expect("urgent frames");
    let last = frames.iter().rposition(|&(id, ..)| id == urgent).unwrap();
    frames[first..last]
        .iter()
        .filter(|&&(id, ..)| id % 4 == 0 && id != urgent)
        .map(|&(.., len)| len)
        .sum()
}
