//! The field API (`recv_request_head`, `send_response_fields`,
//! `send_request_fields`, `recv_response_head`) on loopback, with QPACK's
//! static table only and with the dynamic table, mixed with the `http`-typed
//! API at the other end: bodies checked by SHA-256, heads round-tripped.

mod common;

use common::*;
use http::{Method, StatusCode};
use quark_h3::{Config, RequestStream};

/// Answers `GET /bytes/<n>` (n bytes, content-length set) and `POST /echo`
/// (the body back, its request's regular fields echoed as `x-echo-<name>`)
/// through the field API, on streams taken with `accept_stream`.
fn spawn_head_server(server: &quark::Endpoint, config: Config) {
    spawn_stream_server(server, config, answer);
}

async fn answer(mut stream: RequestStream) -> Result<(), quark_h3::Error> {
    let head = stream.recv_request_head().await?;
    let path = head.path().unwrap_or_default().to_string();
    if let Some(n) = path.strip_prefix("/bytes/") {
        assert_eq!(head.method(), Method::GET);
        let n: usize = n.parse().unwrap();
        let len = n.to_string();
        stream
            .send_response_fields(StatusCode::OK, &[(b"content-length", len.as_bytes())])
            .await?;
        stream.send_data(data(n, n as u32)).await?;
        stream.finish()?;
    } else if path == "/echo" {
        assert_eq!(head.method(), Method::POST);
        let echoed: Vec<(Vec<u8>, Vec<u8>)> = head
            .headers()
            .filter(|(n, _)| *n != b"content-length")
            .map(|(n, v)| ([&b"x-echo-"[..], n].concat(), v.to_vec()))
            .collect();
        let body = body_of(&mut stream).await;
        let len = body.len().to_string();
        let mut fields: Vec<(&[u8], &[u8])> = vec![(b"content-length", len.as_bytes())];
        fields.extend(echoed.iter().map(|(n, v)| (&n[..], &v[..])));
        stream.send_response_fields(StatusCode::OK, &fields).await?;
        stream.send_data(body.into()).await?;
        stream.finish()?;
    } else {
        stream
            .send_response_fields(StatusCode::NOT_FOUND, &[])
            .await?;
        stream.finish()?;
    }
    stream.acked().await
}

/// `GET /bytes/<n>` through the field API: the body checked byte for byte.
async fn get(client: &quark_h3::Client, n: usize) {
    let path = format!("/bytes/{n}");
    let mut s = client
        .send_request_fields(&Method::GET, "localhost", &path, &[])
        .await
        .unwrap();
    s.finish().unwrap();
    let resp = s.recv_response_head().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.content_length(), Some(n as u64));
    let body = body_of(&mut s).await;
    assert_eq!(sha(&body), sha(&data(n, n as u32)), "GET {path}");
}

const BROWSER: &[(&[u8], &[u8])] = &[
    (
        b"user-agent",
        b"Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0",
    ),
    (b"accept", b"text/css,*/*;q=0.1"),
    (b"accept-encoding", b"gzip, deflate, br, zstd"),
    (
        b"cookie",
        b"session=0123456789abcdef0123456789abcdef; theme=dark",
    ),
    (b"x-empty", b""),
];

/// `POST /echo` of `body` with the browser's fields: the body and the fields
/// come back.
async fn echo(client: &quark_h3::Client, body: &[u8]) {
    let len = body.len().to_string();
    let mut fields = vec![(&b"content-length"[..], len.as_bytes())];
    fields.extend_from_slice(BROWSER);
    let mut s = client
        .send_request_fields(&Method::POST, "localhost", "/echo", &fields)
        .await
        .unwrap();
    for piece in body.chunks(7000) {
        s.send_data(piece.to_vec().into()).await.unwrap();
    }
    s.finish().unwrap();
    let resp = s.recv_response_head().await.unwrap();
    assert_eq!(resp.status(), 200);
    for (name, value) in BROWSER {
        let echoed = [&b"x-echo-"[..], name].concat();
        assert_eq!(resp.header(&echoed), Some(*value), "{echoed:?}");
    }
    let got = body_of(&mut s).await;
    assert_eq!(sha(&got), sha(body));
}

async fn field_api_both_ends(config: Config) {
    let (server, id) = quark_server();
    spawn_head_server(&server, config);
    let conn = quark_connect(server.local_addr().unwrap(), &id).await;
    let client = quark_h3::Client::with_config(conn, &config).await.unwrap();
    for n in [0, 1, 2048, 100_000] {
        get(&client, n).await;
    }
    // Many requests: buffers reused across streams hold nothing stale.
    for i in 0..50 {
        echo(&client, &data(1000 + i * 37, i as u32)).await;
        get(&client, 3000 + i).await;
    }
    let mut set = tokio::task::JoinSet::new();
    for i in 0..32 {
        let client = client.clone();
        set.spawn(async move { get(&client, 10_000 + i).await });
    }
    while let Some(r) = set.join_next().await {
        r.unwrap();
    }
    let mut s = client
        .send_request_fields(&Method::GET, "localhost", "/nothing", &[])
        .await
        .unwrap();
    s.finish().unwrap();
    assert_eq!(s.recv_response_head().await.unwrap().status(), 404);
    assert!(s.recv_data().await.unwrap().is_none());
    // With the dynamic table on, the browser's fields went through it.
    let inserted = client.qpack_inserts().0;
    assert_eq!(
        inserted > 0,
        config.qpack_max_table_capacity > 0,
        "{inserted}"
    );
}

#[tokio::test]
async fn field_api_with_the_static_table() {
    field_api_both_ends(Config::default()).await;
}

#[tokio::test]
async fn field_api_with_the_dynamic_table() {
    field_api_both_ends(Config::dynamic_qpack()).await;
}

#[tokio::test]
async fn field_api_meets_the_http_types() {
    for config in [Config::default(), Config::dynamic_qpack()] {
        // The field API's client against the `http`-typed server (common).
        let (server, id) = quark_server();
        spawn_quark_h3_server(&server);
        let conn = quark_connect(server.local_addr().unwrap(), &id).await;
        let client = quark_h3::Client::with_config(conn, &config).await.unwrap();
        for n in [0, 5000] {
            let path = format!("/bytes/{n}");
            let mut s = client
                .send_request_fields(&Method::GET, "localhost", &path, BROWSER)
                .await
                .unwrap();
            s.finish().unwrap();
            let resp = s.recv_response_head().await.unwrap();
            assert_eq!(resp.content_length(), Some(n as u64));
            assert_eq!(sha(&body_of(&mut s).await), sha(&data(n, n as u32)));
        }

        // The `http`-typed client against the field API's server.
        let (server, id) = quark_server();
        spawn_head_server(&server, config);
        let conn = quark_connect(server.local_addr().unwrap(), &id).await;
        let client = quark_h3::Client::with_config(conn, &config).await.unwrap();
        let body = data(30_000, 5);
        let mut req = http::Request::post("https://localhost/echo")
            .header("content-length", body.len())
            .header("x-custom", "value")
            .header("x-custom", "second");
        for (n, v) in BROWSER {
            req = req.header(*n, *v);
        }
        let mut s = client.send_request(&req.body(()).unwrap()).await.unwrap();
        s.send_data(body.clone()).await.unwrap();
        s.finish().unwrap();
        let resp = s.recv_response().await.unwrap();
        assert_eq!(resp.status(), 200);
        let echoed: Vec<_> = resp.headers().get_all("x-echo-x-custom").iter().collect();
        assert_eq!(echoed, ["value", "second"]);
        assert_eq!(resp.headers()["x-echo-cookie"].as_bytes(), BROWSER[3].1);
        assert_eq!(sha(&body_of(&mut s).await), sha(&body));
    }
}

#[tokio::test]
async fn bad_heads_are_refused_before_a_stream_opens() {
    let (server, id) = quark_server();
    spawn_head_server(&server, Config::default());
    let conn = quark_connect(server.local_addr().unwrap(), &id).await;
    let client = quark_h3::Client::new(conn).await.unwrap();
    for (path, fields) in [
        ("/x", &[(&b"Upper"[..], &b"x"[..])][..]),
        ("/x", &[(b"connection", b"close")]),
        ("/x", &[(b"x", b"a\r\nb")]),
        ("", &[]),
        ("/a b", &[]),
    ] {
        let r = client
            .send_request_fields(&Method::GET, "localhost", path, fields)
            .await;
        assert!(r.is_err(), "{path:?} {fields:?}");
    }
    let r = client
        .send_request_fields(&Method::CONNECT, "localhost", "/", &[])
        .await;
    assert!(matches!(r, Err(quark_h3::Error::Usage(_))));
    // The connection is still good.
    get(&client, 100).await;
}

#[tokio::test]
async fn a_body_longer_than_its_content_length_is_a_message_error() {
    let (server, id) = quark_server();
    let server2 = server.clone();
    let got = tokio::spawn(async move {
        let conn = server2.accept().await.unwrap();
        let h3 = quark_h3::Server::new(conn).await.unwrap();
        let mut s = h3.accept_stream().await.unwrap().unwrap();
        let head = s.recv_request_head().await.unwrap();
        assert_eq!(head.content_length(), Some(3));
        let mut err = None;
        loop {
            match s.recv_data().await {
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(e) => {
                    err = Some(e);
                    break;
                }
            }
        }
        err
    });
    let conn = quark_connect(server.local_addr().unwrap(), &id).await;
    let client = quark_h3::Client::new(conn).await.unwrap();
    let mut s = client
        .send_request_fields(
            &Method::POST,
            "localhost",
            "/echo",
            &[(b"content-length", b"3")],
        )
        .await
        .unwrap();
    s.send_data(data(10, 1)).await.unwrap();
    s.finish().unwrap();
    match got.await.unwrap() {
        Some(quark_h3::Error::Stream { code, .. }) => {
            assert_eq!(code, quark_h3::error::H3_MESSAGE_ERROR)
        }
        other => panic!("{other:?}"),
    }
}
