//! `quark_h3::files` (what `quark serve --h3` / `quark get --h3` run): GET by
//! hash, HEAD with a content-length and no body, and the error statuses.

mod common;

use common::*;
use http::{Request, StatusCode};

#[tokio::test]
async fn files_statuses_and_head() {
    let root = std::env::temp_dir().join(format!("quark-h3-files-{}", std::process::id()));
    std::fs::create_dir_all(&root).unwrap();
    let file = data(700_000, 3);
    std::fs::write(root.join("a.bin"), &file).unwrap();

    let (server, id) = quark_server();
    let addr = server.local_addr().unwrap();
    let served = root.clone();
    tokio::spawn(async move {
        while let Some(conn) = server.accept().await {
            tokio::spawn(quark_h3::files::serve_connection(conn, served.clone()));
        }
    });
    let client = quark_h3_client(addr, &id).await;
    let authority = format!("localhost:{}", addr.port());

    let mut out = Vec::new();
    let n = quark_h3::files::fetch(&client, &authority, "/a.bin", &mut out, |_| {})
        .await
        .unwrap();
    assert_eq!((n, sha(&out)), (file.len() as u64, sha(&file)));

    // HEAD: the length, and no body (a body-less response may announce one).
    let req = Request::head(format!("https://{authority}/a.bin"))
        .body(())
        .unwrap();
    let (resp, mut s) = exchange(&client, &req).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(
        resp.headers()["content-length"],
        file.len().to_string().as_str()
    );
    assert!(s.recv_data().await.unwrap().is_none());

    for (method, path, status) in [
        ("GET", "/missing", StatusCode::NOT_FOUND),
        ("GET", "/../etc/passwd", StatusCode::FORBIDDEN),
        ("POST", "/a.bin", StatusCode::METHOD_NOT_ALLOWED),
    ] {
        let req = Request::builder()
            .method(method)
            .uri(format!("https://{authority}{path}"))
            .body(())
            .unwrap();
        assert_eq!(
            exchange(&client, &req).await.0.status(),
            status,
            "{method} {path}"
        );
    }
    let mut sink = Vec::new();
    let err = quark_h3::files::fetch(&client, &authority, "/missing", &mut sink, |_| {});
    assert!(matches!(
        err.await,
        Err(quark_h3::files::FetchError::Status(StatusCode::NOT_FOUND))
    ));
    let _ = std::fs::remove_dir_all(&root);
}
