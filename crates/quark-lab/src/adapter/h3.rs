//! `h3`: HTTP/3 over quark (`quark-h3`). `GET /<n>` (or `POST /<n>` with a
//! body) returns `n` bytes of pattern, as the hyper adapters serve them; one
//! request per bidirectional stream, the body sent as shared chunks. The
//! server reads each request's head in the connection's own task. Heads go
//! through quark-h3's field API (`recv_request_head`, `send_response_fields`,
//! `send_request_fields`, `recv_response_head`), not the `http` types: a
//! server that routes on the path needs no `Uri` or `HeaderMap`.

use std::sync::Arc;

use anyhow::bail;

use super::quic::{QuarkEndpoints, breakdown, quark_client_config, serve_quark, server_config};
use super::tls::SERVER_NAME;
use super::{
    Adapter, BoxFuture, Client, ClientConfig, Connection, CpuCounters, Request, ServeConfig,
    Server, ServerStats,
};
use crate::wire::{MAX_LEN, Verifier, pattern_chunks, pattern_slice};

/// Unidirectional streams a peer may open: its control stream, two QPACK
/// streams and some to spare (reserved types are allowed to be sent).
pub(crate) const H3_UNI_STREAMS: u32 = 8;

/// Bodies up to this size go with their head and end in one write to the
/// stream (`send_response_with_body`, `send_request_with_body`): quark copies
/// chunks this small into the stream anyway (see its `write_chunk`).
const WHOLE_MAX: u64 = 4096;

/// The quark-h3 adapter.
#[derive(Debug)]
pub struct H3;

/// Sends `len` bytes of pattern as DATA frames of shared chunks.
async fn send_pattern(stream: &mut quark_h3::RequestStream, len: u64) -> anyhow::Result<()> {
    for chunk in pattern_chunks(len) {
        stream.send_data(chunk).await?;
    }
    Ok(())
}

/// Reads a body to its end, checking every byte against the pattern.
async fn read_pattern(stream: &mut quark_h3::RequestStream, expect: u64) -> anyhow::Result<u64> {
    let mut v = Verifier::new(expect);
    let mut bad = None;
    // In place, as the hq adapters read: no buffer per piece.
    while stream
        .recv_data_with(|piece| {
            if bad.is_none() {
                bad = v.update(piece).err();
            }
        })
        .await?
        .is_some()
    {}
    match bad {
        Some(e) => Err(e.into()),
        None => Ok(v.received()),
    }
}

/// `n` in decimal, at the end of `out`.
fn decimal(mut n: u64, out: &mut [u8; 20]) -> &[u8] {
    let mut i = out.len();
    loop {
        i -= 1;
        out[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &out[i..];
        }
    }
}

/// The `n` of a path `/<n>` (the hyper adapters' routes).
pub(crate) fn response_len(path: &str) -> Option<u64> {
    super::http::parse_path(path)
}

async fn serve_request(
    mut stream: quark_h3::RequestStream,
    stats: &ServerStats,
) -> anyhow::Result<()> {
    let guard = stats.request();
    let head = stream.recv_request_head().await?;
    let Some(n) = head.path().and_then(response_len) else {
        stream
            .send_response_fields(http::StatusCode::NOT_FOUND, &[])
            .await?;
        stream.finish()?;
        bail!("no such route: {:?}", head.path());
    };
    drop(head);
    let body = read_pattern(&mut stream, MAX_LEN).await?;
    let mut digits = [0; 20];
    let len = decimal(n, &mut digits);
    let fields: &[(&[u8], &[u8])] = &[(b"content-length", len)];
    if n <= WHOLE_MAX {
        let body = pattern_slice(0, n as usize);
        (stream.send_response_with_body(http::StatusCode::OK, fields, body)).await?;
    } else {
        (stream.send_response_fields(http::StatusCode::OK, fields)).await?;
        send_pattern(&mut stream, n).await?;
        stream.finish()?;
    }
    guard.finish(body, n);
    Ok(())
}

async fn serve_connection(conn: quark::Connection, stats: Arc<ServerStats>) {
    let _open = stats.connection();
    let Ok(h3) = quark_h3::Server::new(conn).await else {
        stats.error();
        return;
    };
    let (h3, stats) = (&h3, &stats);
    super::serve::serve_streams(
        || async move { h3.accept_stream().await.ok().flatten() },
        |stream| {
            // Boxed at once: the request's future is a few KB, and unboxed it
            // was copied whole at each move into and within the set of
            // running requests (about 1 000 instructions per request).
            let serve = Box::pin(serve_request(stream, stats));
            async move {
                // Failures are counted by the request guard.
                let _ = serve.await;
            }
        },
    )
    .await;
}

impl Adapter for H3 {
    fn name(&self) -> &'static str {
        "h3"
    }

    fn about(&self) -> &'static str {
        "quark-h3 HTTP/3 over quark (this project; QPACK static table)"
    }

    fn busy_poll(&self, window: std::time::Duration) -> bool {
        super::quic::Quic.busy_poll(window)
    }

    fn own_workers(&self) -> bool {
        true
    }

    fn serve(&self, cfg: ServeConfig) -> BoxFuture<'static, anyhow::Result<Box<dyn Server>>> {
        Box::pin(async move {
            let config = server_config(&cfg, quark_h3::ALPN, H3_UNI_STREAMS.into())?;
            serve_quark(cfg, config, serve_connection)
        })
    }

    fn client(&self, cfg: ClientConfig) -> BoxFuture<'static, anyhow::Result<Arc<dyn Client>>> {
        Box::pin(async move {
            let alpn = quark_h3::ALPN;
            let config = quark_client_config(&cfg.cert, cfg.cipher, alpn, H3_UNI_STREAMS.into())?;
            let authority = format!("{SERVER_NAME}:{}", cfg.server.port());
            let endpoints = QuarkEndpoints::new(&cfg, config)?;
            Ok(Arc::new(H3Client {
                endpoints,
                authority,
            }) as Arc<dyn Client>)
        })
    }
}

struct H3Client {
    endpoints: QuarkEndpoints,
    authority: String,
}

impl Client for H3Client {
    fn connect(&self) -> BoxFuture<'_, anyhow::Result<Arc<dyn Connection>>> {
        Box::pin(async move {
            let client = quark_h3::Client::new(self.endpoints.connect().await?).await?;
            let authority = self.authority.clone();
            Ok(Arc::new(H3Conn { client, authority }) as Arc<dyn Connection>)
        })
    }

    fn wait_idle(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.endpoints.wait_idle())
    }

    fn cpu_counters(&self) -> Option<CpuCounters> {
        Some(breakdown())
    }
}

struct H3Conn {
    client: quark_h3::Client,
    authority: String,
}

/// The request of `req`: GET without a body, POST with one. A client sends
/// the same head over and over, so the last one is kept (per thread) and
/// cloned: parsing its URI alone was ~3 000 instructions of a ~41 000
/// instruction request on the client (callgrind), lab cost rather than the
/// stack's. Shared by the h3 adapters (quark-h3, h3-quinn, h3-on-quark).
pub(crate) fn http_request(base: &str, req: &Request) -> anyhow::Result<http::Request<()>> {
    /// The base, response and body lengths, and the head made of them.
    type Last = Option<(String, u64, u64, http::Request<()>)>;
    thread_local! {
        static LAST: std::cell::RefCell<Last> = const { std::cell::RefCell::new(None) };
    }
    let key = (req.response_len, req.body_len);
    let hit = LAST.with_borrow(|last| match last {
        Some((b, n, len, head)) if b == base && (*n, *len) == key => Some(head.clone()),
        _ => None,
    });
    if let Some(head) = hit {
        return Ok(head);
    }
    let head = build_request(base, req)?;
    LAST.set(Some((base.to_string(), key.0, key.1, head.clone())));
    Ok(head)
}

/// Built in place: `Request::builder` moves its parts (a few hundred bytes)
/// through every call.
fn build_request(base: &str, req: &Request) -> anyhow::Result<http::Request<()>> {
    let mut head = http::Request::new(());
    *head.uri_mut() = http::Uri::try_from(format!("{base}/{}", req.response_len))?;
    if req.body_len > 0 {
        *head.method_mut() = http::Method::POST;
        head.headers_mut().insert(
            http::header::CONTENT_LENGTH,
            http::HeaderValue::from(req.body_len),
        );
    }
    Ok(head)
}

impl Connection for H3Conn {
    fn request(&self, req: Request) -> BoxFuture<'_, anyhow::Result<()>> {
        Box::pin(async move {
            // `/<n>` and content-length, formatted on the stack.
            let (mut path, mut digits) = ([b'/'; 21], [0; 20]);
            let n = decimal(req.response_len, &mut digits).len();
            path[1..=n].copy_from_slice(&digits[20 - n..]);
            let path = std::str::from_utf8(&path[..=n])?;
            let len = decimal(req.body_len, &mut digits);
            let (method, fields): (_, &[(&[u8], &[u8])]) = match req.body_len {
                0 => (&http::Method::GET, &[]),
                _ => (&http::Method::POST, &[(b"content-length", len)]),
            };
            let (client, authority) = (&self.client, &self.authority);
            let mut stream = if req.body_len <= WHOLE_MAX {
                let body = pattern_slice(0, req.body_len as usize);
                (client.send_request_with_body(method, authority, path, fields, body)).await?
            } else {
                let mut stream =
                    (client.send_request_fields(method, authority, path, fields)).await?;
                send_pattern(&mut stream, req.body_len).await?;
                stream.finish()?;
                stream
            };
            let resp = stream.recv_response_head().await?;
            if resp.status() != http::StatusCode::OK {
                bail!("server answered {}", resp.status());
            }
            let got = read_pattern(&mut stream, req.response_len).await?;
            if got != req.response_len {
                bail!("response: {got} of {} bytes", req.response_len);
            }
            Ok(())
        })
    }

    fn close(&self) -> BoxFuture<'_, anyhow::Result<()>> {
        self.client
            .connection()
            .close(quark_h3::error::H3_NO_ERROR, b"done");
        Box::pin(async { Ok(()) })
    }
}
