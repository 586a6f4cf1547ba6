//! The HTTP/3 file server under a client that asks for much and reads
//! nothing: 256 GETs of a 4 MB file on one connection whose 1 MiB window is
//! never raised. The server reads from disk only what a DATA frame can carry
//! now (`RequestStream::writable`), so the heap grows by a few MB, where
//! each request used to hold a 256 KiB piece and tokio's file buffer (128
//! MiB here). Measured with a counting allocator, so this binary has its own
//! allocator and no other test.

mod common;
#[path = "../../quark/tests/support/unread_files.rs"]
mod unread_files;

use common::{body_of, data, quark_server, sha};
use http::{Request, StatusCode};
use quark::Endpoint;
use quark::tls::{self, Verify};
use unread_files::{FILE, REQUESTS, Root, fixed_window, heap, watch_until_settled};

#[tokio::test]
async fn a_client_that_reads_nothing_costs_the_h3_file_server_little_memory() {
    let body = data(FILE, 5);
    let root = Root::new("quark-h3-memory", &body);

    let (server, id) = quark_server();
    let addr = server.local_addr().unwrap();
    let client = Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    let mut config =
        tls::client_config(Verify::Roots(vec![id.cert.clone()]), &[quark_h3::ALPN]).unwrap();
    config.transport = fixed_window();
    let connecting = client.connect(config, addr, "localhost").unwrap();
    let (c, s) = tokio::join!(connecting, server.accept());
    let (c, s) = (c.unwrap(), s.unwrap());
    tokio::spawn(quark_h3::files::serve_connection(s.clone(), root.0.clone()));
    let client = quark_h3::Client::new(c).await.unwrap();
    let before = heap();

    let authority = format!("localhost:{}", addr.port());
    let mut requests = Vec::new();
    for _ in 0..REQUESTS {
        let req = Request::get(format!("https://{authority}/big"))
            .body(())
            .unwrap();
        let mut stream = client.send_request(&req).await.unwrap();
        stream.finish().unwrap();
        requests.push(stream);
    }
    watch_until_settled(&s, before).await;

    // Give up on all but 2; those arrive whole. Read together: the window is
    // shared, and data waiting on one stream would hold up another.
    requests.truncate(2);
    let readers: Vec<_> = requests
        .into_iter()
        .map(|mut stream| {
            tokio::spawn(async move {
                let resp = stream.recv_response().await.unwrap();
                assert_eq!(resp.status(), StatusCode::OK);
                body_of(&mut stream).await
            })
        })
        .collect();
    for reader in readers {
        let got = reader.await.unwrap();
        assert_eq!(got.len(), body.len());
        assert_eq!(sha(&got), sha(&body));
    }
}
