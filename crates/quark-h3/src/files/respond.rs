//! One request of the file server: method, path, validators, range, body.

use std::path::Path;

use http::header::{self, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use quark::hq::FILE_PIECE;

use super::cond::{Validators, Verdict};
use super::range::{self, Ranged};
use super::source::{Found, Source};
use super::{FileOptions, ServeError};
use crate::RequestStream;

fn status(code: StatusCode) -> Response<()> {
    let mut r = Response::new(());
    *r.status_mut() = code;
    r
}

/// Sends a response with no body.
async fn answer(stream: &mut RequestStream, resp: Response<()>) -> Result<(), ServeError> {
    stream.send_response(&resp).await?;
    stream.finish()?;
    Ok(())
}

pub(crate) async fn serve_request(
    req: Request<()>,
    stream: &mut RequestStream,
    root: &Path,
    options: &FileOptions,
) -> Result<(), ServeError> {
    let head = req.method() == Method::HEAD;
    if req.method() != Method::GET && !head {
        let mut resp = status(StatusCode::METHOD_NOT_ALLOWED);
        resp.headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return answer(stream, resp).await;
    }
    let Ok(path) = quark::hq::resolve(root, req.uri().path()) else {
        return answer(stream, status(StatusCode::FORBIDDEN)).await;
    };
    let mut file = match Source::open(&path).await? {
        Found::File(file) => file,
        Found::Directory => return answer(stream, to_slash(&req)).await,
        Found::Missing => return answer(stream, status(StatusCode::NOT_FOUND)).await,
    };
    let validators = Validators::new(file.len, file.modified);
    let mut resp = status(StatusCode::OK);
    let h = resp.headers_mut();
    h.insert(header::ETAG, value(&validators.etag));
    h.insert(header::LAST_MODIFIED, value(&validators.last_modified()));
    h.insert(header::CACHE_CONTROL, value(&options.cache_control()));
    match validators.check(req.headers()) {
        Verdict::Proceed => {}
        Verdict::NotModified => {
            *resp.status_mut() = StatusCode::NOT_MODIFIED;
            return answer(stream, resp).await;
        }
        Verdict::Failed => {
            let mut failed = status(StatusCode::PRECONDITION_FAILED);
            failed
                .headers_mut()
                .insert(header::CONTENT_LENGTH, 0.into());
            return answer(stream, failed).await;
        }
    }
    let h = resp.headers_mut();
    h.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(super::kind::content_type(&path)),
    );
    // Range is defined for GET only (RFC 9110 §14.2): HEAD ignores it.
    let ranged = match req.headers().get(header::RANGE) {
        Some(r) if !head && validators.range_applies(req.headers()) => {
            range::parse(r.as_bytes(), file.len)
        }
        _ => Ranged::Whole,
    };
    match ranged {
        Ranged::Whole => {}
        Ranged::Part { start, end } => {
            *resp.status_mut() = StatusCode::PARTIAL_CONTENT;
            let range = format!("bytes {start}-{end}/{}", file.len);
            resp.headers_mut()
                .insert(header::CONTENT_RANGE, value(&range));
            file.select(start, end);
        }
        Ranged::Unsatisfiable => {
            let mut refused = status(StatusCode::RANGE_NOT_SATISFIABLE);
            let h = refused.headers_mut();
            h.insert(
                header::CONTENT_RANGE,
                value(&format!("bytes */{}", file.len)),
            );
            h.insert(header::CONTENT_LENGTH, 0.into());
            return answer(stream, refused).await;
        }
    }
    resp.headers_mut()
        .insert(header::CONTENT_LENGTH, file.left().into());
    stream.send_response(&resp).await?;
    if !head {
        send_file(&mut file, stream).await?;
    }
    stream.finish()?;
    Ok(())
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

/// Sends the rest of `file` in DATA frames, reading only what the stream
/// can take now: nothing is read ahead of the connection's room, and no
/// buffer is held while waiting for it.
async fn send_file(file: &mut Source, stream: &mut RequestStream) -> Result<(), ServeError> {
    while file.left() > 0 {
        let max = usize::try_from(file.left()).map_or(FILE_PIECE, |left| left.min(FILE_PIECE));
        let room = stream.writable(max).await?;
        let piece = file.read(room).await?;
        stream.send_data(piece).await?;
    }
    Ok(())
}
