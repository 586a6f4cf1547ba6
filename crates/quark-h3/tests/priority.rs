//! Extensible priorities (RFC 9218) between quark-h3 client and server:
//! malformed PRIORITY_UPDATEs get the right connection error, valid ones
//! leave the connection serving. That the Priority field and
//! PRIORITY_UPDATE order responses on a busy connection is shown in
//! `priority_order.rs` (and on a congested simulated path in quark-proto's
//! `tests/priority_bottleneck.rs`).

mod common;

use common::*;
use quark::{Connection, ConnectionError};
use quark_h3::Priority;
use quark_h3::error::*;
use quark_h3::frame;
use quark_h3::priority::{self, PRIORITY_UPDATE_PUSH, PRIORITY_UPDATE_REQUEST};

const SMALL: usize = 10 * 1024;

fn get(n: usize, prio: Option<&str>) -> http::Request<()> {
    let mut req = http::Request::get(format!("https://localhost/bytes/{n}"));
    if let Some(p) = prio {
        req = req.header("priority", p);
    }
    req.body(()).unwrap()
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
