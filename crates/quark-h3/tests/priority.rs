//! Extensible priorities (RFC 9218) between quark-h3 client and server: the
//! Priority field and PRIORITY_UPDATE order responses on a busy connection,
//! and malformed PRIORITY_UPDATEs get the right connection error.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use common::*;
use quark::{Connection, ConnectionError};
use quark_h3::error::*;
use quark_h3::frame;
use quark_h3::priority::{self, PRIORITY_UPDATE_PUSH, PRIORITY_UPDATE_REQUEST};
use quark_h3::{Priority, RequestStream};

const BIG: usize = 50_000_000;
const SMALL: usize = 10 * 1024;

fn get(n: usize, prio: Option<&str>) -> http::Request<()> {
    let mut req = http::Request::get(format!("https://localhost/bytes/{n}"));
    if let Some(p) = prio {
        req = req.header("priority", p);
    }
    req.body(()).unwrap()
}

/// Reads a response body in a task, counting its bytes as they come; yields
/// the body's SHA-256 and length at the end.
fn count_body(
    mut s: RequestStream,
    count: Arc<AtomicU64>,
    keep: bool,
) -> tokio::task::JoinHandle<(String, Vec<u8>)> {
    tokio::spawn(async move {
        let mut body = Vec::new();
        let mut sha = sha2_stream::Sha::default();
        while let Some(chunk) = s.recv_data().await.unwrap() {
            sha.update(&chunk);
            if keep {
                body.extend_from_slice(&chunk);
            }
            count.fetch_add(chunk.len() as u64, Ordering::SeqCst);
        }
        (sha.finish(), body)
    })
}

/// SHA-256 over a body read in pieces (a 50 MB body is not kept).
mod sha2_stream {
    use sha2::{Digest, Sha256};

    #[derive(Default)]
    pub(super) struct Sha(Sha256);

    impl Sha {
        pub(super) fn update(&mut self, b: &[u8]) {
            self.0.update(b);
        }
        pub(super) fn finish(self) -> String {
            self.0
                .finalize()
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect()
        }
    }
}

/// Starts the big download with `big_prio`, waits until 1 MB of it has
/// arrived, then asks for the small body (its head carrying `small_prio`,
/// and `update` sent after it as a PRIORITY_UPDATE on the big one), and
/// returns how many bytes of the big body arrived between the small
/// request and the small body's end, and what of the big body was left.
async fn small_during_big(
    big_prio: Option<&str>,
    small_prio: Option<&str>,
    update_big: Option<Priority>,
) -> (u64, u64) {
    let (server, id) = quark_server();
    spawn_quark_h3_server(&server);
    let client = quark_h3_client(server.local_addr().unwrap(), &id).await;

    let (resp, mut big) = exchange(&client, &get(BIG, big_prio)).await;
    assert_eq!(resp.status(), 200);
    if let Some(p) = update_big {
        big.set_priority(p).await.unwrap();
    }
    let count = Arc::new(AtomicU64::new(0));
    let big_task = count_body(big, count.clone(), false);
    while count.load(Ordering::SeqCst) < 1 << 20 {
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }

    let before = count.load(Ordering::SeqCst);
    let (resp, mut small) = exchange(&client, &get(SMALL, small_prio)).await;
    assert_eq!(resp.status(), 200);
    let body = body_of(&mut small).await;
    let during = count.load(Ordering::SeqCst) - before;
    assert_eq!(sha(&body), sha(&data(SMALL, SMALL as u32)));

    let (big_sha, _) = big_task.await.unwrap();
    assert_eq!(count.load(Ordering::SeqCst), BIG as u64);
    assert_eq!(big_sha, sha(&data(BIG, BIG as u32)));
    client.connection().close(H3_NO_ERROR, b"");
    (during, BIG as u64 - before)
}

/// The bound on big-body bytes read ahead of the urgent response: what the
/// big stream's receive window (4 MB by default) had let in flight or into
/// the client's buffer when it was asked for, plus the server's send budget
/// (256 KB) -- never the rest of the 50 MB download. (Which stream the
/// server's scheduler picks when both have data is tested packet by packet
/// in quark-proto's `sched_tests.rs`; here the windows dominate.)
const FEW_RTTS: u64 = 6 << 20;

#[tokio::test]
async fn an_urgent_small_response_overtakes_a_big_download() {
    let (during, left) = small_during_big(Some("u=7"), Some("u=0"), None).await;
    eprintln!("urgent: {during} bytes of the big body before it ({left} were left)");
    assert!(
        during < FEW_RTTS,
        "{during} bytes before the urgent response"
    );
}

#[tokio::test]
async fn a_priority_update_demotes_a_download_under_way() {
    // The big one asks for u=0 (it would go first), then is moved to u=7.
    let update = Priority {
        urgency: 7,
        incremental: false,
    };
    let (during, left) = small_during_big(Some("u=0"), Some("u=1"), Some(update)).await;
    eprintln!("updated: {during} bytes of the big body before it ({left} were left)");
    assert!(
        during < FEW_RTTS,
        "{during} bytes before the urgent response"
    );
}

/// A raw QUIC connection to a fresh quark-h3 server (kept alive with it).
async fn raw() -> (Connection, quark::Endpoint) {
    let (server, id) = quark_server();
    spawn_quark_h3_server(&server);
    let conn = quark_connect(server.local_addr().unwrap(), &id).await;
    (conn, server)
}

/// The application error code the server closed `conn` with.
async fn close_code(conn: &Connection) -> u64 {
    match tokio::time::timeout(std::time::Duration::from_secs(10), conn.closed()).await {
        Ok(ConnectionError::ApplicationClosed { code, .. }) => code,
        other => panic!("expected an application close, got {other:?}"),
    }
}

fn frame_bytes(ty: u64, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    frame::put_frame(&mut out, ty, payload);
    out
}

/// A control stream (type 0x00) carrying SETTINGS and then `frames`.
async fn control(conn: &Connection, frames: &[u8]) -> quark::SendStream {
    let mut bytes = vec![0x00];
    bytes.extend(frame_bytes(frame::SETTINGS, &[]));
    bytes.extend_from_slice(frames);
    let mut send = conn.open_uni().await.unwrap();
    send.write_all(&bytes).await.unwrap();
    send
}

fn update(ty: u64, id: &[u8], value: &[u8]) -> Vec<u8> {
    let mut payload = id.to_vec();
    payload.extend_from_slice(value);
    frame_bytes(ty, &payload)
}

#[tokio::test]
async fn malformed_priority_updates_are_connection_errors() {
    let cases: [(Vec<u8>, u64); 4] = [
        // No whole element ID (a 2-byte varint cut short).
        (
            frame_bytes(PRIORITY_UPDATE_REQUEST, &[0x40]),
            H3_FRAME_ERROR,
        ),
        // A field value that is no dictionary.
        (
            update(PRIORITY_UPDATE_REQUEST, &[0x00], b"u=1,"),
            H3_GENERAL_PROTOCOL_ERROR,
        ),
        (
            update(PRIORITY_UPDATE_PUSH, &[0x00], b"U"),
            H3_GENERAL_PROTOCOL_ERROR,
        ),
        // Stream 2 is a server-initiated one: no request.
        (
            update(PRIORITY_UPDATE_REQUEST, &[0x02], b"u=1"),
            H3_ID_ERROR,
        ),
    ];
    for (frames, code) in cases {
        let (conn, _server) = raw().await;
        let _c = control(&conn, &frames).await;
        assert_eq!(close_code(&conn).await, code, "{frames:02x?}");
    }
}

#[tokio::test]
async fn a_priority_update_on_a_request_stream_is_frame_unexpected() {
    let (conn, _server) = raw().await;
    let _c = control(&conn, &[]).await;
    let (mut send, _recv) = conn.open_bi().await.unwrap();
    send.write_all(&update(PRIORITY_UPDATE_REQUEST, &[0x00], b"u=1"))
        .await
        .unwrap();
    assert_eq!(close_code(&conn).await, H3_FRAME_UNEXPECTED);
}

#[tokio::test]
async fn valid_priority_updates_leave_the_connection_serving() {
    let (server, id) = quark_server();
    spawn_quark_h3_server(&server);
    let client = quark_h3_client(server.local_addr().unwrap(), &id).await;
    // Updates for streams not opened yet (remembered, bounded), for a push
    // (ignored), with unknown and bad parameters (ignored).
    let (conn, _server2) = raw().await;
    let mut frames = Vec::new();
    for i in 0..400u64 {
        let mut id = Vec::new();
        quark_proto::varint::put_varint(&mut id, i * 4);
        frames.extend(update(PRIORITY_UPDATE_REQUEST, &id, b"u=9, x=?1, i"));
    }
    frames.extend(update(PRIORITY_UPDATE_PUSH, &[0x05], b"u=1"));
    let _c = control(&conn, &frames).await;
    let (mut send, mut recv) = conn.open_bi().await.unwrap();
    let mut block = Vec::new();
    quark_qpack::encode_section(
        &[
            (b":method", b"GET"),
            (b":scheme", b"https"),
            (b":authority", b"localhost"),
            (b":path", b"/bytes/10"),
        ],
        &mut block,
    );
    send.write_all(&frame_bytes(frame::HEADERS, &block))
        .await
        .unwrap();
    send.finish().unwrap();
    let answer = recv.read_to_end(1 << 20).await.unwrap();
    assert!(answer.len() > 10, "a response came");
    // And the quark-h3 client's own update works end to end.
    let (resp, mut s) = exchange(&client, &get(SMALL, Some("u=5, i"))).await;
    assert_eq!(resp.status(), 200);
    s.set_priority(Priority::default()).await.unwrap();
    assert_eq!(sha(&body_of(&mut s).await), sha(&data(SMALL, SMALL as u32)));
    assert_eq!(priority::format(Priority::default()), "u=3");
}
