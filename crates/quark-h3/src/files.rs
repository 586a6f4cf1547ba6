//! Files over HTTP/3: the server behind `quark serve --h3` and the fetch behind
//! `quark get --h3`. Paths map under a root as for hq-interop
//! (`quark::hq::resolve`: no `..`, `/` means `index.html`); GET and HEAD only.

use std::path::{Path, PathBuf};

use http::{Method, Request, Response, StatusCode};
use quark::Connection;
use quark::hq::{FILE_PIECE, FileSource};
use tokio::io::{AsyncWrite, AsyncWriteExt};

use crate::{Client, Error, RequestStream, Server};

/// Serves every request of one connection from files under `root`.
pub async fn serve_connection(conn: Connection, root: PathBuf) {
    let Ok(mut server) = Server::new(conn).await else {
        return;
    };
    while let Ok(Some((req, stream))) = server.accept().await {
        let root = root.clone();
        server.connection().spawn(async move {
            if let Err(e) = serve_request(req, stream, &root).await {
                tracing::debug!(error = %e, "h3 request failed");
            }
        });
    }
}

fn status(code: StatusCode) -> Response<()> {
    let mut r = Response::new(());
    *r.status_mut() = code;
    r
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

async fn serve_request(
    req: Request<()>,
    mut stream: RequestStream,
    root: &Path,
) -> Result<(), ServeError> {
    let head = req.method() == Method::HEAD;
    if req.method() != Method::GET && !head {
        stream
            .send_response(&status(StatusCode::METHOD_NOT_ALLOWED))
            .await?;
        stream.finish()?;
        return Ok(());
    }
    let Ok(path) = quark::hq::resolve(root, req.uri().path()) else {
        stream.send_response(&status(StatusCode::FORBIDDEN)).await?;
        stream.finish()?;
        return Ok(());
    };
    let Ok(mut file) = FileSource::open(&path).await else {
        return not_found(&mut stream).await;
    };
    let resp = Response::builder()
        .header(http::header::CONTENT_LENGTH, file.left())
        .body(())
        .expect("a valid response");
    stream.send_response(&resp).await?;
    if !head {
        send_file(&mut file, &mut stream).await?;
    }
    stream.finish()?;
    Ok(())
}

async fn not_found(stream: &mut RequestStream) -> Result<(), ServeError> {
    stream.send_response(&status(StatusCode::NOT_FOUND)).await?;
    stream.finish()?;
    Ok(())
}

/// Sends the rest of `file` in DATA frames, reading only what the stream
/// can take now: nothing is read ahead of the connection's room, and no
/// buffer is held while waiting for it (a file that ends early is an error,
/// as content-length promised its length).
async fn send_file(file: &mut FileSource, stream: &mut RequestStream) -> Result<(), ServeError> {
    while file.left() > 0 {
        let max = usize::try_from(file.left()).map_or(FILE_PIECE, |left| left.min(FILE_PIECE));
        let room = stream.writable(max).await?;
        let piece = file.read(room).await?;
        stream.send_data(piece).await?;
    }
    Ok(())
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
    mut progress: impl FnMut(usize),
) -> Result<u64, FetchError> {
    let req = Request::get(format!("https://{authority}{path}")).body(())?;
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
