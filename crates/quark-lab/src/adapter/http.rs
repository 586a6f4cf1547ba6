//! `http1`, `http1+tls`, `http2`, `http2+tls`: hyper 1 clients and servers.
//!
//! `GET /<n>` (or `POST /<n>` with a body) returns `n` bytes of pattern.
//! HTTP/1.1 without pipelining serves one request at a time per connection, so
//! concurrent requests on one `http1` connection queue behind each other
//! (head-of-line blocking, as in the cloud study). HTTP/2 multiplexes them.
//! HTTP/2 windows are raised to 4 MiB per stream and 16 MiB per connection so
//! flow control does not cap loopback goodput; cleartext HTTP/2 uses prior knowledge.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

use anyhow::{Context, anyhow, bail};
use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::task::JoinHandle;
use tokio_rustls::{TlsAcceptor, TlsConnector};

use super::tcp::{TaskServer, bind_tcp, connect_tcp};
use super::tls::{SERVER_NAME, client_config};
use super::{
    Adapter, BoxFuture, Client, ClientConfig, Connection, Request, ServeConfig, Server, ServerStats,
};
use crate::wire::{CHUNK, MAX_LEN, Verifier, pattern_chunk};

const STREAM_WINDOW: u32 = 4 << 20;
const CONN_WINDOW: u32 = 16 << 20;
const MAX_STREAMS: u32 = 1024;

/// HTTP version of an adapter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// HTTP/1.1.
    Http1,
    /// HTTP/2.
    Http2,
}

/// The hyper adapters.
#[derive(Debug)]
pub struct Http {
    /// HTTP/1.1 or HTTP/2.
    pub version: Version,
    /// Whether the connection runs inside TLS 1.3.
    pub tls: bool,
}

impl Http {
    fn alpn(&self) -> &'static [u8] {
        match self.version {
            Version::Http1 => b"http/1.1",
            Version::Http2 => b"h2",
        }
    }
}

/// A body of `len` pattern bytes, produced in shared chunks.
#[derive(Debug)]
pub struct PatternBody {
    off: u64,
    len: u64,
}

impl PatternBody {
    /// A body of `len` bytes.
    pub fn new(len: u64) -> Self {
        PatternBody { off: 0, len }
    }
}

impl Body for PatternBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut TaskContext<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.off >= self.len {
            return Poll::Ready(None);
        }
        let n = (self.len - self.off).min(CHUNK as u64) as usize;
        let chunk = pattern_chunk(self.off, n);
        self.off += n as u64;
        Poll::Ready(Some(Ok(Frame::data(chunk))))
    }

    fn is_end_stream(&self) -> bool {
        self.off >= self.len
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.len - self.off)
    }
}

/// Reads a body to its end, checking every byte; returns its length.
async fn read_body(mut body: Incoming, expect: Option<u64>) -> anyhow::Result<u64> {
    let mut v = Verifier::new(expect.unwrap_or(MAX_LEN));
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame?.into_data() {
            v.update(&data)?;
        }
    }
    if expect.is_some() {
        v.finish()?;
    }
    Ok(v.received())
}

pub(crate) fn parse_path(path: &str) -> Option<u64> {
    let digits = path.strip_prefix('/')?;
    if digits.is_empty() || digits.len() > 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().filter(|&n| n <= MAX_LEN)
}

async fn handle(
    req: hyper::Request<Incoming>,
    stats: Arc<ServerStats>,
) -> Result<hyper::Response<PatternBody>, Infallible> {
    let status = |code: u16| {
        let mut r = hyper::Response::new(PatternBody::new(0));
        *r.status_mut() =
            hyper::StatusCode::from_u16(code).unwrap_or(hyper::StatusCode::BAD_REQUEST);
        Ok(r)
    };
    let Some(n) = parse_path(req.uri().path()) else {
        return status(404);
    };
    let guard = stats.request();
    let Ok(body) = read_body(req.into_body(), None).await else {
        return status(400);
    };
    guard.finish(body, n);
    Ok(hyper::Response::new(PatternBody::new(n)))
}

async fn serve_http<S>(io: S, version: Version, stats: Arc<ServerStats>) -> anyhow::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let _open = stats.connection();
    let svc = {
        let stats = stats.clone();
        service_fn(move |req| handle(req, stats.clone()))
    };
    let io = TokioIo::new(io);
    match version {
        Version::Http1 => {
            hyper::server::conn::http1::Builder::new()
                .serve_connection(io, svc)
                .await?
        }
        Version::Http2 => {
            hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                .max_concurrent_streams(MAX_STREAMS)
                .initial_stream_window_size(STREAM_WINDOW)
                .initial_connection_window_size(CONN_WINDOW)
                .serve_connection(io, svc)
                .await?
        }
    }
    Ok(())
}

impl Adapter for Http {
    fn name(&self) -> &'static str {
        match (self.version, self.tls) {
            (Version::Http1, false) => "http1",
            (Version::Http1, true) => "http1+tls",
            (Version::Http2, false) => "http2",
            (Version::Http2, true) => "http2+tls",
        }
    }

    fn about(&self) -> &'static str {
        match self.version {
            Version::Http1 => "hyper 1 HTTP/1.1 (keep-alive, no pipelining)",
            Version::Http2 => "hyper 1 HTTP/2 (multiplexed)",
        }
    }

    fn serve(&self, cfg: ServeConfig) -> BoxFuture<'static, anyhow::Result<Box<dyn Server>>> {
        let (version, tls, alpn) = (self.version, self.tls, self.alpn());
        Box::pin(async move {
            let acceptor = match tls {
                true => Some(TlsAcceptor::from(Arc::new(
                    cfg.identity.server_config(cfg.cipher, &[alpn])?,
                ))),
                false => None,
            };
            let listener = bind_tcp(cfg.listen).await?;
            let addr = listener.local_addr()?;
            let stats = cfg.stats;
            let task = tokio::spawn(async move {
                loop {
                    let Ok((sock, _)) = listener.accept().await else {
                        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
                        continue;
                    };
                    let _ = sock.set_nodelay(true);
                    let (stats, acceptor) = (stats.clone(), acceptor.clone());
                    tokio::spawn(async move {
                        // Failed requests are counted by their guards; a client
                        // dropping a finished connection is not an error.
                        match acceptor {
                            Some(a) => match a.accept(sock).await {
                                Ok(s) => serve_http(s, version, stats.clone()).await.ok(),
                                Err(_) => {
                                    stats.error();
                                    None
                                }
                            },
                            None => serve_http(sock, version, stats.clone()).await.ok(),
                        };
                    });
                }
            });
            Ok(Box::new(TaskServer { addr, task }) as Box<dyn Server>)
        })
    }

    fn client(&self, cfg: ClientConfig) -> BoxFuture<'static, anyhow::Result<Arc<dyn Client>>> {
        let (version, tls, alpn) = (self.version, self.tls, self.alpn());
        Box::pin(async move {
            let connector = match tls {
                true => Some(TlsConnector::from(Arc::new(client_config(
                    &cfg.cert,
                    cfg.cipher,
                    &[alpn],
                )?))),
                false => None,
            };
            let scheme = if tls { "https" } else { "http" };
            let base = format!("{scheme}://{SERVER_NAME}:{}", cfg.server.port());
            Ok(Arc::new(HttpClient {
                server: cfg.server,
                version,
                connector,
                base,
            }) as Arc<dyn Client>)
        })
    }
}

struct HttpClient {
    server: SocketAddr,
    version: Version,
    connector: Option<TlsConnector>,
    base: String,
}

enum Sender {
    H1(tokio::sync::Mutex<Option<hyper::client::conn::http1::SendRequest<PatternBody>>>),
    H2(std::sync::Mutex<Option<hyper::client::conn::http2::SendRequest<PatternBody>>>),
}

struct HttpConn {
    sender: Sender,
    task: std::sync::Mutex<Option<JoinHandle<()>>>,
    base: String,
}

async fn handshake<S>(io: S, version: Version) -> anyhow::Result<(Sender, JoinHandle<()>)>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let io = TokioIo::new(io);
    Ok(match version {
        Version::Http1 => {
            let (s, conn) = hyper::client::conn::http1::handshake(io).await?;
            (
                Sender::H1(tokio::sync::Mutex::new(Some(s))),
                tokio::spawn(async move {
                    conn.await.ok();
                }),
            )
        }
        Version::Http2 => {
            let (s, conn) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
                .initial_stream_window_size(STREAM_WINDOW)
                .initial_connection_window_size(CONN_WINDOW)
                .handshake(io)
                .await?;
            (
                Sender::H2(std::sync::Mutex::new(Some(s))),
                tokio::spawn(async move {
                    conn.await.ok();
                }),
            )
        }
    })
}

impl Client for HttpClient {
    fn connect(&self) -> BoxFuture<'_, anyhow::Result<Arc<dyn Connection>>> {
        Box::pin(async move {
            let sock = connect_tcp(self.server).await?;
            let (sender, task) = match &self.connector {
                Some(c) => {
                    let name = rustls_pki_types::ServerName::try_from(SERVER_NAME)?;
                    handshake(
                        c.connect(name, sock).await.context("TLS handshake")?,
                        self.version,
                    )
                    .await?
                }
                None => handshake(sock, self.version).await?,
            };
            let task = std::sync::Mutex::new(Some(task));
            Ok(Arc::new(HttpConn {
                sender,
                task,
                base: self.base.clone(),
            }) as Arc<dyn Connection>)
        })
    }
}

impl Connection for HttpConn {
    fn request(&self, req: Request) -> BoxFuture<'_, anyhow::Result<()>> {
        Box::pin(async move {
            let method = if req.body_len == 0 {
                hyper::Method::GET
            } else {
                hyper::Method::POST
            };
            let builder = hyper::Request::builder().method(method);
            let builder = match self.sender {
                // Origin form plus Host for HTTP/1.1, absolute form (:scheme, :authority) for HTTP/2.
                Sender::H1(_) => builder
                    .uri(format!("/{}", req.response_len))
                    .header(hyper::header::HOST, SERVER_NAME),
                Sender::H2(_) => builder.uri(format!("{}/{}", self.base, req.response_len)),
            };
            let request = builder.body(PatternBody::new(req.body_len))?;
            let response = match &self.sender {
                Sender::H1(m) => {
                    let sent = {
                        let mut guard = m.lock().await;
                        let s = guard.as_mut().ok_or_else(|| anyhow!("connection closed"))?;
                        s.ready().await?;
                        s.send_request(request)
                    };
                    sent.await?
                }
                Sender::H2(m) => {
                    let s = m.lock().ok().and_then(|g| g.clone());
                    let mut s = s.ok_or_else(|| anyhow!("connection closed"))?;
                    s.ready().await?;
                    s.send_request(request).await?
                }
            };
            if response.status() != hyper::StatusCode::OK {
                bail!("server answered {}", response.status());
            }
            read_body(response.into_body(), Some(req.response_len))
                .await
                .map_err(|e| anyhow!("response: {e}"))?;
            Ok(())
        })
    }

    fn close(&self) -> BoxFuture<'_, anyhow::Result<()>> {
        Box::pin(async move {
            // Dropping the last sender lets hyper close the connection.
            match &self.sender {
                Sender::H1(m) => drop(m.lock().await.take()),
                Sender::H2(m) => drop(m.lock().ok().and_then(|mut g| g.take())),
            }
            let task = self.task.lock().ok().and_then(|mut t| t.take());
            if let Some(t) = task {
                t.await.ok();
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::parse_path;

    #[test]
    fn paths() {
        assert_eq!(parse_path("/2000"), Some(2000));
        for bad in [
            "/",
            "2000",
            "/-1",
            "/1x",
            "/99999999999999999999999",
            "/1099511627777",
        ] {
            assert_eq!(parse_path(bad), None, "{bad}");
        }
    }
}
