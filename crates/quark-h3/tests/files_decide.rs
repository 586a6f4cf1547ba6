//! `quark_h3::files::decide` on its own, as a transport other than HTTP/3
//! uses it: the head it decides and the bytes its body reads.

use http::{Method, Request, StatusCode};
use quark_h3::files::{FileOptions, decide};

fn req(method: Method, path: &str, headers: &[(&str, &str)]) -> Request<()> {
    let mut r = Request::builder().method(method).uri(path);
    for (n, v) in headers {
        r = r.header(*n, *v);
    }
    r.body(()).unwrap()
}

#[tokio::test]
async fn decides_heads_and_reads_the_selected_bytes() {
    let root = std::env::temp_dir().join(format!("quark-h3-decide-{}", std::process::id()));
    std::fs::create_dir_all(root.join("d")).unwrap();
    let file: Vec<u8> = (0..200_000u32).map(|i| (i % 241) as u8).collect();
    std::fs::write(root.join("f.bin"), &file).unwrap();
    let opts = FileOptions::default();

    let a = decide(
        &req(Method::GET, "/f.bin", &[("range", "bytes=10-70009")]),
        &root,
        &opts,
    )
    .await
    .unwrap();
    assert_eq!(a.head.status(), StatusCode::PARTIAL_CONTENT);
    assert_eq!(a.head.headers()["content-length"], "70000");
    let mut body = a.body.expect("a body");
    let mut got = Vec::new();
    while body.left() > 0 {
        got.extend_from_slice(&body.read(16 * 1024).await.unwrap());
    }
    assert_eq!(got, &file[10..70010]);

    let etag = a.head.headers()["etag"].to_str().unwrap().to_owned();
    let cond = req(Method::HEAD, "/f.bin", &[("if-none-match", &etag)]);
    let a = decide(&cond, &root, &opts).await.unwrap();
    assert_eq!(a.head.status(), StatusCode::NOT_MODIFIED);
    assert!(a.body.is_none());
    let a = decide(&req(Method::HEAD, "/f.bin", &[]), &root, &opts)
        .await
        .unwrap();
    assert_eq!(a.head.status(), StatusCode::OK);
    assert!(a.body.is_none(), "HEAD has no body");

    for (method, path, status) in [
        (Method::POST, "/f.bin", StatusCode::METHOD_NOT_ALLOWED),
        (Method::GET, "/d", StatusCode::MOVED_PERMANENTLY),
        (Method::GET, "/nope", StatusCode::NOT_FOUND),
        (Method::GET, "/../etc/passwd", StatusCode::FORBIDDEN),
    ] {
        let a = decide(&req(method, path, &[]), &root, &opts).await.unwrap();
        assert_eq!(a.head.status(), status, "{path}");
        assert!(a.body.is_none());
    }
    let _ = std::fs::remove_dir_all(&root);
}
