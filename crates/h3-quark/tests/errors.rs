//! Errors through h3-quark reach h3 with their meaning: a peer's
//! RESET_STREAM and STOP_SENDING as `RemoteTerminate` with the peer's code,
//! a peer's application CONNECTION_CLOSE as `ApplicationClose` with its code.

mod common;

use bytes::Bytes;
use common::*;
use h3::error::{Code, StreamError};
use http::{Request, Response};
use tokio::sync::oneshot;

type BoxFuture = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// The server of one connection: `act` gets each resolved request stream and
/// the quark connection underneath.
fn spawn_server<F>(server: &quark::Endpoint, act: F)
where
    F: Fn(
            h3::server::RequestStream<h3_quark::BidiStream<Bytes>, Bytes>,
            quark::Connection,
        ) -> BoxFuture
        + Send
        + Sync
        + 'static,
{
    let server = server.clone();
    tokio::spawn(async move {
        let conn = server.accept().await.unwrap();
        let quic = conn.clone();
        let mut h3 = h3::server::Connection::<_, Bytes>::new(h3_quark::Connection::new(conn))
            .await
            .unwrap();
        while let Ok(Some(resolver)) = h3.accept().await {
            let (_req, stream) = resolver.resolve_request().await.unwrap();
            tokio::spawn(act(stream, quic.clone()));
        }
    });
}

fn get(path: &str) -> Request<()> {
    Request::get(format!("https://localhost{path}"))
        .body(())
        .unwrap()
}

#[tokio::test]
async fn server_reset_is_remote_terminate_with_its_code() {
    let (server, id) = quark_server();
    spawn_server(&server, |mut stream, _| {
        Box::pin(async move {
            // RESET_STREAM with H3_REQUEST_REJECTED (RFC 9114 §4.1.1).
            stream.stop_stream(Code::H3_REQUEST_REJECTED);
            std::future::pending::<()>().await;
        })
    });
    let mut send = h3_quark_client(server.local_addr().unwrap(), &id).await;
    let mut s = send.send_request(get("/reset")).await.unwrap();
    s.finish().await.unwrap();
    match s.recv_response().await {
        Err(StreamError::RemoteTerminate { code, .. }) => {
            assert_eq!(code, Code::H3_REQUEST_REJECTED)
        }
        other => panic!("expected RemoteTerminate, got {other:?}"),
    }
}

#[tokio::test]
async fn client_stop_sending_is_remote_terminate_on_server_writes() {
    let (server, id) = quark_server();
    let (tx, rx) = oneshot::channel();
    let tx = std::sync::Mutex::new(Some(tx));
    spawn_server(&server, move |mut stream, _| {
        let tx = tx.lock().unwrap().take();
        Box::pin(async move {
            let resp = Response::builder().body(()).unwrap();
            stream.send_response(resp).await.unwrap();
            // Writes until the client's STOP_SENDING arrives (an endless body).
            let err = loop {
                if let Err(e) = stream.send_data(Bytes::from(vec![7; 64 * 1024])).await {
                    break e;
                }
            };
            let _ = tx.unwrap().send(err);
        })
    });
    let mut send = h3_quark_client(server.local_addr().unwrap(), &id).await;
    let mut s = send.send_request(get("/endless")).await.unwrap();
    s.finish().await.unwrap();
    assert_eq!(s.recv_response().await.unwrap().status(), 200);
    s.stop_sending(Code::H3_REQUEST_CANCELLED);
    match rx.await.unwrap() {
        StreamError::RemoteTerminate { code, .. } => {
            assert_eq!(code, Code::H3_REQUEST_CANCELLED)
        }
        other => panic!("expected RemoteTerminate, got {other:?}"),
    }
}

#[tokio::test]
async fn connection_close_is_application_close_with_its_code() {
    let (server, id) = quark_server();
    spawn_server(&server, |_stream, quic| {
        Box::pin(async move {
            quic.close(Code::H3_EXCESSIVE_LOAD.value(), b"busy");
        })
    });
    let mut send = h3_quark_client(server.local_addr().unwrap(), &id).await;
    let mut s = send.send_request(get("/close")).await.unwrap();
    s.finish().await.unwrap();
    // h3 keeps these variants private: its Debug form names the variant and
    // the code (`ApplicationClose(H3_EXCESSIVE_LOAD)`).
    let err = s
        .recv_response()
        .await
        .expect_err("the connection was closed");
    let text = format!("{err:?}");
    assert!(
        text.contains("Remote(ApplicationClose(H3_EXCESSIVE_LOAD))"),
        "expected ApplicationClose with H3_EXCESSIVE_LOAD, got {text}"
    );
    assert!(!err.is_h3_no_error());
    // Later requests fail too, and nothing hangs.
    let again = send.send_request(get("/again")).await;
    let err = again.err().expect("a request on a closed connection");
    assert!(format!("{err:?}").contains("ConnectionError"), "{err:?}");
}
