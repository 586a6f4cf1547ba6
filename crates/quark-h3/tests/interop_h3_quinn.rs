//! Interoperation with hyperium's h3 over quinn (both from crates.io): its
//! client against quark-h3's server, and quark-h3's client against its server.
//! Bodies of several sizes both ways, trailers, checked by SHA-256.

mod common;

use bytes::{Buf, Bytes};
use common::*;
use http::{Request, Response};

type H3Stream = h3::server::RequestStream<h3_quinn::BidiStream<Bytes>, Bytes>;

#[tokio::test]
async fn h3_quinn_client_against_quark_server() {
    let (server, id) = quark_server();
    spawn_quark_h3_server(&server);
    let conn = quinn_connect(server.local_addr().unwrap(), &id).await;
    let (mut driver, mut send) = h3::client::new(h3_quinn::Connection::new(conn))
        .await
        .unwrap();
    tokio::spawn(async move { std::future::poll_fn(|cx| driver.poll_close(cx)).await });

    for n in [0usize, 1, 5_000, 2_000_000] {
        let req = Request::get(format!("https://localhost/bytes/{n}"))
            .body(())
            .unwrap();
        let mut s = send.send_request(req).await.unwrap();
        s.finish().await.unwrap();
        let resp = s.recv_response().await.unwrap();
        assert_eq!(resp.status(), 200);
        let mut body = Vec::new();
        while let Some(mut chunk) = s.recv_data().await.unwrap() {
            body.extend_from_slice(&chunk.copy_to_bytes(chunk.remaining()));
        }
        assert_eq!(sha(&body), sha(&data(n, n as u32)), "GET /bytes/{n}");
    }

    let body = data(300_000, 5);
    let req = Request::post("https://localhost/echo").body(()).unwrap();
    let mut s = send.send_request(req).await.unwrap();
    s.send_data(body.clone()).await.unwrap();
    s.finish().await.unwrap();
    assert_eq!(s.recv_response().await.unwrap().status(), 200);
    let mut got = Vec::new();
    while let Some(mut chunk) = s.recv_data().await.unwrap() {
        got.extend_from_slice(&chunk.copy_to_bytes(chunk.remaining()));
    }
    assert_eq!(sha(&got), sha(&body));
    let trailers = s.recv_trailers().await.unwrap().expect("trailers");
    assert_eq!(trailers["x-sha256"], sha(&body).as_str());
}

/// The same two routes, served by h3 over quinn.
async fn h3_answer(req: Request<()>, mut stream: H3Stream) {
    if let Some(n) = req.uri().path().strip_prefix("/bytes/") {
        let n: usize = n.parse().unwrap();
        let resp = Response::builder()
            .header("content-length", n)
            .body(())
            .unwrap();
        stream.send_response(resp).await.unwrap();
        let body = data(n, n as u32);
        for piece in body.chunks(64 * 1024) {
            stream.send_data(body.slice_ref(piece)).await.unwrap();
        }
    } else {
        let mut body = Vec::new();
        while let Some(mut chunk) = stream.recv_data().await.unwrap() {
            body.extend_from_slice(&chunk.copy_to_bytes(chunk.remaining()));
        }
        stream.send_response(Response::new(())).await.unwrap();
        stream.send_data(body.clone().into()).await.unwrap();
        let mut trailers = http::HeaderMap::new();
        trailers.insert("x-sha256", sha(&body).parse().unwrap());
        stream.send_trailers(trailers).await.unwrap();
    }
    stream.finish().await.unwrap();
}

#[tokio::test]
async fn quark_client_against_h3_quinn_server() {
    let (_quark, id) = quark_server();
    let server = quinn_server(&id);
    let addr = server.local_addr().unwrap();
    tokio::spawn(async move {
        while let Some(incoming) = server.accept().await {
            tokio::spawn(async move {
                let conn = incoming.await.unwrap();
                let mut h3 =
                    h3::server::Connection::<_, Bytes>::new(h3_quinn::Connection::new(conn))
                        .await
                        .unwrap();
                while let Ok(Some(resolver)) = h3.accept().await {
                    let (req, stream) = resolver.resolve_request().await.unwrap();
                    tokio::spawn(h3_answer(req, stream));
                }
            });
        }
    });

    let client = quark_h3_client(addr, &id).await;
    // The echo first: h3 sends its one grease frame on the first response
    // stream, here after the trailers.
    let body = data(300_000, 5);
    echo(&client, &body, body.len(), false).await;

    for n in [0usize, 1, 5_000, 2_000_000] {
        get_bytes(&client, n).await;
    }
}
