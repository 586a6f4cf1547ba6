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

/// A browser asks for `a b é.txt` as `/a%20b%20%C3%A9.txt`: the server
/// decodes the path before it looks for the file, and an encoded `..` or
/// `/` still cannot leave the root.
#[tokio::test]
async fn serves_percent_encoded_names() {
    let root = std::env::temp_dir().join(format!("quark-h3-encoded-{}", std::process::id()));
    std::fs::create_dir_all(root.join("dir one")).unwrap();
    std::fs::write(root.join("a b é.txt"), b"spaced").unwrap();
    std::fs::write(root.join("dir one").join("index.html"), b"<p>i</p>").unwrap();
    let opts = FileOptions::default();

    let a = decide(&req(Method::GET, "/a%20b%20%C3%A9.txt", &[]), &root, &opts)
        .await
        .unwrap();
    assert_eq!(a.head.status(), StatusCode::OK);
    assert!(
        a.head.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain")
    );
    let mut body = a.body.expect("a body");
    assert_eq!(&body.read(64).await.unwrap()[..], b"spaced");

    let a = decide(&req(Method::GET, "/dir%20one/", &[]), &root, &opts)
        .await
        .unwrap();
    assert_eq!(a.head.status(), StatusCode::OK, "the directory's index");
    for path in ["/%2e%2e/etc/passwd", "/dir%20one/..%2F..%2Fetc"] {
        let a = decide(&req(Method::GET, path, &[]), &root, &opts)
            .await
            .unwrap();
        assert_eq!(a.head.status(), StatusCode::FORBIDDEN, "{path}");
    }
    let _ = std::fs::remove_dir_all(&root);
}

/// Reads a whole body.
async fn body_of(a: quark_h3::files::Answer) -> Vec<u8> {
    let mut body = a.body.expect("a body");
    let mut got = Vec::new();
    while body.left() > 0 {
        got.extend_from_slice(&body.read(1_000).await.unwrap());
    }
    assert!(
        body.read(1_000).await.unwrap().is_empty(),
        "nothing after the end"
    );
    got
}

/// Several ranges come back as one 206 of multipart/byteranges (RFC 9110
/// §14.6): each part headed by its Content-Type and Content-Range, in file
/// order, overlapping ranges merged, framed by the boundary the head names,
/// and Content-Length the body's exact size.
#[tokio::test]
async fn several_ranges_are_multipart_byteranges() {
    let root = std::env::temp_dir().join(format!("quark-h3-multi-{}", std::process::id()));
    std::fs::create_dir_all(&root).unwrap();
    let file: Vec<u8> = (0..50_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(root.join("f.bin"), &file).unwrap();
    let opts = FileOptions::default();

    let range = "bytes=40000-40999, 0-99, 50-149, -10";
    let a = decide(
        &req(Method::GET, "/f.bin", &[("range", range)]),
        &root,
        &opts,
    )
    .await
    .unwrap();
    assert_eq!(a.head.status(), StatusCode::PARTIAL_CONTENT);
    assert!(a.head.headers().get("content-range").is_none());
    let kind = a.head.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    let boundary = kind
        .strip_prefix("multipart/byteranges; boundary=")
        .expect("multipart/byteranges")
        .to_owned();
    let length: usize = a.head.headers()["content-length"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    let body = body_of(a).await;
    assert_eq!(body.len(), length);

    let mut want = Vec::new();
    for (start, end) in [(0usize, 149usize), (40_000, 40_999), (49_990, 49_999)] {
        want.extend_from_slice(
            format!(
                "\r\n--{boundary}\r\ncontent-type: application/octet-stream\r\n\
                 content-range: bytes {start}-{end}/50000\r\n\r\n"
            )
            .as_bytes(),
        );
        want.extend_from_slice(&file[start..=end]);
    }
    want.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    assert!(body == want, "the multipart body differs");

    // A HEAD of the same says the same length and sends nothing.
    let a = decide(
        &req(Method::HEAD, "/f.bin", &[("range", range)]),
        &root,
        &opts,
    )
    .await
    .unwrap();
    assert_eq!(a.head.status(), StatusCode::OK, "HEAD ignores Range");
    assert!(a.body.is_none());

    // Ranges that merge into one are a plain 206; the whole file a 200.
    let a = decide(
        &req(Method::GET, "/f.bin", &[("range", "bytes=10-19,15-29")]),
        &root,
        &opts,
    )
    .await
    .unwrap();
    assert_eq!(a.head.headers()["content-range"], "bytes 10-29/50000");
    assert_eq!(body_of(a).await, &file[10..30]);
    let a = decide(&req(Method::GET, "/f.bin", &[]), &root, &opts)
        .await
        .unwrap();
    assert_eq!(a.head.status(), StatusCode::OK);
    assert!(body_of(a).await == file);
    let _ = std::fs::remove_dir_all(&root);
}

/// A directory without index.html is a 404, unless the server lists
/// directories: then a page of links, directories first, hidden names left
/// out, and HEAD the same head without the page.
#[tokio::test]
async fn lists_directories_when_asked() {
    let root = std::env::temp_dir().join(format!("quark-h3-listing-{}", std::process::id()));
    std::fs::create_dir_all(root.join("d/inner")).unwrap();
    std::fs::write(root.join("d/b <1>.txt"), b"12345").unwrap();
    std::fs::write(root.join("d/.secret"), b"x").unwrap();
    let mut opts = FileOptions::default();

    let a = decide(&req(Method::GET, "/d/", &[]), &root, &opts)
        .await
        .unwrap();
    assert_eq!(a.head.status(), StatusCode::NOT_FOUND, "off by default");

    opts.list_directories = true;
    let a = decide(&req(Method::GET, "/d/", &[]), &root, &opts)
        .await
        .unwrap();
    assert_eq!(a.head.status(), StatusCode::OK);
    assert_eq!(a.head.headers()["content-type"], "text/html; charset=utf-8");
    let length = a.head.headers()["content-length"]
        .to_str()
        .unwrap()
        .to_owned();
    let page = String::from_utf8(body_of(a).await).unwrap();
    assert_eq!(page.len().to_string(), length);
    let inner = page.find("href=\"./inner/\"").expect("the subdirectory");
    let file = page
        .find("<a href=\"./b%20%3C1%3E.txt\">b &lt;1&gt;.txt</a></td><td>5</td>")
        .expect("the file, escaped, with its size");
    assert!(inner < file, "directories first");
    assert!(!page.contains("secret"), "hidden names are not listed");

    let a = decide(&req(Method::HEAD, "/d/", &[]), &root, &opts)
        .await
        .unwrap();
    assert_eq!(a.head.headers()["content-length"], length.as_str());
    assert!(a.body.is_none());
    // Not a directory, or one with its index.html: as before.
    for (path, status) in [
        ("/nope/", StatusCode::NOT_FOUND),
        ("/d/b%20%3C1%3E.txt/", StatusCode::NOT_FOUND),
    ] {
        let a = decide(&req(Method::GET, path, &[]), &root, &opts)
            .await
            .unwrap();
        assert_eq!(a.head.status(), status, "{path}");
    }
    std::fs::write(root.join("d/index.html"), b"<p>index</p>").unwrap();
    let a = decide(&req(Method::GET, "/d/", &[]), &root, &opts)
        .await
        .unwrap();
    assert_eq!(body_of(a).await, b"<p>index</p>");
    let _ = std::fs::remove_dir_all(&root);
}

/// With precompressed files on, a client that accepts gzip or brotli gets
/// `name.gz` / `name.br` (brotli first) with Content-Encoding, its own ETag
/// and `Vary: accept-encoding`; one that does not, or a file without a
/// sibling, gets the file as it is.
#[tokio::test]
async fn serves_precompressed_siblings() {
    let root = std::env::temp_dir().join(format!("quark-h3-packed-{}", std::process::id()));
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("app.js"), b"plain").unwrap();
    std::fs::write(root.join("app.js.gz"), b"gzipped").unwrap();
    std::fs::write(root.join("only.css"), b"css").unwrap();
    let mut opts = FileOptions::default();
    let gzip = [("accept-encoding", "gzip, deflate")];

    let a = decide(&req(Method::GET, "/app.js", &gzip), &root, &opts)
        .await
        .unwrap();
    assert!(
        a.head.headers().get("content-encoding").is_none(),
        "off by default"
    );
    assert_eq!(body_of(a).await, b"plain");

    opts.precompressed = true;
    let a = decide(&req(Method::GET, "/app.js", &gzip), &root, &opts)
        .await
        .unwrap();
    let h = a.head.headers().clone();
    assert_eq!(h["content-encoding"], "gzip");
    assert_eq!(h["vary"], "accept-encoding");
    assert!(
        h["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/javascript")
    );
    assert_eq!(h["content-length"], "7");
    assert_eq!(body_of(a).await, b"gzipped");

    let a = decide(&req(Method::GET, "/app.js", &[]), &root, &opts)
        .await
        .unwrap();
    assert!(a.head.headers().get("content-encoding").is_none());
    assert_eq!(a.head.headers()["vary"], "accept-encoding");
    assert_ne!(
        a.head.headers()["etag"],
        h["etag"],
        "each encoding its own tag"
    );
    assert_eq!(body_of(a).await, b"plain");

    std::fs::write(root.join("app.js.br"), b"brotli").unwrap();
    let both = [("accept-encoding", "gzip, br")];
    let a = decide(&req(Method::GET, "/app.js", &both), &root, &opts)
        .await
        .unwrap();
    assert_eq!(a.head.headers()["content-encoding"], "br");
    assert_eq!(body_of(a).await, b"brotli");
    let no_br = [("accept-encoding", "br;q=0, gzip")];
    let a = decide(&req(Method::GET, "/app.js", &no_br), &root, &opts)
        .await
        .unwrap();
    assert_eq!(a.head.headers()["content-encoding"], "gzip");

    let a = decide(&req(Method::GET, "/only.css", &gzip), &root, &opts)
        .await
        .unwrap();
    assert!(a.head.headers().get("content-encoding").is_none());
    assert_eq!(body_of(a).await, b"css");
    let _ = std::fs::remove_dir_all(&root);
}
