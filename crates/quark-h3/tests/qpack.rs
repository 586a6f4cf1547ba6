//! QPACK's dynamic table in quark-h3: against itself with the table on both
//! sides (browser-like heads round-tripped, bodies checked byte for byte,
//! both tables used and acknowledged), and a raw peer whose encoder stream
//! comes late, so the server's decoder blocks and then continues.

mod common;

use std::time::Duration;

use common::*;
use http::{Request, Response};
use quark_h3::frame;

/// Browser-like request headers for request `i`: most repeat, some do not.
fn browser_headers(i: usize) -> Vec<(&'static str, String)> {
    vec![
        (
            "user-agent",
            "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0".into(),
        ),
        ("accept", "text/css,*/*;q=0.1".into()),
        ("accept-language", "en-US,en;q=0.5".into()),
        ("accept-encoding", "gzip, deflate, br, zstd".into()),
        (
            "cookie",
            "session=0123456789abcdef0123456789abcdef; theme=dark".into(),
        ),
        ("sec-fetch-dest", "style".into()),
        ("x-request-id", format!("req-{i:08}")),
    ]
}

/// A server that answers each request with its regular headers echoed back
/// (plus server / cache-control, which repeat) and a body made from its path.
fn spawn_echo_server(server: &quark::Endpoint) {
    let server = server.clone();
    tokio::spawn(async move {
        while let Some(conn) = server.accept().await {
            tokio::spawn(async move {
                let mut h3 = quark_h3::Server::with_config(conn, &h3_config())
                    .await
                    .unwrap();
                while let Ok(Some((req, mut stream))) = h3.accept().await {
                    tokio::spawn(async move {
                        let body = data(5000, req.uri().path().len() as u32 * 7919);
                        let mut resp = Response::builder()
                            .header("server", "quark")
                            .header("cache-control", "max-age=3600")
                            .header("content-length", body.len());
                        for (k, v) in req.headers() {
                            resp = resp.header(format!("x-echo-{k}"), v);
                        }
                        let resp = resp.body(()).unwrap();
                        stream.send_response(&resp).await?;
                        stream.send_data(body).await?;
                        stream.finish()?;
                        // Keep the stream until the response is delivered.
                        stream.acked().await
                    });
                }
            });
        }
    });
}

#[tokio::test]
async fn dynamic_table_both_ways_round_trips_heads_and_bodies() {
    let (server, id) = quark_server();
    spawn_echo_server(&server);
    let client = quark_h3_client(server.local_addr().unwrap(), &id).await;
    // Batches of concurrent requests: sections may reference entries the
    // peer has not acknowledged yet (blocking within the limit).
    for batch in 0..6 {
        let mut set = tokio::task::JoinSet::new();
        for j in 0..10 {
            let i = batch * 10 + j;
            let client = client.clone();
            set.spawn(async move {
                let path = format!("/style/{}.css", "x".repeat(i % 7 + 1));
                let mut req = Request::get(format!("https://localhost{path}"));
                for (k, v) in browser_headers(i) {
                    req = req.header(k, v);
                }
                let (resp, mut s) = exchange(&client, &req.body(()).unwrap()).await;
                assert_eq!(resp.status(), 200);
                for (k, v) in browser_headers(i) {
                    assert_eq!(resp.headers()[format!("x-echo-{k}").as_str()], v.as_str());
                }
                assert_eq!(resp.headers()["server"], "quark");
                let body = body_of(&mut s).await;
                assert_eq!(sha(&body), sha(&data(5000, path.len() as u32 * 7919)));
            });
        }
        while let Some(r) = set.join_next().await {
            r.unwrap();
        }
    }
    // Both encoders inserted, and what the client inserted was acknowledged.
    let (ours, acked, theirs) = client.qpack_inserts();
    assert!(ours >= 6, "client inserts: {ours}");
    assert!(theirs >= 2, "server inserts: {theirs}");
    // Acknowledgments travel on their own stream: give them a moment.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    let mut acked = acked;
    while acked < ours && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
        acked = client.qpack_inserts().1;
    }
    assert_eq!(acked, ours);
}

fn frame_bytes(ty: u64, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    frame::put_frame(&mut out, ty, payload);
    out
}

#[tokio::test]
async fn a_blocked_request_waits_for_the_late_insert() {
    let (server, id) = quark_server();
    spawn_quark_h3_server(&server);
    let conn = quark_connect(server.local_addr().unwrap(), &id).await;
    // Our control stream with empty SETTINGS.
    let mut control = conn.open_uni().await.unwrap();
    let mut c = vec![0x00];
    frame::put_frame(&mut c, frame::SETTINGS, &[]);
    control.write_all(&c).await.unwrap();
    // GET /bytes/10 with :authority from dynamic entry 0, not inserted yet:
    // Required Insert Count 1 (encoded 2), Base 1; :method GET (static 17),
    // :scheme https (static 23), dynamic relative 0, :path by static name 1.
    let mut block = vec![0x02, 0x00, 0xd1, 0xd7, 0x80, 0x51, 0x09];
    block.extend_from_slice(b"/bytes/10");
    let (mut send, mut recv) = conn.open_bi().await.unwrap();
    send.write_all(&frame_bytes(frame::HEADERS, &block))
        .await
        .unwrap();
    send.finish().unwrap();
    // Nothing comes while the insert is missing.
    let early = tokio::time::timeout(Duration::from_millis(300), recv.read_to_end(1 << 20)).await;
    assert!(early.is_err(), "answered before the insert: {early:?}");
    // Encoder stream: capacity 4096, insert :authority=localhost.
    let mut enc = vec![0x02, 0x3f, 0xe1, 0x1f, 0xc0, 0x09];
    enc.extend_from_slice(b"localhost");
    let mut encoder = conn.open_uni().await.unwrap();
    encoder.write_all(&enc).await.unwrap();
    let answer = tokio::time::timeout(Duration::from_secs(10), recv.read_to_end(1 << 20))
        .await
        .unwrap()
        .unwrap();
    // HEADERS then DATA with the 10 bytes.
    assert!(answer.ends_with(&data(10, 10)), "{answer:?}");
    // The server's decoder stream acknowledges the section on stream 0.
    loop {
        let mut uni = tokio::time::timeout(Duration::from_secs(10), conn.accept_uni())
            .await
            .unwrap()
            .unwrap();
        if read(&mut uni, 1).await != [0x03] {
            continue;
        }
        let mut acks = Vec::new();
        while !acks.ends_with(&[0x80]) {
            acks.extend_from_slice(&read(&mut uni, 64).await);
        }
        assert!(acks == [0x01, 0x80] || acks == [0x80], "{acks:?}");
        break;
    }
}

#[tokio::test]
async fn a_blocked_request_reset_by_the_client_is_cancelled() {
    let (server, id) = quark_server();
    spawn_quark_h3_server(&server);
    let conn = quark_connect(server.local_addr().unwrap(), &id).await;
    let mut control = conn.open_uni().await.unwrap();
    let mut c = vec![0x00];
    frame::put_frame(&mut c, frame::SETTINGS, &[]);
    control.write_all(&c).await.unwrap();
    // A head that needs dynamic entry 0, which never comes; then a reset.
    let block = [0x02, 0x00, 0xd1, 0xd7, 0x80, 0xc1];
    let (mut send, _recv) = conn.open_bi().await.unwrap();
    send.write_all(&frame_bytes(frame::HEADERS, &block))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    send.reset(quark_h3::error::H3_REQUEST_CANCELLED).unwrap();
    // RFC 9204 §4.4.2: the server's decoder stream says Stream
    // Cancellation (stream 0): 0x40.
    loop {
        let mut uni = tokio::time::timeout(Duration::from_secs(10), conn.accept_uni())
            .await
            .unwrap()
            .unwrap();
        if read(&mut uni, 1).await != [0x03] {
            continue;
        }
        assert_eq!(read(&mut uni, 64).await, [0x40]);
        break;
    }
}

/// The next chunk of `uni`, at most `max` bytes, within 10 s.
async fn read(uni: &mut quark::RecvStream, max: usize) -> Vec<u8> {
    tokio::time::timeout(Duration::from_secs(10), uni.read_chunk(max))
        .await
        .unwrap()
        .unwrap()
        .unwrap()
}
