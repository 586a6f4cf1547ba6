//! Shared by h3-quark's tests: quark-h3's test helpers (endpoints of quark
//! and quinn on loopback, a quark-h3 server, the third-party peers), and the
//! same two routes served and requested through hyperium h3, generic over
//! the QUIC layer so h3-quark and h3-quinn run the very same code.
//!
//! Routes: `GET /bytes/<n>` answers `n` deterministic bytes (content-length
//! set); `POST /echo` answers the request body, with its SHA-256 as the
//! trailer `x-sha256`.

#![allow(dead_code)]

#[path = "../../../quark-h3/tests/common/mod.rs"]
mod quark_h3_common;

pub(crate) use quark_h3_common::*;

use bytes::{Buf, Bytes};
use h3::client::SendRequest;
use h3::quic;
use h3::server::RequestStream;
use http::{Request, Response};
use quark::Endpoint;

/// Body sizes the h3 clients ask for: empty, 1 KB, 5 MB.
pub(crate) const BODY_SIZES: [usize; 3] = [0, 1_000, 5_000_000];

/// An h3 body read to its end.
pub(crate) async fn recv_body<S, B>(
    s: &mut h3::client::RequestStream<S, B>,
) -> Result<Vec<u8>, h3::error::StreamError>
where
    S: quic::RecvStream,
    B: Buf,
{
    let mut body = Vec::new();
    while let Some(mut chunk) = s.recv_data().await? {
        body.extend_from_slice(&chunk.copy_to_bytes(chunk.remaining()));
    }
    Ok(body)
}

/// `GET /bytes/<n>` through an h3 client: status 200, content-length and
/// the body checked by SHA-256.
pub(crate) async fn h3_get<O>(send: &mut SendRequest<O, Bytes>, n: usize)
where
    O: quic::OpenStreams<Bytes>,
{
    let req = Request::get(format!("https://localhost/bytes/{n}"))
        .body(())
        .unwrap();
    let mut s = send.send_request(req).await.unwrap();
    s.finish().await.unwrap();
    let resp = s.recv_response().await.unwrap();
    assert_eq!(resp.status(), 200, "GET /bytes/{n}");
    assert_eq!(resp.headers()["content-length"], n.to_string().as_str());
    let body = recv_body(&mut s).await.unwrap();
    assert_eq!(sha(&body), sha(&data(n, n as u32)), "GET /bytes/{n}");
}

/// `POST /echo` of `body` through an h3 client, sent in 64 KiB DATA frames:
/// the same body back and its SHA-256 as the trailer.
pub(crate) async fn h3_echo<O>(send: &mut SendRequest<O, Bytes>, body: &Bytes)
where
    O: quic::OpenStreams<Bytes>,
{
    let req = Request::post("https://localhost/echo").body(()).unwrap();
    let mut s = send.send_request(req).await.unwrap();
    for piece in body.chunks(64 * 1024) {
        s.send_data(body.slice_ref(piece)).await.unwrap();
    }
    s.finish().await.unwrap();
    assert_eq!(s.recv_response().await.unwrap().status(), 200, "POST /echo");
    let got = recv_body(&mut s).await.unwrap();
    assert_eq!(sha(&got), sha(body), "POST /echo");
    let trailers = s.recv_trailers().await.unwrap().expect("trailers");
    assert_eq!(trailers["x-sha256"], sha(body).as_str());
}

/// What every h3 client test asks on one connection: each body size, twice
/// in a row, then three at once, then echoes of 0 B, 1 KB and 5 MB.
pub(crate) async fn h3_client_exchanges<O>(send: &mut SendRequest<O, Bytes>)
where
    O: quic::OpenStreams<Bytes> + Clone,
{
    for n in BODY_SIZES.iter().chain(&BODY_SIZES) {
        h3_get(send, *n).await;
    }
    let concurrent = BODY_SIZES.map(|n| {
        let mut send = send.clone();
        async move { h3_get(&mut send, n).await }
    });
    let [a, b, c] = concurrent;
    tokio::join!(a, b, c);
    for n in BODY_SIZES {
        h3_echo(send, &data(n, 7)).await;
    }
}

/// Answers one request of the two routes through an h3 server. A peer's
/// misbehaviour ends it with an error, not a panic.
pub(crate) async fn h3_answer<S>(
    req: Request<()>,
    mut stream: RequestStream<S, Bytes>,
) -> Result<(), h3::error::StreamError>
where
    S: quic::SendStream<Bytes> + quic::RecvStream,
{
    let path = req.uri().path().to_string();
    if let Some(n) = path.strip_prefix("/bytes/") {
        let n: usize = n.parse().unwrap_or(0);
        let resp = Response::builder()
            .header("content-length", n)
            .body(())
            .unwrap();
        stream.send_response(resp).await?;
        let body = data(n, n as u32);
        for piece in body.chunks(64 * 1024) {
            stream.send_data(body.slice_ref(piece)).await?;
        }
    } else if path == "/echo" {
        let mut body = Vec::new();
        while let Some(mut chunk) = stream.recv_data().await? {
            body.extend_from_slice(&chunk.copy_to_bytes(chunk.remaining()));
        }
        stream.send_response(Response::new(())).await?;
        stream.send_data(body.clone().into()).await?;
        let mut trailers = http::HeaderMap::new();
        trailers.insert("x-sha256", sha(&body).parse().unwrap());
        stream.send_trailers(trailers).await?;
    } else {
        let resp = Response::builder().status(404).body(()).unwrap();
        stream.send_response(resp).await?;
    }
    stream.finish().await
}

/// Serves one connection's requests with an h3 server (each in its own task).
pub(crate) async fn h3_serve<C>(conn: C)
where
    C: quic::Connection<Bytes> + Send + 'static,
    C::BidiStream: Send + 'static,
{
    let Ok(mut h3) = h3::server::Connection::<C, Bytes>::new(conn).await else {
        return;
    };
    while let Ok(Some(resolver)) = h3.accept().await {
        tokio::spawn(async move {
            if let Ok((req, stream)) = resolver.resolve_request().await {
                let _ = h3_answer(req, stream).await;
            }
        });
    }
}

/// Serves every connection `server` accepts with h3 over h3-quark.
pub(crate) fn spawn_h3_quark_server(server: &Endpoint) {
    let server = server.clone();
    tokio::spawn(async move {
        while let Some(conn) = server.accept().await {
            tokio::spawn(h3_serve(h3_quark::Connection::new(conn)));
        }
    });
}

/// An h3 client on h3-quark over a fresh quark connection to `addr`; its
/// driver runs in a task.
pub(crate) async fn h3_quark_client(
    addr: std::net::SocketAddr,
    id: &quark::tls::Identity,
) -> SendRequest<h3_quark::OpenStreams, Bytes> {
    let conn = quark_connect(addr, id).await;
    let (mut driver, send) = h3::client::new(h3_quark::Connection::new(conn))
        .await
        .unwrap();
    tokio::spawn(async move { std::future::poll_fn(|cx| driver.poll_close(cx)).await });
    send
}
