//! What the file server answers to a request, whatever carries it: the
//! decision (status, headers, which bytes of which file) is made here on
//! `http` types, and each transport only sends it (HTTP/3 in `respond`,
//! HTTP/1.1 and HTTP/2 over TCP in `quark serve`).

use std::io;
use std::path::Path;

use http::header::{self, HeaderValue};
use http::{Method, Request, Response, StatusCode};

use super::FileOptions;
use super::body::FileBody;
use super::cond::{Validators, Verdict};
use super::encoding;
use super::listing;
use super::range::{self, Ranged};
use super::source::{Found, Source};

/// A response's head and, for a GET of a file, the bytes to send after it.
pub struct Answer {
    /// Status and headers (Content-Length included when known).
    pub head: Response<()>,
    /// The body, or `None` for a response without one (HEAD, 304, errors).
    pub body: Option<FileBody>,
}

impl Answer {
    fn bare(code: StatusCode) -> Answer {
        Answer {
            head: status(code),
            body: None,
        }
    }
}

fn status(code: StatusCode) -> Response<()> {
    let mut r = Response::new(());
    *r.status_mut() = code;
    r
}

/// Decides the answer to `req` from the files under `root`: GET and HEAD
/// only (405 with Allow otherwise), 403 for a path leaving the root, 301 to
/// a directory's slash form, 404, preconditions (304, 412), Range (206,
/// multipart/byteranges for several ranges, 416).
pub async fn decide(req: &Request<()>, root: &Path, options: &FileOptions) -> io::Result<Answer> {
    let head = req.method() == Method::HEAD;
    if req.method() != Method::GET && !head {
        let mut resp = status(StatusCode::METHOD_NOT_ALLOWED);
        resp.headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        resp.headers_mut().insert(header::CONTENT_LENGTH, 0.into());
        return Ok(Answer {
            head: resp,
            body: None,
        });
    }
    let Ok(path) = quark::hq::resolve(root, req.uri().path()) else {
        return Ok(Answer::bare(StatusCode::FORBIDDEN));
    };
    let mut file = match Source::open(&path).await? {
        Found::File(file) => file,
        Found::Directory => {
            return Ok(Answer {
                head: to_slash(req),
                body: None,
            });
        }
        Found::Missing => return missing(req, &path, options).await,
    };
    let mut resp = status(StatusCode::OK);
    if options.precompressed {
        // The answer depends on Accept-Encoding, for caches too.
        resp.headers_mut()
            .insert(header::VARY, HeaderValue::from_static("accept-encoding"));
        for (coding, sibling) in encoding::candidates(req.headers(), &path) {
            if let Found::File(packed) = Source::open(&sibling).await? {
                // Its own length and date, so its own ETag: a range or a
                // validator of one encoding never applies to the other.
                file = packed;
                resp.headers_mut()
                    .insert(header::CONTENT_ENCODING, HeaderValue::from_static(coding));
                break;
            }
        }
    }
    let validators = Validators::new(file.len, file.modified);
    let h = resp.headers_mut();
    h.insert(header::ETAG, value(&validators.etag));
    h.insert(header::LAST_MODIFIED, value(&validators.last_modified()));
    h.insert(header::CACHE_CONTROL, value(&options.cache_control()));
    match validators.check(req.headers()) {
        Verdict::Proceed => {}
        Verdict::NotModified => {
            *resp.status_mut() = StatusCode::NOT_MODIFIED;
            return Ok(Answer {
                head: resp,
                body: None,
            });
        }
        Verdict::Failed => {
            let mut failed = status(StatusCode::PRECONDITION_FAILED);
            failed
                .headers_mut()
                .insert(header::CONTENT_LENGTH, 0.into());
            return Ok(Answer {
                head: failed,
                body: None,
            });
        }
    }
    let content_type = super::kind::content_type(&path);
    let h = resp.headers_mut();
    h.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    // Range is defined for GET only (RFC 9110 §14.2): HEAD ignores it.
    let ranged = match req.headers().get(header::RANGE) {
        Some(r) if !head && validators.range_applies(req.headers()) => {
            range::parse(r.as_bytes(), file.len)
        }
        _ => Ranged::Whole,
    };
    let body = match ranged {
        Ranged::Whole => FileBody::whole(file),
        Ranged::Parts(parts) => {
            *resp.status_mut() = StatusCode::PARTIAL_CONTENT;
            if let [(start, end)] = parts[..] {
                let range = format!("bytes {start}-{end}/{}", file.len);
                resp.headers_mut()
                    .insert(header::CONTENT_RANGE, value(&range));
                FileBody::range(file, start, end)
            } else {
                // Random, so that no file's bytes can be made to hold it.
                let boundary = format!("{:032x}", rand::random::<u128>());
                let multi = format!("multipart/byteranges; boundary={boundary}");
                resp.headers_mut()
                    .insert(header::CONTENT_TYPE, value(&multi));
                FileBody::multipart(file, &parts, &boundary, content_type)
            }
        }
        Ranged::Unsatisfiable => {
            let mut refused = status(StatusCode::RANGE_NOT_SATISFIABLE);
            let h = refused.headers_mut();
            h.insert(
                header::CONTENT_RANGE,
                value(&format!("bytes */{}", file.len)),
            );
            h.insert(header::CONTENT_LENGTH, 0.into());
            return Ok(Answer {
                head: refused,
                body: None,
            });
        }
    };
    resp.headers_mut()
        .insert(header::CONTENT_LENGTH, body.left().into());
    Ok(Answer {
        head: resp,
        body: (!head).then_some(body),
    })
}

/// 404, or the listing of a directory without index.html if asked for one.
async fn missing(req: &Request<()>, path: &Path, options: &FileOptions) -> io::Result<Answer> {
    let not_found = Ok(Answer::bare(StatusCode::NOT_FOUND));
    // `path` is the directory's index.html when the request ends in `/`.
    let dir = path.parent();
    let Some(dir) = dir.filter(|_| options.list_directories && req.uri().path().ends_with('/'))
    else {
        return not_found;
    };
    let Ok(page) = listing::page(dir, req.uri().path()).await else {
        return not_found;
    };
    let Some(charge) = listing::Charge::take(page.len()) else {
        let mut busy = status(StatusCode::SERVICE_UNAVAILABLE);
        let h = busy.headers_mut();
        h.insert(header::RETRY_AFTER, 1.into());
        h.insert(header::CONTENT_LENGTH, 0.into());
        return Ok(Answer {
            head: busy,
            body: None,
        });
    };
    let mut resp = status(StatusCode::OK);
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    // Made afresh each time, with no validators: always revalidated.
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(header::CONTENT_LENGTH, page.len().into());
    Ok(Answer {
        head: resp,
        body: (req.method() != Method::HEAD).then(|| FileBody::page(page.into(), charge)),
    })
}

/// A header value from text we made (no control characters in it).
fn value(s: &str) -> HeaderValue {
    HeaderValue::from_str(s).expect("a valid header value")
}

/// 301 to the directory's slash form, whose index.html is then served
/// (relative links in it resolve under the directory only so).
fn to_slash(req: &Request<()>) -> Response<()> {
    let uri = req.uri();
    let location = match uri.query() {
        Some(q) => format!("{}/?{q}", uri.path()),
        None => format!("{}/", uri.path()),
    };
    let mut resp = status(StatusCode::MOVED_PERMANENTLY);
    if let Ok(location) = HeaderValue::from_str(&location) {
        resp.headers_mut().insert(header::LOCATION, location);
    }
    resp.headers_mut().insert(header::CONTENT_LENGTH, 0.into());
    resp
}
