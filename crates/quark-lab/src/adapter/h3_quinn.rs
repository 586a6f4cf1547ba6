//! `h3-quinn`: HTTP/3 from hyperium's `h3` crate over quinn, the reference
//! HTTP/3 stack for `h3`. Same routes and request shape as the `h3` adapter;
//! requests are served concurrently inside the connection's task, as every
//! other QUIC adapter does (`h3`'s accept is safe to restart).

use std::sync::Arc;

use anyhow::bail;
use bytes::{Buf, Bytes};
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;

use super::h3::{H3_UNI_STREAMS, http_request, response_len};
use super::quinn::{QuinnEndpoint, quinn_client_config, serve_quinn, server_config};
use super::tls::SERVER_NAME;
use super::{
    Adapter, BoxFuture, Client, ClientConfig, Connection, Request, ServeConfig, Server, ServerStats,
};
use crate::wire::{MAX_LEN, Verifier, pattern_chunks};

/// The h3-over-quinn adapter.
#[derive(Debug)]
pub struct H3Quinn;

/// Checks a received piece (an `h3` buffer of one or more slices) against the pattern.
fn verify(v: &mut Verifier, mut chunk: impl Buf) -> Result<(), crate::wire::WireError> {
    while chunk.has_remaining() {
        let n = chunk.chunk().len();
        v.update(chunk.chunk())?;
        chunk.advance(n);
    }
    Ok(())
}

/// Answers one request of the lab's routes through hyperium h3, over any QUIC
/// layer (h3-quinn here, h3-quark in `h3-on-quark`).
async fn serve_request<C>(
    resolver: h3::server::RequestResolver<C, Bytes>,
    stats: &ServerStats,
) -> anyhow::Result<()>
where
    C: h3::quic::Connection<Bytes>,
{
    let guard = stats.request();
    let (req, mut stream) = resolver.resolve_request().await?;
    let Some(n) = response_len(req.uri().path()) else {
        stream
            .send_response(http::Response::builder().status(404).body(())?)
            .await?;
        stream.finish().await?;
        bail!("no such route: {}", req.uri().path());
    };
    let mut v = Verifier::new(MAX_LEN);
    while let Some(chunk) = stream.recv_data().await? {
        verify(&mut v, chunk)?;
    }
    let resp = http::Response::builder()
        .header("content-length", n)
        .body(())?;
    stream.send_response(resp).await?;
    for chunk in pattern_chunks(n) {
        stream.send_data(chunk).await?;
    }
    stream.finish().await?;
    guard.finish(v.received(), n);
    Ok(())
}

/// Serves an established connection's requests with hyperium h3's server,
/// concurrently inside this task; shared by `h3-quinn` and `h3-on-quark`.
pub(crate) async fn serve_h3<C>(quic: C, stats: &ServerStats)
where
    C: h3::quic::Connection<Bytes>,
{
    let _open = stats.connection();
    let Ok(mut h3) = h3::server::Connection::<_, Bytes>::new(quic).await else {
        stats.error();
        return;
    };
    let mut running = FuturesUnordered::new();
    loop {
        tokio::select! {
            Some(()) = running.next(), if !running.is_empty() => {}
            next = h3.accept() => match next {
                Ok(Some(resolver)) => running.push(async move {
                    // Failures are counted by the request guard.
                    let _ = serve_request(resolver, stats).await;
                }),
                _ => break,
            },
        }
    }
    while running.next().await.is_some() {}
}

async fn serve_connection(incoming: quinn::Incoming, stats: Arc<ServerStats>) {
    let Ok(conn) = incoming.await else {
        stats.error();
        return;
    };
    serve_h3(h3_quinn::Connection::new(conn), &stats).await;
}

/// One lab request through hyperium h3's client, over any QUIC layer: the
/// body sent as pattern chunks, every byte of the response checked.
pub(crate) async fn h3_request<O>(
    send: &h3::client::SendRequest<O, Bytes>,
    base: &str,
    req: Request,
) -> anyhow::Result<()>
where
    O: h3::quic::OpenStreams<Bytes> + Clone,
{
    let head = http_request(base, &req)?;
    let mut send = send.clone();
    let mut stream = send.send_request(head).await?;
    for chunk in pattern_chunks(req.body_len) {
        stream.send_data(chunk).await?;
    }
    stream.finish().await?;
    let resp = stream.recv_response().await?;
    if resp.status() != http::StatusCode::OK {
        bail!("server answered {}", resp.status());
    }
    let mut v = Verifier::new(req.response_len);
    while let Some(chunk) = stream.recv_data().await? {
        verify(&mut v, chunk)?;
    }
    v.finish()?;
    Ok(())
}

impl Adapter for H3Quinn {
    fn name(&self) -> &'static str {
        "h3-quinn"
    }

    fn about(&self) -> &'static str {
        "hyperium h3 0.0.8 HTTP/3 over quinn 0.11"
    }

    fn serve(&self, cfg: ServeConfig) -> BoxFuture<'static, anyhow::Result<Box<dyn Server>>> {
        Box::pin(async move {
            let config = server_config(&cfg, b"h3", H3_UNI_STREAMS)?;
            serve_quinn(cfg, config, serve_connection)
        })
    }

    fn client(&self, cfg: ClientConfig) -> BoxFuture<'static, anyhow::Result<Arc<dyn Client>>> {
        Box::pin(async move {
            let config = quinn_client_config(&cfg.cert, cfg.cipher, b"h3", H3_UNI_STREAMS)?;
            let base = format!("https://{SERVER_NAME}:{}", cfg.server.port());
            let endpoint = QuinnEndpoint::new(&cfg, config)?;
            Ok(Arc::new(H3QuinnClient { endpoint, base }) as Arc<dyn Client>)
        })
    }
}

struct H3QuinnClient {
    endpoint: QuinnEndpoint,
    base: String,
}

impl Client for H3QuinnClient {
    fn connect(&self) -> BoxFuture<'_, anyhow::Result<Arc<dyn Connection>>> {
        Box::pin(async move {
            let conn = self.endpoint.connect().await?;
            let quic = conn.clone();
            // H3_NO_ERROR (RFC 9114 §8.1).
            let close = move || quic.close(0x100u32.into(), b"done");
            h3_connect(h3_quinn::Connection::new(conn), close, &self.base).await
        })
    }

    fn wait_idle(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.endpoint.wait_idle())
    }
}

/// A lab connection through hyperium h3's client over any QUIC layer
/// (h3-quinn, h3-quark): `close` closes the QUIC connection underneath.
struct H3Conn<O: h3::quic::OpenStreams<Bytes>> {
    send: h3::client::SendRequest<O, Bytes>,
    close: Box<dyn Fn() + Send + Sync>,
    driver: tokio::task::JoinHandle<()>,
    base: String,
}

/// Starts hyperium h3's client on `quic` (its connection driver on a task of
/// its own) and wraps it as a lab connection.
pub(crate) async fn h3_connect<C, O>(
    quic: C,
    close: impl Fn() + Send + Sync + 'static,
    base: &str,
) -> anyhow::Result<Arc<dyn Connection>>
where
    C: h3::quic::Connection<Bytes, OpenStreams = O> + Send + 'static,
    C::RecvStream: Send,
    <C as h3::quic::OpenStreams<Bytes>>::SendStream: Send,
    O: h3::quic::OpenStreams<Bytes> + Clone + Send + Sync + 'static,
    O::BidiStream: Send,
{
    let (mut driver, send) = h3::client::new(quic).await?;
    let driver = tokio::spawn(async move {
        let _ = std::future::poll_fn(|cx| driver.poll_close(cx)).await;
    });
    Ok(Arc::new(H3Conn {
        send,
        close: Box::new(close),
        driver,
        base: base.to_owned(),
    }) as Arc<dyn Connection>)
}

impl<O> Connection for H3Conn<O>
where
    O: h3::quic::OpenStreams<Bytes> + Clone + Send + Sync + 'static,
    O::BidiStream: Send,
{
    fn request(&self, req: Request) -> BoxFuture<'_, anyhow::Result<()>> {
        Box::pin(h3_request(&self.send, &self.base, req))
    }

    fn close(&self) -> BoxFuture<'_, anyhow::Result<()>> {
        (self.close)();
        self.driver.abort();
        Box::pin(async { Ok(()) })
    }
}
