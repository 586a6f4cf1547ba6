//! HTTP/3 over 0-RTT: a resumed client's GET goes before the handshake
//! completes, a POST waits for it; both answered whole.

mod common;

use common::*;
use http::Request;
use quark::Endpoint;
use quark::tls::{self, Verify};

#[tokio::test]
async fn get_goes_in_0rtt_and_post_waits_for_the_handshake() {
    let id = quark::tls::Identity::self_signed(&["localhost"]).unwrap();
    let config = tls::server_config(&id, &[quark_h3::ALPN])
        .unwrap()
        .with_0rtt(64);
    let server = Endpoint::server(config, "127.0.0.1:0".parse().unwrap()).unwrap();
    spawn_quark_h3_server(&server);
    let addr = server.local_addr().unwrap();
    let client = Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    let config = tls::client_config(Verify::Roots(vec![id.cert.clone()]), &[quark_h3::ALPN])
        .unwrap()
        .with_0rtt();

    // A first connection for the ticket.
    let first = client
        .connect(config.clone(), addr, "localhost")
        .unwrap()
        .await
        .unwrap();
    get_bytes(&quark_h3::Client::new(first).await.unwrap(), 10).await;

    let Ok(conn) = client
        .connect(config, addr, "localhost")
        .unwrap()
        .into_0rtt()
    else {
        panic!("no 0-RTT");
    };
    let h3 = quark_h3::Client::new(conn.clone()).await.unwrap();
    // A GET goes at once (the test's runtime runs the driver only when this
    // task waits, so the handshake cannot have completed yet).
    let req = Request::get("https://localhost/bytes/3000")
        .body(())
        .unwrap();
    let mut get = h3.send_request(&req).await.unwrap();
    get.finish().unwrap();
    assert!(!conn.is_0rtt_accepted(), "the GET waited for the handshake");
    // A POST is sent only once the handshake completed (and 0-RTT was
    // accepted: is_0rtt_accepted says so only from then on).
    let req = Request::post("https://localhost/echo").body(()).unwrap();
    let mut post = h3.send_request(&req).await.unwrap();
    assert!(conn.is_0rtt_accepted(), "a POST went before the handshake");
    post.finish().unwrap();
    assert_eq!(post.recv_response().await.unwrap().status(), 200);
    assert_eq!(get.recv_response().await.unwrap().status(), 200);
    assert_eq!(sha(&body_of(&mut get).await), sha(&data(3000, 3000)));
    get_bytes(&h3, 50_000).await;
}
