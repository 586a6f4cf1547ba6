//! A quark-h3 server against a raw QUIC peer that breaks the rules: each
//! violation gets the error code RFC 9114 / RFC 9204 names, on the connection
//! or on the one stream, and the server keeps serving other connections.

mod common;

use common::*;
use quark::{Connection, ConnectionError};
use quark_h3::error::*;
use quark_h3::frame;

/// A raw QUIC connection to a fresh quark-h3 server.
async fn raw() -> (Connection, quark::Endpoint, quark::tls::Identity) {
    let (server, id) = quark_server();
    spawn_quark_h3_server(&server);
    let conn = quark_connect(server.local_addr().unwrap(), &id).await;
    (conn, server, id)
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

/// A HEADERS frame for `fields` (static-table QPACK).
fn headers(fields: &[(&[u8], &[u8])]) -> Vec<u8> {
    let mut block = Vec::new();
    quark_qpack::encode_section(fields, &mut block);
    frame_bytes(frame::HEADERS, &block)
}

/// Reads `recv` and expects the server to have reset it with `code`.
async fn expect_reset(recv: &mut quark::RecvStream, code: u64) {
    let read = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        recv.read_to_end(1 << 20),
    );
    match read.await {
        Ok(Err(quark::ReadError::Reset(got))) => assert_eq!(got, code),
        other => panic!("expected a reset with {code:#x}, got {other:?}"),
    }
}

/// `POST /echo`: the server reads the whole body before it answers.
const POST_ECHO: &[(&[u8], &[u8])] = &[
    (b":method", b"POST"),
    (b":scheme", b"https"),
    (b":authority", b"localhost"),
    (b":path", b"/echo"),
];

const GET: &[(&[u8], &[u8])] = &[
    (b":method", b"GET"),
    (b":scheme", b"https"),
    (b":authority", b"localhost"),
    (b":path", b"/bytes/10"),
];

/// Sends `bytes` then FIN on a new request stream.
async fn request(conn: &Connection, bytes: &[u8]) -> quark::RecvStream {
    let (mut send, recv) = conn.open_bi().await.unwrap();
    send.write_all(bytes).await.unwrap();
    send.finish().unwrap();
    recv
}

/// Opens a unidirectional stream and writes `bytes` (without FIN unless `fin`).
async fn uni(conn: &Connection, bytes: &[u8], fin: bool) -> quark::SendStream {
    let mut send = conn.open_uni().await.unwrap();
    send.write_all(bytes).await.unwrap();
    if fin {
        send.finish().unwrap();
    }
    send
}

fn control(frames: &[u8]) -> Vec<u8> {
    let mut out = vec![0x00];
    out.extend_from_slice(frames);
    out
}

#[tokio::test]
async fn data_before_headers_is_frame_unexpected() {
    let (conn, ..) = raw().await;
    request(&conn, &frame_bytes(frame::DATA, b"hello")).await;
    assert_eq!(close_code(&conn).await, H3_FRAME_UNEXPECTED);
}

#[tokio::test]
async fn a_control_stream_must_start_with_settings() {
    let (conn, ..) = raw().await;
    let mut goaway = Vec::new();
    frame::put_goaway(&mut goaway, 0);
    let _c = uni(&conn, &control(&goaway), false).await;
    assert_eq!(close_code(&conn).await, H3_MISSING_SETTINGS);
}

#[tokio::test]
async fn a_second_control_stream_is_refused() {
    let (conn, ..) = raw().await;
    let settings = control(&frame_bytes(frame::SETTINGS, &[]));
    let _a = uni(&conn, &settings, false).await;
    let _b = uni(&conn, &settings, false).await;
    assert_eq!(close_code(&conn).await, H3_STREAM_CREATION_ERROR);
}

#[tokio::test]
async fn closing_the_control_stream_is_an_error() {
    let (conn, ..) = raw().await;
    uni(&conn, &control(&frame_bytes(frame::SETTINGS, &[])), true).await;
    assert_eq!(close_code(&conn).await, H3_CLOSED_CRITICAL_STREAM);
}

#[tokio::test]
async fn http2_settings_are_settings_errors() {
    let (conn, ..) = raw().await;
    // SETTINGS_ENABLE_PUSH (0x02) has no HTTP/3 meaning.
    let _c = uni(
        &conn,
        &control(&frame_bytes(frame::SETTINGS, &[0x02, 0x00])),
        false,
    )
    .await;
    assert_eq!(close_code(&conn).await, H3_SETTINGS_ERROR);
}

#[tokio::test]
async fn a_push_stream_from_a_client_is_refused() {
    let (conn, ..) = raw().await;
    let _p = uni(&conn, &[0x01, 0x00], false).await;
    assert_eq!(close_code(&conn).await, H3_STREAM_CREATION_ERROR);
}

#[tokio::test]
async fn an_impossible_insert_count_fails_decompression() {
    let (conn, ..) = raw().await;
    // Encoded Required Insert Count 257: above 2 * MaxEntries (2 * 4096 / 32).
    let block = [0xff, 0x02, 0x00, 0x80];
    request(&conn, &frame_bytes(frame::HEADERS, &block)).await;
    assert_eq!(close_code(&conn).await, 0x200);
}

#[tokio::test]
async fn more_blocked_streams_than_allowed_fail_decompression() {
    let (conn, ..) = raw().await;
    // Required Insert Count 1 (encoded 2), never inserted: each stream
    // blocks; the server allows 16 (its default).
    let mut streams = Vec::new();
    for _ in 0..17 {
        let (mut send, recv) = conn.open_bi().await.unwrap();
        send.write_all(&frame_bytes(frame::HEADERS, &[0x02, 0x00, 0x80]))
            .await
            .unwrap();
        streams.push((send, recv));
    }
    assert_eq!(close_code(&conn).await, 0x200);
}

#[tokio::test]
async fn a_table_larger_than_allowed_is_an_encoder_stream_error() {
    let (conn, ..) = raw().await;
    // Encoder stream (type 0x02): Set Dynamic Table Capacity 4097.
    let mut set = vec![0x02, 0x3f];
    let mut rest = 4097 - 31;
    while rest >= 0x80 {
        set.push(0x80 | (rest & 0x7f) as u8);
        rest >>= 7;
    }
    set.push(rest as u8);
    let _s = uni(&conn, &set, false).await;
    assert_eq!(close_code(&conn).await, 0x201);
}

#[tokio::test]
async fn an_unexpected_acknowledgment_is_a_decoder_stream_error() {
    let (conn, ..) = raw().await;
    // Decoder stream (type 0x03): Section Acknowledgment for stream 0,
    // which had no section with dynamic references.
    let _s = uni(&conn, &[0x03, 0x80], false).await;
    assert_eq!(close_code(&conn).await, 0x202);
}

#[tokio::test]
async fn malformed_requests_reset_only_their_stream() {
    let (conn, ..) = raw().await;
    let upper: &[(&[u8], &[u8])] = &[
        (b":method", b"GET"),
        (b":scheme", b"https"),
        (b":authority", b"localhost"),
        (b":path", b"/bytes/10"),
        (b"X-Upper", b"1"),
    ];
    let no_path: &[(&[u8], &[u8])] = &[(b":method", b"GET"), (b":scheme", b"https")];
    for fields in [upper, no_path] {
        let mut recv = request(&conn, &headers(fields)).await;
        expect_reset(&mut recv, H3_MESSAGE_ERROR).await;
    }
    // Too long a field section: refused on its stream, unread.
    let mut big = Vec::new();
    frame::put_header(&mut big, frame::HEADERS, 1 << 20);
    let (mut send, mut recv) = conn.open_bi().await.unwrap();
    send.write_all(&big).await.unwrap();
    expect_reset(&mut recv, H3_EXCESSIVE_LOAD).await;
    // The connection still serves a good request.
    let mut recv = request(&conn, &headers(GET)).await;
    let answer = recv.read_to_end(1 << 20).await.unwrap();
    assert!(answer.len() > 10, "a response came: {answer:?}");
}

#[tokio::test]
async fn a_body_longer_than_its_content_length_is_malformed() {
    let (conn, ..) = raw().await;
    let fields = [POST_ECHO, &[(b"content-length", b"3")]].concat();
    let mut bytes = headers(&fields);
    bytes.extend(frame_bytes(frame::DATA, b"four"));
    let mut recv = request(&conn, &bytes).await;
    expect_reset(&mut recv, H3_MESSAGE_ERROR).await;
}

#[tokio::test]
async fn garbage_never_takes_the_server_down() {
    // Server tasks are spawned, so a panic in one would go unseen: count them.
    static PANICS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        PANICS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        default(info);
    }));
    let (server, id) = quark_server();
    spawn_quark_h3_server(&server);
    let addr = server.local_addr().unwrap();
    let mut x: u32 = 0x9e37_79b9;
    for round in 0..40 {
        let conn = quark_connect(addr, &id).await;
        let len = 1 + (round * 37) % 300;
        let garbage: Vec<u8> = (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect();
        if round % 2 == 0 {
            let _ = request(&conn, &garbage).await;
        } else {
            let _ = uni(&conn, &garbage, true).await;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        conn.close(0, b"next");
    }
    // A well-behaved client is still served.
    get_bytes(&quark_h3_client(addr, &id).await, 1000).await;
    assert_eq!(
        PANICS.load(std::sync::atomic::Ordering::Relaxed),
        0,
        "a task panicked"
    );
}

#[tokio::test]
async fn after_goaway_a_client_sends_no_new_requests() {
    let (server, id) = quark_server();
    let addr = server.local_addr().unwrap();
    tokio::spawn(async move {
        while let Some(conn) = server.accept().await {
            tokio::spawn(async move {
                let mut h3 = quark_h3::Server::new(conn).await.unwrap();
                let (_req, mut stream) = h3.accept().await.unwrap().unwrap();
                h3.shutdown().await.unwrap();
                // The request accepted before GOAWAY is still answered.
                stream
                    .send_response(&http::Response::new(()))
                    .await
                    .unwrap();
                stream.finish().unwrap();
                // Later ones are refused as they come.
                if let Ok(Some(_)) = h3.accept().await {
                    panic!("a request after GOAWAY was accepted");
                }
            });
        }
    });
    let client = quark_h3_client(addr, &id).await;
    let req = http::Request::get("https://localhost/x").body(()).unwrap();
    assert_eq!(exchange(&client, &req).await.0.status(), 200);
    // GOAWAY went on the control stream; wait until the client has read it.
    let mut refused = false;
    for _ in 0..200 {
        if let Err(Error::GoingAway) = client.send_request(&req).await {
            refused = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    assert!(refused, "the client kept sending requests after GOAWAY");

    // A client that ignores GOAWAY has its request rejected, unprocessed.
    let raw = quark_connect(addr, &id).await;
    let mut first = request(&raw, &headers(GET)).await;
    assert!(!first.read_to_end(1 << 20).await.unwrap().is_empty());
    let mut second = request(&raw, &headers(GET)).await;
    expect_reset(&mut second, H3_REQUEST_REJECTED).await;
}

#[tokio::test]
async fn a_head_larger_than_the_peer_accepts_is_not_sent() {
    let (server, id) = quark_server();
    spawn_quark_h3_server(&server);
    let client = quark_h3_client(server.local_addr().unwrap(), &id).await;
    // One exchange first, so the server's SETTINGS have arrived.
    let req = http::Request::get("https://localhost/bytes/1")
        .body(())
        .unwrap();
    exchange(&client, &req).await;
    let big = http::Request::get("https://localhost/bytes/1")
        .header("x-big", "a".repeat(70_000))
        .body(())
        .unwrap();
    match client.send_request(&big).await {
        Err(Error::FieldSectionTooLarge { limit, .. }) => assert_eq!(limit, 64 * 1024),
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("a head over the server's limit was sent"),
    }
}

/// A request with trailers, then the body's end.
fn echo_with_trailers(after: &[u8]) -> Vec<u8> {
    let mut bytes = headers(POST_ECHO);
    bytes.extend(frame_bytes(frame::DATA, b"body"));
    bytes.extend(headers(&[(b"x-trailer", b"1")]));
    bytes.extend_from_slice(after);
    bytes
}

#[tokio::test]
async fn unknown_frames_after_trailers_are_skipped() {
    let (conn, ..) = raw().await;
    // A reserved (greased) frame type after the trailers, as hyperium h3 sends.
    let grease = frame_bytes(0x21 + 0x1f * 7, b"grease");
    let mut recv = request(&conn, &echo_with_trailers(&grease)).await;
    let answer = recv.read_to_end(1 << 20).await.unwrap();
    assert!(
        answer.windows(4).any(|w| w == b"body"),
        "the echo came back"
    );
}

#[tokio::test]
async fn data_after_trailers_is_frame_unexpected() {
    let (conn, ..) = raw().await;
    request(
        &conn,
        &echo_with_trailers(&frame_bytes(frame::DATA, b"late")),
    )
    .await;
    assert_eq!(close_code(&conn).await, H3_FRAME_UNEXPECTED);
}

#[tokio::test]
async fn push_frames_are_id_errors() {
    // CANCEL_PUSH names a push that never was: we allow none.
    let (conn, ..) = raw().await;
    let mut frames = frame_bytes(frame::SETTINGS, &[]);
    frames.extend(frame_bytes(frame::CANCEL_PUSH, &[0x00]));
    let _c = uni(&conn, &control(&frames), false).await;
    assert_eq!(close_code(&conn).await, H3_ID_ERROR);
    // A client's MAX_PUSH_ID may not go down.
    let (conn, ..) = raw().await;
    let mut frames = frame_bytes(frame::SETTINGS, &[]);
    frames.extend(frame_bytes(frame::MAX_PUSH_ID, &[0x08]));
    frames.extend(frame_bytes(frame::MAX_PUSH_ID, &[0x04]));
    let _c = uni(&conn, &control(&frames), false).await;
    assert_eq!(close_code(&conn).await, H3_ID_ERROR);
    // PUSH_PROMISE on a request stream, to a server (in the body the echo reads).
    let (conn, ..) = raw().await;
    let mut bytes = headers(POST_ECHO);
    bytes.extend(frame_bytes(frame::PUSH_PROMISE, &[0x00, 0x00, 0x00]));
    let _r = request(&conn, &bytes).await;
    assert_eq!(close_code(&conn).await, H3_FRAME_UNEXPECTED);
}

#[tokio::test]
async fn a_dropped_request_is_reset_not_finished() {
    let (server, id) = quark_server();
    let addr = server.local_addr().unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let (head_tx, head_rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let conn = server.accept().await.unwrap();
        let mut h3 = quark_h3::Server::new(conn).await.unwrap();
        let (_req, mut stream) = h3.accept().await.unwrap().unwrap();
        let _ = head_tx.send(());
        let mut got = 0;
        let end = loop {
            match stream.recv_data().await {
                Ok(Some(piece)) => got += piece.len(),
                other => break other.map(|_| got),
            }
        };
        let _ = tx.send(end);
    });
    let client = quark_h3_client(addr, &id).await;
    let req = http::Request::post("https://localhost/echo")
        .body(())
        .unwrap();
    let mut s = client.send_request(&req).await.unwrap();
    s.send_data(data(1000, 1)).await.unwrap();
    head_rx.await.unwrap(); // the server has the head
    drop(s); // no finish: the body is cut off
    match tokio::time::timeout(std::time::Duration::from_secs(10), rx).await {
        Ok(Ok(Err(Error::Reset(code)))) => assert_eq!(code, H3_REQUEST_CANCELLED),
        other => panic!("expected a reset, got {other:?}"),
    }
}

#[tokio::test]
async fn a_head_that_never_comes_is_refused() {
    let (server, id) = quark_server();
    let addr = server.local_addr().unwrap();
    tokio::spawn(async move {
        let conn = server.accept().await.unwrap();
        let mut h3 = quark_h3::Server::new(conn).await.unwrap();
        h3.set_head_timeout(std::time::Duration::from_millis(200));
        while let Ok(Some(_)) = h3.accept().await {}
    });
    let raw = quark_connect(addr, &id).await;
    // Half a frame header, then silence.
    let (mut send, mut recv) = raw.open_bi().await.unwrap();
    send.write_all(&[0x01]).await.unwrap();
    expect_reset(&mut recv, H3_REQUEST_REJECTED).await;
}
