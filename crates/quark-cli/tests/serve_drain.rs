//! `quark serve --h3` drains on SIGTERM: GOAWAY, the download in flight
//! finishes (checked by SHA-256), the connection closes with H3_NO_ERROR and
//! the server exits 0.

mod common;

use std::time::{Duration, Instant};

use common::{serve_with, sha, tempdir};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use quark::tls::{self, Verify};

#[tokio::test]
async fn sigterm_lets_a_download_finish_then_exits_zero() {
    drain_case("drain", &[]).await;
}

#[tokio::test]
async fn sigterm_drains_worker_threads_too() {
    drain_case("drain-workers", &["--workers", "2"]).await;
}

async fn drain_case(name: &str, extra: &[&str]) {
    let dir = tempdir("quark-cli", name);
    let root = dir.join("root");
    std::fs::create_dir_all(&root).unwrap();
    let file: Vec<u8> = (0..20_000_000u32).map(|i| (i * 13 % 251) as u8).collect();
    std::fs::write(root.join("big.bin"), &file).unwrap();
    let mut args = vec!["--h3", "--drain-timeout", "60"];
    args.extend_from_slice(extra);
    let mut server = serve_with(&root, &dir, &args);

    let endpoint = quark::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    let config =
        tls::client_config(Verify::CaFile(server.cert.clone()), &[quark_h3::ALPN]).unwrap();
    let addr = format!("127.0.0.1:{}", server.port).parse().unwrap();
    let conn = endpoint
        .connect(config, addr, "localhost")
        .unwrap()
        .await
        .unwrap();
    let client = quark_h3::Client::new(conn).await.unwrap();

    // SIGTERM as the first piece of the body arrives: the rest is in flight.
    let pid = Pid::from_raw(i32::try_from(server.child.id()).unwrap());
    let mut signalled = false;
    let mut body = Vec::new();
    let authority = format!("localhost:{}", server.port);
    let got = quark_h3::files::fetch(&client, &authority, "/big.bin", &mut body, |_| {
        if !std::mem::replace(&mut signalled, true) {
            kill(pid, Signal::SIGTERM).unwrap();
        }
    });
    assert_eq!(got.await.unwrap(), file.len() as u64);
    assert!(signalled);
    assert_eq!(sha(&body), sha(&file));
    // The server said GOAWAY, and closed gracefully once the download was done.
    assert_eq!(client.goaway_id(), Some(4));
    let closed = tokio::time::timeout(Duration::from_secs(30), client.connection().closed());
    match closed.await {
        Ok(quark::ConnectionError::ApplicationClosed { code, .. }) => {
            assert_eq!(code, quark_h3::error::H3_NO_ERROR)
        }
        other => panic!("expected a close with H3_NO_ERROR, got {other:?}"),
    }

    let start = Instant::now();
    let status = loop {
        if let Some(status) = server.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the server did not exit"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(status.code(), Some(0), "{status:?}");
}
