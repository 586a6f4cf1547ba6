//! h3 over h3-quark against quark's own HTTP/3 (quark-h3), both ways: GETs
//! of 0 B, 1 KB and 5 MB (in a row and at once) and echoes, checked by SHA-256.

mod common;

use common::*;

#[tokio::test]
async fn h3_client_on_quark_against_quark_h3_server() {
    let (server, id) = quark_server();
    spawn_quark_h3_server(&server);
    let mut send = h3_quark_client(server.local_addr().unwrap(), &id).await;
    h3_client_exchanges(&mut send).await;
}

#[tokio::test]
async fn quark_h3_client_against_h3_server_on_quark() {
    let (server, id) = quark_server();
    spawn_h3_quark_server(&server);
    let client = quark_h3_client(server.local_addr().unwrap(), &id).await;
    for n in BODY_SIZES.iter().chain(&BODY_SIZES) {
        get_bytes(&client, *n).await;
    }
    for n in BODY_SIZES {
        echo(&client, &data(n, 9), 64 * 1024, n % 2 == 0).await;
    }
    client.connection().close(0x100, b"done");
}
