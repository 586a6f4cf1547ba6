//! `quark get --h3`'s request options, as curl spells them: `-i` (status
//! and headers, to standard error so bodies stay byte-exact), `-H` (a
//! header, repeatable), `-X` (the method), `-d` / `--data-binary` (a body).
//!
//! With any of them set, a response is a success when its status is 2xx or
//! 304 (a Range request's 206 writes its part); other statuses print (with
//! `-i`) and fail as without them.

use std::path::PathBuf;

use anyhow::{Context, anyhow, bail};
use bytes::Bytes;
use clap::Args;
use http::header::{CONTENT_LENGTH, CONTENT_TYPE, HeaderName, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use tokio::io::{AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Bytes of a request body sent per DATA frame.
const PIECE: usize = 64 * 1024;

/// How requests are made (with `--h3`).
#[derive(Args, Debug, Default)]
pub(crate) struct RequestArgs {
    /// With --h3: print the response's status line and headers to standard
    /// error before its body is written.
    #[arg(short = 'i', long = "include")]
    pub(crate) include: bool,
    /// With --h3: a request header `name: value` (repeatable).
    #[arg(short = 'H', long = "header", value_name = "NAME: VALUE")]
    pub(crate) headers: Vec<String>,
    /// With --h3: the request method (default GET, or POST with a body).
    #[arg(short = 'X', long = "request", value_name = "METHOD")]
    pub(crate) method: Option<String>,
    /// With --h3: send STRING as the request body.
    #[arg(
        short = 'd',
        long = "data",
        value_name = "STRING",
        conflicts_with = "data_binary"
    )]
    pub(crate) data: Option<String>,
    /// With --h3: send the file's bytes as the request body (`@FILE`; `@-`
    /// for standard input) or the text itself.
    #[arg(long, value_name = "@FILE")]
    pub(crate) data_binary: Option<String>,
}

/// A body to send.
#[derive(Debug, Clone)]
enum Payload {
    Text(Bytes),
    File(PathBuf),
    Stdin,
}

/// [`RequestArgs`] checked.
#[derive(Debug, Clone)]
pub(crate) struct RequestOptions {
    pub(crate) include: bool,
    pub(crate) method: Method,
    pub(crate) headers: Vec<(HeaderName, HeaderValue)>,
    /// Read once, sent with each URL's request.
    pub(crate) body: Option<Bytes>,
}

impl RequestArgs {
    /// None when nothing is set: plain GETs as without these options.
    pub(crate) async fn options(&self) -> anyhow::Result<Option<RequestOptions>> {
        let body = match (&self.data, &self.data_binary) {
            (Some(text), _) => Some(Payload::Text(Bytes::from(text.clone().into_bytes()))),
            (None, Some(b)) => Some(match b.strip_prefix('@') {
                Some("-") => Payload::Stdin,
                Some(path) => Payload::File(PathBuf::from(path)),
                None => Payload::Text(Bytes::from(b.clone().into_bytes())),
            }),
            (None, None) => None,
        };
        if !self.include && self.headers.is_empty() && self.method.is_none() && body.is_none() {
            return Ok(None);
        }
        let method = match &self.method {
            Some(m) => {
                Method::from_bytes(m.as_bytes()).map_err(|_| anyhow!("-X {m}: bad method"))?
            }
            None if body.is_some() => Method::POST,
            None => Method::GET,
        };
        let headers = self
            .headers
            .iter()
            .map(|h| parse_header(h))
            .collect::<anyhow::Result<_>>()?;
        let body = match body {
            Some(b) => Some(payload(&b).await?),
            None => None,
        };
        Ok(Some(RequestOptions {
            include: self.include,
            method,
            headers,
            body,
        }))
    }
}

/// `name: value` (the value trimmed), as curl's -H takes it.
pub(crate) fn parse_header(h: &str) -> anyhow::Result<(HeaderName, HeaderValue)> {
    let (name, value) = h
        .split_once(':')
        .ok_or_else(|| anyhow!("-H '{h}': expected 'name: value'"))?;
    let name = HeaderName::from_bytes(name.trim().as_bytes())
        .map_err(|_| anyhow!("-H '{h}': bad header name"))?;
    let value =
        HeaderValue::from_str(value.trim()).map_err(|_| anyhow!("-H '{h}': bad header value"))?;
    Ok((name, value))
}

/// The body's bytes, held in memory (as curl does).
async fn payload(body: &Payload) -> anyhow::Result<Bytes> {
    Ok(match body {
        Payload::Text(b) => b.clone(),
        Payload::File(path) => Bytes::from(
            tokio::fs::read(path)
                .await
                .with_context(|| format!("--data-binary @{}", path.display()))?,
        ),
        Payload::Stdin => {
            let mut all = Vec::new();
            tokio::io::stdin().read_to_end(&mut all).await?;
            Bytes::from(all)
        }
    })
}

/// `HTTP/3 200` and one `name: value` line per header, then a blank line.
pub(crate) fn head_text(resp: &Response<()>) -> String {
    let mut s = format!("HTTP/3 {}\r\n", resp.status().as_u16());
    for (name, value) in resp.headers() {
        s += &format!("{name}: {}\r\n", String::from_utf8_lossy(value.as_bytes()));
    }
    s + "\r\n"
}

/// Makes the request `opts` describe for `path`, writing the body to `out`.
pub(crate) async fn fetch(
    client: &quark_h3::Client,
    authority: &str,
    path: &str,
    opts: &RequestOptions,
    out: &mut (impl AsyncWrite + Unpin),
    mut progress: impl FnMut(usize),
) -> anyhow::Result<u64> {
    let mut req = Request::builder()
        .method(opts.method.clone())
        .uri(format!("https://{authority}{path}"))
        .body(())?;
    let body = opts.body.clone();
    let h = req.headers_mut();
    if let Some(body) = &body {
        h.insert(CONTENT_LENGTH, body.len().into());
        // curl's default for -d, unless -H names one.
        h.insert(
            CONTENT_TYPE,
            HeaderValue::from_static("application/x-www-form-urlencoded"),
        );
    }
    for (name, value) in &opts.headers {
        h.insert(name.clone(), value.clone());
    }
    let mut stream = client.send_request(&req).await?;
    if let Some(mut body) = body {
        while !body.is_empty() {
            let room = stream.writable(body.len().min(PIECE)).await?;
            stream.send_data(body.split_to(room)).await?;
        }
    }
    stream.finish()?;
    let resp = stream.recv_response().await?;
    if opts.include {
        let mut err = tokio::io::stderr();
        err.write_all(head_text(&resp).as_bytes()).await?;
        err.flush().await?;
    }
    let status = resp.status();
    if !status.is_success() && status != StatusCode::NOT_MODIFIED {
        stream.cancel(quark_h3::error::H3_REQUEST_CANCELLED);
        bail!("server answered {status}");
    }
    let mut total = 0u64;
    while let Some(piece) = stream.recv_data().await? {
        out.write_all(&piece).await?;
        total += piece.len() as u64;
        progress(piece.len());
    }
    out.flush().await?;
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_and_methods() {
        let (n, v) = parse_header("X-Test:  a b ").unwrap();
        assert_eq!((n.as_str(), v.to_str().unwrap()), ("x-test", "a b"));
        assert!(parse_header("no colon").is_err());
        assert!(parse_header("bad name: x").is_err());
        let args = RequestArgs {
            data: Some("a=1".into()),
            ..Default::default()
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let o = rt.block_on(args.options()).unwrap().unwrap();
        assert_eq!(o.method, Method::POST);
        assert_eq!(o.body.as_deref(), Some(&b"a=1"[..]));
        assert!(
            rt.block_on(RequestArgs::default().options())
                .unwrap()
                .is_none()
        );
        let args = RequestArgs {
            method: Some("PUT PUT".into()),
            ..Default::default()
        };
        assert!(rt.block_on(args.options()).is_err());
    }

    #[test]
    fn head_lines() {
        let mut r = Response::new(());
        *r.status_mut() = StatusCode::PARTIAL_CONTENT;
        r.headers_mut()
            .insert(CONTENT_LENGTH, HeaderValue::from_static("10"));
        assert_eq!(head_text(&r), "HTTP/3 206\r\ncontent-length: 10\r\n\r\n");
    }
}
