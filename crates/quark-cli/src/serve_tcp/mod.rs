//! `quark serve --h3`'s TCP side: the same files over HTTP/1.1 and HTTP/2
//! on TLS at the same port, each response advertising HTTP/3 with
//! `Alt-Svc: h3=":PORT"` (RFC 7838 §3) so browsers move to QUIC.
//!
//! The answers are `quark_h3::files::decide`'s, as over HTTP/3. Limits (see
//! SECURITY.md): at most `max_connections` at once (more wait in the
//! kernel's backlog), a TLS handshake and each request head within
//! `head_timeout`, a connection that moves no bytes either way for
//! `idle_timeout` dropped, small header and send buffers, and at most
//! `H2_STREAMS` requests at once per HTTP/2 connection.

mod body;
mod start;
mod watch;

pub(crate) use self::start::TcpSide;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use http::header::{ALT_SVC, HeaderValue};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use quark_h3::files::{FileOptions, decide};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_rustls::TlsAcceptor;

use self::body::{FileStream, Logged};
use self::watch::{Progress, Watched};
use crate::access_log::AccessLog;

/// Requests served at once on one HTTP/2 connection.
const H2_STREAMS: u32 = 32;
/// Bytes of a file read per piece; a response holds at most two.
pub(super) const PIECE: usize = 16 * 1024;
/// A request head's size limit (HTTP/1.1 buffer, HTTP/2 header list).
const MAX_HEAD: usize = 16 * 1024;

/// What the TCP listener serves with.
pub(crate) struct TcpFiles {
    pub(crate) root: PathBuf,
    pub(crate) options: FileOptions,
    /// `h3=":PORT"; ma=86400`.
    pub(crate) alt_svc: HeaderValue,
    pub(crate) log: Option<AccessLog>,
    pub(crate) tls: TlsAcceptor,
    pub(crate) max_connections: usize,
    /// A TLS handshake, and each request head (the first and those after
    /// it on a kept-alive HTTP/1.1 connection), must arrive within this.
    pub(crate) head_timeout: Duration,
    /// A connection that moves no bytes either way for this long is dropped.
    pub(crate) idle_timeout: Duration,
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
    let progress = Progress::new();
    let tcp = Watched {
        io: tcp,
        progress: progress.clone(),
    };
    let tls = tokio::time::timeout(files.head_timeout, files.tls.accept(tcp)).await??;
    let (head_timeout, idle_timeout) = (files.head_timeout, files.idle_timeout);
    let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
    let protocol = if h2 { "HTTP/2" } else { "HTTP/1.1" };
    let svc = service_fn(move |req| respond(req, peer, protocol, files.clone()));
    let io = TokioIo::new(tls);
    // Dropped (with its requests) once stalled: a closed socket, no GOAWAY.
    let stalled = progress.stalled(idle_timeout);
    if h2 {
        let conn = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
            .timer(TokioTimer::new())
            .max_concurrent_streams(H2_STREAMS)
            .max_header_list_size(MAX_HEAD as u32)
            .max_send_buf_size(PIECE)
            .serve_connection(io, svc);
        tokio::select! {
            done = conn => done?,
            () = stalled => {}
        }
    } else {
        let conn = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(head_timeout)
            .max_buf_size(MAX_HEAD.max(8192))
            .serve_connection(io, svc);
        tokio::select! {
            done = conn => done?,
            () = stalled => {}
        }
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
    let logged = files
        .log
        .clone()
        .map(|log| Logged::new(log, peer, &req, protocol, start));
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
    let logged = logged.map(|l| l.with_status(parts.status.as_u16()));
    Ok(hyper::Response::from_parts(
        parts,
        FileStream::new(body, logged),
    ))
}
