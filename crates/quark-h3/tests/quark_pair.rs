//! quark-h3 against itself on loopback: bodies of every size both ways,
//! trailers, many requests at once, unknown routes; every body checked by SHA-256.

mod common;

use common::*;
use http::Request;

#[tokio::test]
async fn requests_and_responses_arrive_whole() {
    let (server, id) = quark_server();
    spawn_quark_h3_server(&server);
    let client = quark_h3_client(server.local_addr().unwrap(), &id).await;

    for n in [0, 1, 1200, 100_000, 3_000_000] {
        get_bytes(&client, n).await;
    }

    // A body sent in pieces comes back whole, with its digest as a trailer.
    echo(&client, &data(1_000_000, 9), 100_000, false).await;

    // Many at once on one connection.
    let mut set = tokio::task::JoinSet::new();
    for i in 0..64 {
        let client = client.clone();
        set.spawn(async move { get_bytes(&client, 10_000 + i).await });
    }
    while let Some(r) = set.join_next().await {
        r.unwrap();
    }

    let req = Request::get("https://localhost/nothing").body(()).unwrap();
    let (resp, mut s) = exchange(&client, &req).await;
    assert_eq!(resp.status(), 404);
    assert!(s.recv_data().await.unwrap().is_none());
}
