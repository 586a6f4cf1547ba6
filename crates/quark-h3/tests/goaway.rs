//! GOAWAY from the file server (RFC 9114 §5.2): on a drain signal it sends
//! GOAWAY, an in-flight 10 MB download still ends byte-exact, a request after
//! GOAWAY is refused as retryable, and the connection closes with H3_NO_ERROR;
//! and a request that raced GOAWAY above its ID is reported retryable.

mod common;

use common::*;
use quark::ConnectionError;
use quark_h3::error::H3_NO_ERROR;

#[tokio::test]
async fn goaway_finishes_in_flight_and_refuses_new() {
    let root = std::env::temp_dir().join(format!("quark-h3-goaway-{}", std::process::id()));
    std::fs::create_dir_all(&root).unwrap();
    let file = data(10 << 20, 5);
    std::fs::write(root.join("big.bin"), &file).unwrap();

    let (server, id) = quark_server();
    let addr = server.local_addr().unwrap();
    let (drain, drain_rx) = tokio::sync::watch::channel(false);
    let served = root.clone();
    tokio::spawn(async move {
        while let Some(conn) = server.accept().await {
            let options = quark_h3::files::FileOptions::default();
            let files =
                quark_h3::files::serve_files(conn, served.clone(), options, Some(drain_rx.clone()));
            tokio::spawn(files);
        }
    });
    let client = quark_h3_client(addr, &id).await;
    let req = http::Request::get(format!("https://localhost:{}/big.bin", addr.port()))
        .body(())
        .unwrap();
    let (resp, mut download) = exchange(&client, &req).await;
    assert_eq!(resp.status(), 200);
    let mut body = download.recv_data().await.unwrap().unwrap().to_vec();
    assert!(body.len() < file.len(), "the download is still in flight");

    drain.send_replace(true);
    let mut waited = 0;
    while client.goaway_id().is_none() {
        // Keep the download moving while GOAWAY comes.
        let piece = download.recv_data().await.unwrap().expect("more body");
        body.extend_from_slice(&piece);
        waited += 1;
        assert!(waited < 100_000, "no GOAWAY");
    }
    // The download is stream 0: GOAWAY names the next one.
    assert_eq!(client.goaway_id(), Some(4));
    let refused = client.send_request(&req).await.err().expect("refused");
    assert!(refused.is_retryable(), "{refused:?}");

    body.extend_from_slice(&body_of(&mut download).await);
    assert_eq!(body.len(), file.len());
    assert_eq!(sha(&body), sha(&file));

    // All answered: the server closes, gracefully.
    let closed = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        client.connection().closed(),
    );
    match closed.await {
        Ok(ConnectionError::ApplicationClosed { code, .. }) => assert_eq!(code, H3_NO_ERROR),
        other => panic!("expected a close with H3_NO_ERROR, got {other:?}"),
    }
    let _ = std::fs::remove_dir_all(&root);
}

/// A request the client sent before it saw GOAWAY, on a stream at or above
/// its ID, is refused unprocessed (H3_REQUEST_REJECTED): retryable; the one
/// below is answered.
#[tokio::test]
async fn a_request_beyond_goaway_is_retryable() {
    let (server, id) = quark_server();
    let addr = server.local_addr().unwrap();
    tokio::spawn(async move {
        let conn = server.accept().await.unwrap();
        let h3 = quark_h3::Server::new(conn).await.unwrap();
        // Only stream 0 is taken before GOAWAY, which then names stream 4.
        let mut first = h3.accept_stream().await.unwrap().unwrap();
        h3.shutdown().await.unwrap();
        first.recv_request().await.unwrap();
        first.send_response(&http::Response::new(())).await.unwrap();
        first.finish().unwrap();
        // Later streams are refused as they come.
        while let Ok(Some(_)) = h3.accept_stream().await {}
        let _ = first.acked().await;
    });
    let client = quark_h3_client(addr, &id).await;
    let req = http::Request::get("https://localhost/x").body(()).unwrap();
    let mut first = client.send_request(&req).await.unwrap();
    first.finish().unwrap();
    match client.send_request(&req).await {
        // GOAWAY came first: refused before it went out.
        Err(e) => assert!(e.is_retryable(), "{e:?}"),
        Ok(mut second) => {
            assert_eq!(second.id(), 4);
            second.finish().unwrap();
            let e = second.recv_response().await.expect_err("rejected");
            assert!(e.is_retryable(), "{e:?}");
        }
    }
    assert_eq!(first.recv_response().await.unwrap().status(), 200);
    assert!(first.recv_data().await.unwrap().is_none());
}
