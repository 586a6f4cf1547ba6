//! `h3`: HTTP/3 over quark (`quark-h3`). `GET /<n>` (or `POST /<n>` with a
//! body) returns `n` bytes of pattern, as the hyper adapters serve them; one
//! request per bidirectional stream, the body sent as shared chunks. The
//! server reads each request's head in the connection's own task.

use std::sync::Arc;

use anyhow::bail;

use super::quic::{QuarkEndpoints, breakdown, quark_client_config, serve_quark, server_config};
use super::tls::SERVER_NAME;
use super::{
    Adapter, BoxFuture, Client, ClientConfig, Connection, CpuCounters, Request, ServeConfig,
    Server, ServerStats,
};
use crate::wire::{MAX_LEN, Verifier, pattern_chunks};

/// Unidirectional streams a peer may open: its control stream, two QPACK
/// streams and some to spare (reserved types are allowed to be sent).
pub(crate) const H3_UNI_STREAMS: u32 = 8;

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

/// The `n` of a path `/<n>` (the hyper adapters' routes).
pub(crate) fn response_len(path: &str) -> Option<u64> {
    super::http::parse_path(path)
}

async fn serve_request(
    mut stream: quark_h3::RequestStream,
    stats: &ServerStats,
) -> anyhow::Result<()> {
    let guard = stats.request();
    let req = stream.recv_request().await?;
    let Some(n) = response_len(req.uri().path()) else {
        let resp = http::Response::builder().status(404).body(())?;
        stream.send_response(&resp).await?;
        stream.finish()?;
        bail!("no such route: {}", req.uri().path());
    };
    let body = read_pattern(&mut stream, MAX_LEN).await?;
    // Built in place: `Response::builder` moves its parts (a few hundred
    // bytes) through every call.
    let mut resp = http::Response::new(());
    resp.headers_mut()
        .insert(http::header::CONTENT_LENGTH, http::HeaderValue::from(n));
    stream.send_response(&resp).await?;
    send_pattern(&mut stream, n).await?;
    stream.finish()?;
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
            let base = format!("https://{SERVER_NAME}:{}", cfg.server.port());
            let endpoints = QuarkEndpoints::new(&cfg, config)?;
            Ok(Arc::new(H3Client { endpoints, base }) as Arc<dyn Client>)
        })
    }
}

struct H3Client {
    endpoints: QuarkEndpoints,
    base: String,
}

impl Client for H3Client {
    fn connect(&self) -> BoxFuture<'_, anyhow::Result<Arc<dyn Connection>>> {
        Box::pin(async move {
            let client = quark_h3::Client::new(self.endpoints.connect().await?).await?;
            let base = self.base.clone();
            Ok(Arc::new(H3Conn { client, base }) as Arc<dyn Connection>)
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
    base: String,
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
            let head = http_request(&self.base, &req)?;
            let mut stream = self.client.send_request(&head).await?;
            send_pattern(&mut stream, req.body_len).await?;
            stream.finish()?;
            let resp = stream.recv_response().await?;
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
