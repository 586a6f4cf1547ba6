//! `quark serve --h3`'s TCP side: the same files over HTTP/1.1 and HTTP/2
//! on TLS at the same port, each response advertising HTTP/3 with
//! `Alt-Svc: h3=":PORT"` (RFC 7838 §3) so browsers move to QUIC.
//!
//! The answers are `quark_h3::files::decide`'s, as over HTTP/3. Limits (see
//! SECURITY.md): at most `max_connections` at once (more wait in the
//! kernel's backlog), a TLS handshake and each request head within
//! `HEAD_TIMEOUT`, small header and send buffers, and at most
//! `H2_STREAMS` requests at once per HTTP/2 connection.

use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{ALT_SVC, HeaderValue};
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use quark_h3::files::{FileBody, FileOptions, decide};
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, mpsc};
use tokio_rustls::TlsAcceptor;

use crate::access_log::{AccessLog, Line};

/// A TLS handshake, and each request head (the first and those after it
/// on a kept-alive HTTP/1.1 connection), must arrive within this.
pub(crate) const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// Requests served at once on one HTTP/2 connection.
const H2_STREAMS: u32 = 32;
/// Bytes of a file read per piece; a response holds at most two.
const PIECE: usize = 16 * 1024;
/// A request head's size limit (HTTP/1.1 buffer, HTTP/2 header list).
const MAX_HEAD: usize = 16 * 1024;
/// An HTTP/2 connection dead this long (no PING answered) is dropped.
const H2_KEEPALIVE: Duration = Duration::from_secs(20);

/// What the TCP listener serves with.
pub(crate) struct TcpFiles {
    pub(crate) root: PathBuf,
    pub(crate) options: FileOptions,
    /// `h3=":PORT"; ma=86400`.
    pub(crate) alt_svc: HeaderValue,
    pub(crate) log: Option<AccessLog>,
    pub(crate) tls: TlsAcceptor,
    pub(crate) max_connections: usize,
}

/// The ALPN protocols offered on TCP, HTTP/2 preferred.
pub(crate) const ALPN: [&[u8]; 2] = [b"h2", b"http/1.1"];

/// The Alt-Svc value advertising HTTP/3 on `port` for a day.
pub(crate) fn alt_svc(port: u16) -> HeaderValue {
    HeaderValue::from_str(&format!("h3=\":{port}\"; ma=86400")).expect("a valid header value")
}

/// Accepts TCP connections until the task is dropped.
pub(crate) async fn serve(listener: TcpListener, files: Arc<TcpFiles>) {
    let slots = Arc::new(Semaphore::new(files.max_connections));
    loop {
        // A slot first: past the limit, connections wait in the backlog.
        let Ok(slot) = slots.clone().acquire_owned().await else {
            return;
        };
        let (tcp, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                tracing::debug!(error = %e, "tcp accept");
                // Out of descriptors and the like: a pause, not a spin.
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = tcp.set_nodelay(true);
        let files = files.clone();
        tokio::spawn(async move {
            if let Err(e) = connection(tcp, peer, files).await {
                tracing::debug!(%peer, error = %e, "tcp connection");
            }
            drop(slot);
        });
    }
}

async fn connection(
    tcp: tokio::net::TcpStream,
    peer: SocketAddr,
    files: Arc<TcpFiles>,
) -> anyhow::Result<()> {
    let tls = tokio::time::timeout(HEAD_TIMEOUT, files.tls.accept(tcp)).await??;
    let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
    let protocol = if h2 { "HTTP/2" } else { "HTTP/1.1" };
    let svc = service_fn(move |req| respond(req, peer, protocol, files.clone()));
    let io = TokioIo::new(tls);
    if h2 {
        hyper::server::conn::http2::Builder::new(TokioExecutor::new())
            .timer(TokioTimer::new())
            .max_concurrent_streams(H2_STREAMS)
            .max_header_list_size(MAX_HEAD as u32)
            .max_send_buf_size(PIECE)
            .keep_alive_interval(H2_KEEPALIVE)
            .keep_alive_timeout(H2_KEEPALIVE)
            .serve_connection(io, svc)
            .await?;
    } else {
        hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(HEAD_TIMEOUT)
            .max_buf_size(MAX_HEAD.max(8192))
            .serve_connection(io, svc)
            .await?;
    }
    Ok(())
}

/// One request: `decide`'s answer, Alt-Svc added, the file streamed.
async fn respond(
    req: hyper::Request<Incoming>,
    peer: SocketAddr,
    protocol: &'static str,
    files: Arc<TcpFiles>,
) -> Result<hyper::Response<FileStream>, Infallible> {
    let start = Instant::now();
    // A request body is not read: file requests have none worth reading.
    let (parts, _body) = req.into_parts();
    let req = http::Request::from_parts(parts, ());
    let logged = files.log.clone().map(|log| Logged {
        log,
        peer,
        method: req.method().to_string(),
        path: req
            .uri()
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .to_owned(),
        protocol,
        status: None,
        bytes: 0,
        start,
    });
    let (head, body) = match decide(&req, &files.root, &files.options).await {
        Ok(answer) => (answer.head, answer.body),
        Err(e) => {
            tracing::debug!(error = %e, "file read");
            let mut r = http::Response::new(());
            *r.status_mut() = http::StatusCode::INTERNAL_SERVER_ERROR;
            (r, None)
        }
    };
    let (mut parts, ()) = head.into_parts();
    parts.headers.insert(ALT_SVC, files.alt_svc.clone());
    let logged = logged.map(|mut l| {
        l.status = Some(parts.status.as_u16());
        l
    });
    Ok(hyper::Response::from_parts(
        parts,
        FileStream::new(body, logged),
    ))
}

/// A request's access log line, written when its body is done or dropped.
struct Logged {
    log: AccessLog,
    peer: SocketAddr,
    method: String,
    path: String,
    protocol: &'static str,
    status: Option<u16>,
    bytes: u64,
    start: Instant,
}

impl Drop for Logged {
    fn drop(&mut self) {
        self.log.write(&Line {
            peer: self.peer,
            method: &self.method,
            path: Some(&self.path),
            protocol: self.protocol,
            status: self.status,
            bytes: self.bytes,
            elapsed: self.start.elapsed(),
        });
    }
}

/// A response body: file pieces read by a task one ahead of hyper.
struct FileStream {
    rx: Option<mpsc::Receiver<io::Result<Bytes>>>,
    left: u64,
    logged: Option<Logged>,
}

impl FileStream {
    fn new(body: Option<FileBody>, logged: Option<Logged>) -> FileStream {
        let Some(mut file) = body else {
            return FileStream {
                rx: None,
                left: 0,
                logged,
            };
        };
        let left = file.left();
        let (tx, rx) = mpsc::channel(1);
        tokio::spawn(async move {
            while file.left() > 0 {
                let piece = file.read(PIECE).await;
                let failed = piece.is_err();
                // A closed channel: the client went away.
                if tx.send(piece).await.is_err() || failed {
                    return;
                }
            }
        });
        FileStream {
            rx: Some(rx),
            left,
            logged,
        }
    }
}

impl Body for FileStream {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        let this = &mut *self;
        let Some(rx) = &mut this.rx else {
            this.logged.take();
            return Poll::Ready(None);
        };
        match rx.poll_recv(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Some(Ok(piece))) => {
                this.left = this.left.saturating_sub(piece.len() as u64);
                if let Some(l) = &mut this.logged {
                    l.bytes += piece.len() as u64;
                }
                if this.left == 0 {
                    this.rx = None;
                }
                Poll::Ready(Some(Ok(Frame::data(piece))))
            }
            Poll::Ready(Some(Err(e))) => {
                this.rx = None;
                Poll::Ready(Some(Err(e)))
            }
            Poll::Ready(None) => {
                this.rx = None;
                Poll::Ready(None)
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.rx.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.left)
    }
}
