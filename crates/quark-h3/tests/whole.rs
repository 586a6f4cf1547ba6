//! Whole small messages: `send_response_with_body` and
//! `send_request_with_body` (head, one DATA frame and the end in one write to
//! the stream) on loopback, read by the field API and by the `http`-typed
//! one, with the static QPACK table and the dynamic one; bodies from empty to
//! larger than the windows (the write then waits for room), checked by
//! SHA-256.

mod common;

use common::*;
use http::{Method, StatusCode};
use quark_h3::{Config, RequestStream};

/// `GET /whole/<n>`: `n` bytes in one whole response. `POST /echo`: the
/// request's body back in one.
fn spawn_whole_server(server: &quark::Endpoint, config: Config) {
    spawn_stream_server(server, config, answer);
}

async fn answer(mut stream: RequestStream) -> Result<(), quark_h3::Error> {
    let head = stream.recv_request_head().await?;
    let path = head.path().unwrap_or_default().to_string();
    drop(head);
    // An interim status cannot end a response.
    let interim = stream
        .send_response_with_body(StatusCode::CONTINUE, &[], b"x")
        .await;
    assert!(
        matches!(interim, Err(quark_h3::Error::Usage(_))),
        "{interim:?}"
    );
    let body = match path.strip_prefix("/whole/") {
        Some(n) => {
            let n: usize = n.parse().unwrap();
            data(n, n as u32).to_vec()
        }
        None => body_of(&mut stream).await,
    };
    let len = body.len().to_string();
    let fields: &[(&[u8], &[u8])] = &[(b"content-length", len.as_bytes())];
    stream
        .send_response_with_body(StatusCode::OK, fields, &body)
        .await?;
    assert_eq!(stream.response_status(), Some(StatusCode::OK));
    assert_eq!(stream.body_bytes_sent(), body.len() as u64);
    // Finished already: a later finish is a no-op, more data is refused.
    stream.finish()?;
    assert!(stream.send_data(b"late"[..].into()).await.is_err());
    stream.acked().await
}

/// `POST /echo` of `body` in one whole request; the response read by the
/// field API or the `http`-typed one.
async fn echo(client: &quark_h3::Client, body: &[u8], typed: bool) {
    let len = body.len().to_string();
    let fields: &[(&[u8], &[u8])] = &[(b"content-length", len.as_bytes())];
    let mut s = client
        .send_request_with_body(&Method::POST, "localhost", "/echo", fields, body)
        .await
        .unwrap();
    // The request is finished: finishing again changes nothing.
    s.finish().unwrap();
    if typed {
        let resp = s.recv_response().await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
    } else {
        let head = s.recv_response_head().await.unwrap();
        assert_eq!(head.status(), 200);
        assert_eq!(head.content_length(), Some(body.len() as u64));
    }
    let got = body_of(&mut s).await;
    assert_eq!(sha(&got), sha(body), "echo of {} bytes", body.len());
}

/// `GET /whole/<n>`, the request whole too (no body: no DATA frame).
async fn get(client: &quark_h3::Client, n: usize) {
    let path = format!("/whole/{n}");
    let mut s = client
        .send_request_with_body(&Method::GET, "localhost", &path, &[], &[])
        .await
        .unwrap();
    let head = s.recv_response_head().await.unwrap();
    assert_eq!(head.content_length(), Some(n as u64));
    let got = body_of(&mut s).await;
    assert_eq!(sha(&got), sha(&data(n, n as u32)), "GET {path}");
}

async fn whole_messages(config: Config) {
    let (server, id) = quark_server();
    spawn_whole_server(&server, config);
    let conn = quark_connect(server.local_addr().unwrap(), &id).await;
    let client = quark_h3::Client::with_config(conn, &config).await.unwrap();
    for n in [0, 1, 2048, 100_000, 3_000_000] {
        get(&client, n).await;
        echo(&client, &data(n, 7 + n as u32), n % 2 == 0).await;
    }
    // Many in a row and at once: streams and buffers go round.
    for i in 0..100 {
        echo(&client, &data(2048 + i, i as u32), i % 3 == 0).await;
    }
    let mut set = tokio::task::JoinSet::new();
    for i in 0..32 {
        let client = client.clone();
        set.spawn(async move { get(&client, 1000 + 97 * i).await });
    }
    while let Some(r) = set.join_next().await {
        r.unwrap();
    }
}

#[tokio::test]
async fn whole_messages_with_the_static_table() {
    whole_messages(Config::default()).await;
}

#[tokio::test]
async fn whole_messages_with_the_dynamic_table() {
    whole_messages(Config::dynamic_qpack()).await;
}
