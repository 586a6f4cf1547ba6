//! Files over HTTP/3: the server behind `quark serve --h3` and the fetch behind
//! `quark get --h3`. Paths map under a root as for hq-interop
//! (`quark::hq::resolve`: no `..`, `/` means `index.html`); GET and HEAD only.
//!
//! The server follows RFC 9110 as browsers expect: Content-Type by extension,
//! a directory redirected (301) to its slash form and served its index.html,
//! a single byte Range as 206 (several ranges get the whole file as 200; one
//! past the end 416), a strong ETag and Last-Modified with conditional
//! requests (304, 412, If-Range), and Cache-Control. On a drain signal it
//! sends GOAWAY (RFC 9114 §5.2), finishes the requests it took, and closes
//! with H3_NO_ERROR.

mod body;
mod cond;
mod decide;
mod encoding;
mod kind;
mod listing;
mod range;
mod respond;
mod source;

use std::path::PathBuf;

use http::{Request, StatusCode};
use quark::Connection;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::watch;
use tokio::task::JoinSet;

pub use self::body::FileBody;
pub use self::decide::{Answer, decide};
use crate::error::H3_NO_ERROR;
use crate::{Client, Error, Server};

/// How the file server answers.
#[derive(Debug, Clone)]
pub struct FileOptions {
    /// `Cache-Control: max-age` in seconds (0: `no-cache`, revalidate each time).
    pub cache_max_age: u64,
    /// The HTTP/3 settings of each connection (QPACK's dynamic table, ...).
    pub h3: crate::Config,
    /// Called once per request when it is done (an access log).
    pub access_log: Option<AccessLog>,
    /// Answer a directory without index.html with a page listing it (else
    /// 404).
    pub list_directories: bool,
    /// Serve `name.br` / `name.gz` beside `name`, with Content-Encoding, to
    /// clients that accept brotli / gzip.
    pub precompressed: bool,
}

/// One request served, as an access log reports it.
#[derive(Debug, Clone)]
pub struct Served {
    /// The request's method.
    pub method: http::Method,
    /// The request's path and query.
    pub path: String,
    /// The final status sent; `None` if the request failed before one went out.
    pub status: Option<StatusCode>,
    /// Body bytes sent.
    pub bytes: u64,
    /// From the head's arrival to the response acknowledged (or the failure).
    pub elapsed: std::time::Duration,
}

/// What is called with each [`Served`] request.
#[derive(Clone)]
pub struct AccessLog(pub std::sync::Arc<dyn Fn(&Served) + Send + Sync>);

impl std::fmt::Debug for AccessLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AccessLog")
    }
}

impl Default for FileOptions {
    /// Five minutes: short enough that a changed site shows soon, long
    /// enough that a page's resources are not revalidated on every load.
    fn default() -> Self {
        FileOptions {
            cache_max_age: 300,
            h3: crate::Config::default(),
            access_log: None,
            list_directories: false,
            precompressed: false,
        }
    }
}

impl FileOptions {
    fn cache_control(&self) -> String {
        match self.cache_max_age {
            0 => "no-cache".to_owned(),
            secs => format!("max-age={secs}"),
        }
    }
}

/// Serves every request of one connection from files under `root`.
pub async fn serve_connection(conn: Connection, root: PathBuf) {
    serve_files(conn, root, FileOptions::default(), None).await
}

/// [`serve_connection`] with options, draining once `drain` turns true:
/// GOAWAY, the requests taken so far finished (and acknowledged), then the
/// connection closed with H3_NO_ERROR. A `drain` whose sender is gone never
/// drains.
pub async fn serve_files(
    conn: Connection,
    root: PathBuf,
    options: FileOptions,
    drain: Option<watch::Receiver<bool>>,
) {
    let Ok(mut server) = Server::with_config(conn.clone(), &options.h3).await else {
        return;
    };
    // A clone to wait on: `drain` itself is held to the end, so the sender
    // sees this connection until it has closed.
    let signal = drain.clone();
    let draining = async move {
        let Some(mut d) = signal else {
            return std::future::pending().await;
        };
        if d.wait_for(|on| *on).await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    tokio::pin!(draining);
    let mut tasks = JoinSet::new();
    let mut drained = false;
    // While draining, a look now and then at whether all is done (a head
    // that fails to arrive ends inside `accept`, which does not return).
    let mut tick = tokio::time::interval(std::time::Duration::from_millis(50));
    loop {
        if drained && tasks.is_empty() && server.drained() {
            break;
        }
        tokio::select! {
            next = server.accept() => {
                let Ok(Some((req, mut stream))) = next else { break };
                let (root, options) = (root.clone(), options.clone());
                tasks.spawn_on(async move {
                    let start = std::time::Instant::now();
                    let logged = options.access_log.as_ref().map(|_| {
                        let path = req.uri().path_and_query().map_or("/", |p| p.as_str());
                        (req.method().clone(), path.to_owned())
                    });
                    match respond::serve_request(req, &mut stream, &root, &options).await {
                        // Held until the client has it all, so a drain's close cuts nothing.
                        Ok(()) => {
                            let _ = stream.acked().await;
                        }
                        Err(e) => tracing::debug!(error = %e, "h3 request failed"),
                    }
                    if let (Some(log), Some((method, path))) = (&options.access_log, logged) {
                        (log.0)(&Served {
                            method,
                            path,
                            status: stream.response_status(),
                            bytes: stream.body_bytes_sent(),
                            elapsed: start.elapsed(),
                        });
                    }
                }, conn.runtime());
            }
            () = &mut draining, if !drained => {
                drained = true;
                if server.shutdown().await.is_err() {
                    break;
                }
            }
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
            _ = tick.tick(), if drained => {}
        }
    }
    while tasks.join_next().await.is_some() {}
    if drained {
        conn.close(H3_NO_ERROR, b"server shutting down");
    }
    drop(drain);
}

/// Why serving a request failed.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The stream or connection failed.
    #[error(transparent)]
    H3(#[from] Error),
    /// Reading the file failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Why a fetch failed.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// The server answered with a status other than 200.
    #[error("server answered {0}")]
    Status(StatusCode),
    /// The stream or connection failed.
    #[error(transparent)]
    H3(#[from] Error),
    /// The request could not be made (a bad path or authority).
    #[error("bad request: {0}")]
    Request(#[from] http::Error),
    /// Writing the output failed.
    #[error("output: {0}")]
    Output(#[from] std::io::Error),
}

/// GETs `https://{authority}{path}` on `client`, writing the body to `out`;
/// calls `progress` with each piece's size. Returns the body length.
pub async fn fetch(
    client: &Client,
    authority: &str,
    path: &str,
    out: &mut (impl AsyncWrite + Unpin),
    progress: impl FnMut(usize),
) -> Result<u64, FetchError> {
    fetch_prioritized(client, authority, path, None, out, progress).await
}

/// [`fetch`] with a Priority header field (RFC 9218) on the request.
pub async fn fetch_prioritized(
    client: &Client,
    authority: &str,
    path: &str,
    priority: Option<crate::Priority>,
    out: &mut (impl AsyncWrite + Unpin),
    mut progress: impl FnMut(usize),
) -> Result<u64, FetchError> {
    let mut req = Request::get(format!("https://{authority}{path}"));
    if let Some(p) = priority {
        req = req.header(crate::priority::PRIORITY, crate::priority::format(p));
    }
    let req = req.body(())?;
    let mut stream = client.send_request(&req).await?;
    stream.finish()?;
    let resp = stream.recv_response().await?;
    if resp.status() != StatusCode::OK {
        stream.cancel(crate::error::H3_REQUEST_CANCELLED);
        return Err(FetchError::Status(resp.status()));
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
