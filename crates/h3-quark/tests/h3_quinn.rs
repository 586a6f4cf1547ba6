//! h3 over h3-quark against h3 over quinn (h3-quinn), both ways, in process:
//! the same h3 client and server code on either QUIC stack. GETs of 0 B, 1 KB
//! and 5 MB (in a row and at once) and echoes, checked by SHA-256.

mod common;

use common::*;

#[tokio::test]
async fn h3_client_on_quark_against_h3_quinn_server() {
    let (_quark, id) = quark_server();
    let server = quinn_server(&id);
    let addr = server.local_addr().unwrap();
    tokio::spawn(async move {
        while let Some(incoming) = server.accept().await {
            tokio::spawn(async move {
                if let Ok(conn) = incoming.await {
                    h3_serve(h3_quinn::Connection::new(conn)).await;
                }
            });
        }
    });
    let mut send = h3_quark_client(addr, &id).await;
    h3_client_exchanges(&mut send).await;
}

#[tokio::test]
async fn h3_quinn_client_against_h3_server_on_quark() {
    let (server, id) = quark_server();
    spawn_h3_quark_server(&server);
    let conn = quinn_connect(server.local_addr().unwrap(), &id).await;
    let (mut driver, mut send) = h3::client::new(h3_quinn::Connection::new(conn))
        .await
        .unwrap();
    tokio::spawn(async move { std::future::poll_fn(|cx| driver.poll_close(cx)).await });
    h3_client_exchanges(&mut send).await;
}
