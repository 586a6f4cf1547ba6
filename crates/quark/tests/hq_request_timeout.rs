//! A request that does not arrive whole in time (a client sending a byte
//! now and then: slow loris) is reset with 0x408, and the stream's state goes;
//! a request that does arrive is served.

mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use quark::tls::{self, Identity, Verify};
use quark::{Endpoint, ReadError};

#[tokio::test]
async fn a_request_that_never_ends_is_reset() {
    let dir = std::env::temp_dir().join(format!("quark-hq-timeout-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("a"), b"hello").unwrap();
    let id = Identity::self_signed(&["localhost"]).unwrap();
    let localhost: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let server = Endpoint::server(
        tls::server_config(&id, &[quark::hq::ALPN]).unwrap(),
        localhost,
    )
    .unwrap();
    let client = Endpoint::client(localhost).unwrap();
    let config =
        tls::client_config(Verify::Roots(vec![id.cert.clone()]), &[quark::hq::ALPN]).unwrap();
    let (c, s) = common::connect(&server, &client, config).await;
    let limit = Duration::from_millis(300);
    tokio::spawn(quark::hq::serve_connection_within(s, dir.clone(), limit));

    // Slow loris: a byte at a time, never the end of the line.
    let (mut slow, mut slow_recv) = c.open_bi().await.unwrap();
    let start = Instant::now();
    let dripping = tokio::spawn(async move {
        for b in b"GET /a" {
            if slow.write_all(&[*b]).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    let mut buf = [0u8; 16];
    let got = tokio::time::timeout(Duration::from_secs(5), slow_recv.read(&mut buf)).await;
    assert!(
        matches!(got, Ok(Err(ReadError::Reset(quark::hq::REQUEST_TIMEOUT)))),
        "{got:?}"
    );
    assert!(start.elapsed() >= limit, "not before the limit");
    dripping.abort();

    // A whole request is served as before.
    let mut out = Vec::new();
    let n = quark::hq::fetch(&c, "/a", &mut out, |_| {}).await.unwrap();
    assert_eq!((n, out.as_slice()), (5, &b"hello"[..]));
    let _ = std::fs::remove_dir_all(&dir);
}
