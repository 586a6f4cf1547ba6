//! The file server's RFC 9110 semantics through quark-h3's own client:
//! content types, directories (301, index.html), HEAD, ranges (206 bytes
//! checked against the file's slice; several as multipart/byteranges), 416,
//! validators (304 on ETag and on date, 412), If-Range and Cache-Control.

mod common;

use std::path::PathBuf;

use common::*;
use http::{Request, Response, StatusCode};

struct Site {
    client: quark_h3::Client,
    authority: String,
    root: PathBuf,
}

impl Site {
    async fn start(name: &str) -> Site {
        let root = std::env::temp_dir().join(format!("quark-h3-{name}-{}", std::process::id()));
        std::fs::create_dir_all(root.join("docs")).unwrap();
        let (server, id) = quark_server();
        let addr = server.local_addr().unwrap();
        let served = root.clone();
        tokio::spawn(async move {
            while let Some(conn) = server.accept().await {
                let options = quark_h3::files::FileOptions {
                    cache_max_age: 60,
                    ..Default::default()
                };
                tokio::spawn(quark_h3::files::serve_files(
                    conn,
                    served.clone(),
                    options,
                    None,
                ));
            }
        });
        Site {
            client: quark_h3_client(addr, &id).await,
            authority: format!("localhost:{}", addr.port()),
            root,
        }
    }

    /// Sends `method path` with `headers`; the response head and its whole body.
    async fn ask(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
    ) -> (Response<()>, Vec<u8>) {
        let mut req = Request::builder()
            .method(method)
            .uri(format!("https://{}{path}", self.authority));
        for (n, v) in headers {
            req = req.header(*n, *v);
        }
        let (resp, mut s) = exchange(&self.client, &req.body(()).unwrap()).await;
        let body = body_of(&mut s).await;
        (resp, body)
    }
}

impl Drop for Site {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn header<'a>(resp: &'a Response<()>, name: &str) -> &'a str {
    resp.headers()
        .get(name)
        .unwrap_or_else(|| panic!("no {name}"))
        .to_str()
        .unwrap()
}

#[tokio::test]
async fn content_types_directories_and_head() {
    let site = Site::start("types").await;
    let page = b"<html>docs</html>";
    std::fs::write(site.root.join("docs/index.html"), page).unwrap();
    for (name, ty) in [
        ("a.css", "text/css; charset=utf-8"),
        ("a.js", "text/javascript; charset=utf-8"),
        ("a.json", "application/json"),
        ("a.svg", "image/svg+xml"),
        ("a.png", "image/png"),
        ("a.wasm", "application/wasm"),
        ("a.woff2", "font/woff2"),
        ("a.unknown", "application/octet-stream"),
    ] {
        std::fs::write(site.root.join(name), name).unwrap();
        let (resp, body) = site.ask("GET", &format!("/{name}"), &[]).await;
        assert_eq!(resp.status(), StatusCode::OK, "{name}");
        assert_eq!(header(&resp, "content-type"), ty, "{name}");
        assert_eq!(header(&resp, "cache-control"), "max-age=60");
        assert_eq!(body, name.as_bytes());
    }

    // A directory without its slash: 301 to the slash form (query kept).
    let (resp, body) = site.ask("GET", "/docs?x=1", &[]).await;
    assert_eq!(resp.status(), StatusCode::MOVED_PERMANENTLY);
    assert_eq!(header(&resp, "location"), "/docs/?x=1");
    assert!(body.is_empty());
    let (resp, body) = site.ask("GET", "/docs/", &[]).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert!(header(&resp, "content-type").starts_with("text/html"));
    assert_eq!(body, page);
    // No index.html: 404.
    let (resp, _) = site.ask("GET", "/", &[]).await;
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);

    // HEAD: the GET's headers, no body.
    let (resp, body) = site.ask("HEAD", "/docs/index.html", &[]).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(header(&resp, "content-length"), page.len().to_string());
    assert!(header(&resp, "content-type").starts_with("text/html"));
    assert!(resp.headers().contains_key("etag"));
    assert!(body.is_empty());
    let (resp, _) = site.ask("DELETE", "/docs/index.html", &[]).await;
    assert_eq!(resp.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(header(&resp, "allow"), "GET, HEAD");
}

#[tokio::test]
async fn ranges() {
    let site = Site::start("ranges").await;
    let file = data(300_000, 9);
    std::fs::write(site.root.join("big.bin"), &file).unwrap();
    let len = file.len();
    for (range, start, end) in [
        ("bytes=0-0", 0, 0),
        ("bytes=1000-199999", 1000, 199_999),
        ("bytes=250000-", 250_000, len - 1),
        ("bytes=-777", len - 777, len - 1),
        ("bytes=299990-400000", 299_990, len - 1),
    ] {
        let (resp, body) = site.ask("GET", "/big.bin", &[("range", range)]).await;
        assert_eq!(resp.status(), StatusCode::PARTIAL_CONTENT, "{range}");
        assert_eq!(
            header(&resp, "content-range"),
            format!("bytes {start}-{end}/{len}")
        );
        assert_eq!(
            header(&resp, "content-length"),
            (end + 1 - start).to_string()
        );
        assert_eq!(sha(&body), sha(&file[start..=end]), "{range}");
    }
    // Past the end: 416 with the length.
    let (resp, body) = site
        .ask("GET", "/big.bin", &[("range", "bytes=300000-")])
        .await;
    assert_eq!(resp.status(), StatusCode::RANGE_NOT_SATISFIABLE);
    assert_eq!(header(&resp, "content-range"), format!("bytes */{len}"));
    assert!(body.is_empty());
    // Ranges a few bytes apart: merged into one.
    let (resp, body) = site
        .ask("GET", "/big.bin", &[("range", "bytes=0-1,5-9")])
        .await;
    assert_eq!(header(&resp, "content-range"), format!("bytes 0-9/{len}"));
    assert_eq!(body, &file[..10]);
    // Ranges far apart: multipart/byteranges, each part the file's slice.
    let (resp, body) = site
        .ask("GET", "/big.bin", &[("range", "bytes=200000-200099,-50")])
        .await;
    assert_eq!(resp.status(), StatusCode::PARTIAL_CONTENT);
    let boundary = header(&resp, "content-type")
        .strip_prefix("multipart/byteranges; boundary=")
        .expect("multipart/byteranges")
        .to_owned();
    assert_eq!(header(&resp, "content-length"), body.len().to_string());
    let mut want = Vec::new();
    for (start, end) in [(200_000, 200_099), (len - 50, len - 1)] {
        let head = format!(
            "\r\n--{boundary}\r\ncontent-type: application/octet-stream\r\n\
             content-range: bytes {start}-{end}/{len}\r\n\r\n"
        );
        want.extend_from_slice(head.as_bytes());
        want.extend_from_slice(&file[start..=end]);
    }
    want.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    assert!(body == want, "the multipart body differs");
    // A range that does not parse: the whole file.
    let (resp, body) = site.ask("GET", "/big.bin", &[("range", "lines=1-2")]).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(sha(&body), sha(&file));
    // HEAD ignores Range.
    let (resp, body) = site
        .ask("HEAD", "/big.bin", &[("range", "bytes=0-9")])
        .await;
    assert_eq!((resp.status(), body.len()), (StatusCode::OK, 0));

    // If-Range: the current ETag or date applies the range; a stale one gets it all.
    let (resp, _) = site.ask("HEAD", "/big.bin", &[]).await;
    let etag = header(&resp, "etag").to_owned();
    let modified = header(&resp, "last-modified").to_owned();
    for (if_range, status) in [
        (etag.as_str(), StatusCode::PARTIAL_CONTENT),
        (modified.as_str(), StatusCode::PARTIAL_CONTENT),
        ("\"stale\"", StatusCode::OK),
        ("Thu, 01 Jan 1970 00:00:00 GMT", StatusCode::OK),
    ] {
        let headers = [("range", "bytes=10-19"), ("if-range", if_range)];
        let (resp, body) = site.ask("GET", "/big.bin", &headers).await;
        assert_eq!(resp.status(), status, "{if_range}");
        let want = if status == StatusCode::OK {
            &file[..]
        } else {
            &file[10..20]
        };
        assert_eq!(sha(&body), sha(want));
    }
}

#[tokio::test]
async fn conditional_requests() {
    let site = Site::start("cond").await;
    let file = data(5000, 4);
    std::fs::write(site.root.join("c.txt"), &file).unwrap();
    let (resp, body) = site.ask("GET", "/c.txt", &[]).await;
    assert_eq!(sha(&body), sha(&file));
    let etag = header(&resp, "etag").to_owned();
    let modified = header(&resp, "last-modified").to_owned();
    assert!(
        etag.starts_with('"') && !etag.starts_with("W/"),
        "strong: {etag}"
    );
    let early = "Thu, 01 Jan 1970 00:00:00 GMT";

    let cases: &[(&[(&str, &str)], StatusCode)] = &[
        (&[("if-none-match", &etag)], StatusCode::NOT_MODIFIED),
        (
            &[("if-none-match", "\"other\", *")],
            StatusCode::NOT_MODIFIED,
        ),
        (&[("if-none-match", "\"other\"")], StatusCode::OK),
        (
            &[("if-modified-since", &modified)],
            StatusCode::NOT_MODIFIED,
        ),
        (&[("if-modified-since", early)], StatusCode::OK),
        (&[("if-match", &etag)], StatusCode::OK),
        (
            &[("if-match", "\"other\"")],
            StatusCode::PRECONDITION_FAILED,
        ),
        (
            &[("if-unmodified-since", early)],
            StatusCode::PRECONDITION_FAILED,
        ),
        (&[("if-unmodified-since", &modified)], StatusCode::OK),
    ];
    for (headers, status) in cases {
        for method in ["GET", "HEAD"] {
            let (resp, body) = site.ask(method, "/c.txt", headers).await;
            assert_eq!(resp.status(), *status, "{method} {headers:?}");
            if *status == StatusCode::OK && method == "GET" {
                assert_eq!(sha(&body), sha(&file));
            } else {
                assert!(body.is_empty(), "{method} {headers:?}");
            }
            if *status == StatusCode::NOT_MODIFIED {
                assert_eq!(header(&resp, "etag"), etag);
                assert_eq!(header(&resp, "cache-control"), "max-age=60");
            }
        }
    }
    // The file changes: its ETag does too, and the old one no longer matches.
    std::fs::write(
        site.root.join("c.txt"),
        b"changed, and longer than before: 40 bytes",
    )
    .unwrap();
    let (resp, body) = site.ask("GET", "/c.txt", &[("if-none-match", &etag)]).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_ne!(header(&resp, "etag"), etag);
    assert_eq!(body.len(), 41);
}
