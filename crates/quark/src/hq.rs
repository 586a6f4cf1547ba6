//! hq-interop: HTTP/0.9 over QUIC, the file-transfer protocol of the QUIC
//! interop community. A client opens a bidirectional stream, sends
//! `GET /path\r\n` and FIN; the server answers with the file's bytes and FIN.
//! Errors have no status line in HTTP/0.9, so the server resets the stream with
//! one of the codes below.

use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use tokio::io::{AsyncWrite, AsyncWriteExt};

use crate::connection::Connection;
use crate::stream::{ReadError, WriteError};

/// The ALPN protocol name.
pub const ALPN: &[u8] = b"hq-interop";

/// Reset code: the request was malformed.
pub const BAD_REQUEST: u64 = 0x400;
/// Reset code: the path is not allowed (e.g. contains `..`).
pub const FORBIDDEN: u64 = 0x403;
/// Reset code: no such file.
pub const NOT_FOUND: u64 = 0x404;
/// Reset code: the server failed while sending.
pub const SERVER_ERROR: u64 = 0x500;
/// Reset code: the request did not arrive in time (HTTP's 408).
pub const REQUEST_TIMEOUT: u64 = 0x408;
/// How long a request line may take to arrive, whole: a client that opens
/// streams and sends a byte now and then (slow loris) holds a request's
/// state no longer than this.
pub const REQUEST_TIME_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Longest request line accepted.
pub const MAX_REQUEST: usize = 8 * 1024;

/// Most bytes of a file read at once: what a request being served holds
/// outside the connection's send buffers, at most, while it waits for room.
pub const FILE_PIECE: usize = 64 * 1024;

/// What went wrong with a request.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RequestError {
    /// Not `GET /path`.
    #[error("malformed request")]
    Malformed,
    /// A path escaping the root, or otherwise refused.
    #[error("forbidden path")]
    Forbidden,
    /// The request did not arrive whole in time ([`REQUEST_TIME_LIMIT`]).
    #[error("request timed out")]
    TimedOut,
}

impl RequestError {
    /// The stream reset code for this error.
    pub fn code(&self) -> u64 {
        match self {
            RequestError::Malformed => BAD_REQUEST,
            RequestError::Forbidden => FORBIDDEN,
            RequestError::TimedOut => REQUEST_TIMEOUT,
        }
    }
}

/// The path of a request `GET /path` (with `\r\n`, `\n` or nothing after it).
pub fn parse_request(request: &[u8]) -> Result<&str, RequestError> {
    let line = request.split(|&b| b == b'\n').next().unwrap_or_default();
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = std::str::from_utf8(line).map_err(|_| RequestError::Malformed)?;
    let path = line
        .strip_prefix("GET ")
        .ok_or(RequestError::Malformed)?
        .trim();
    if !path.starts_with('/') || path.contains(char::is_whitespace) {
        return Err(RequestError::Malformed);
    }
    Ok(path)
}

/// Map a request path onto a file under `root`, refusing anything that could
/// leave it (`..`, NUL, backslashes, an encoded `/`); a trailing `/` means
/// `index.html`. Each segment is percent-decoded (RFC 3986 §2.1): browsers
/// ask for `a b.txt` as `a%20b.txt` and for `café` as `caf%C3%A9`.
pub fn resolve(root: &Path, path: &str) -> Result<PathBuf, RequestError> {
    let path = path.split(['?', '#']).next().unwrap_or_default();
    let mut out = root.to_path_buf();
    for segment in path.split('/') {
        let name: std::borrow::Cow<'_, [u8]> = percent_encoding::percent_decode_str(segment).into();
        if name.iter().any(|b| matches!(b, b'/' | b'\\' | b'\0')) {
            return Err(RequestError::Forbidden);
        }
        match &*name {
            b"" | b"." => {}
            b".." => return Err(RequestError::Forbidden),
            // Names are bytes on Unix: one that is not UTF-8 is served too.
            name => out.push(std::ffi::OsStr::from_bytes(name)),
        }
    }
    if path.ends_with('/') || path.is_empty() {
        out.push("index.html");
    }
    Ok(out)
}

/// Serve every request of one connection from files under `root`.
pub async fn serve_connection(conn: Connection, root: PathBuf) {
    serve_connection_within(conn, root, REQUEST_TIME_LIMIT).await
}

/// [`serve_connection`], resetting a request that has not arrived whole
/// within `limit` ([`REQUEST_TIMEOUT`]).
pub async fn serve_connection_within(conn: Connection, root: PathBuf, limit: std::time::Duration) {
    serve_connection_logged(conn, root, limit, None).await
}

/// One request served, as an access log reports it.
#[derive(Debug, Clone, Default)]
pub struct Served {
    /// The requested path; `None` if the request was not `GET /path`.
    pub path: Option<String>,
    /// HTTP's status for the outcome: 200 when the file went out whole,
    /// else the reset code's (400, 403, 404, 408, 500); 0 if the stream
    /// failed first.
    pub status: u16,
    /// File bytes sent.
    pub bytes: u64,
    /// From the stream's arrival to the file's last byte written (or the failure).
    pub elapsed: std::time::Duration,
}

/// What is called with each [`Served`] request.
pub type AccessLog = Arc<dyn Fn(&Served) + Send + Sync>;

/// [`serve_connection_within`], calling `log` once per request when it is done.
pub async fn serve_connection_logged(
    conn: Connection,
    root: PathBuf,
    limit: std::time::Duration,
    log: Option<AccessLog>,
) {
    while let Ok((send, recv)) = conn.accept_bi().await {
        let root = root.clone();
        let log = log.clone();
        conn.spawn(async move {
            let start = std::time::Instant::now();
            let mut served = Served::default();
            if let Err(e) = serve_stream(send, recv, &root, limit, &mut served).await {
                tracing::debug!(error = %e, "hq request failed");
            }
            if let Some(log) = log {
                served.elapsed = start.elapsed();
                log(&served);
            }
        });
    }
}

/// Why serving one request failed.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// Reading the request failed.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// Sending the response failed.
    #[error(transparent)]
    Write(#[from] WriteError),
    /// The request was refused with this code.
    #[error("refused request: {0}")]
    Refused(RequestError),
    /// The file could not be opened.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

async fn serve_stream(
    mut send: crate::SendStream,
    mut recv: crate::RecvStream,
    root: &Path,
    limit: std::time::Duration,
    served: &mut Served,
) -> Result<(), ServeError> {
    let request = match tokio::time::timeout(limit, recv.read_to_end(MAX_REQUEST)).await {
        Ok(Ok(r)) => r,
        Ok(Err(ReadError::TooLong(_))) => {
            served.status = 400;
            send.reset(BAD_REQUEST)?;
            return Err(ServeError::Refused(RequestError::Malformed));
        }
        Ok(Err(e)) => return Err(e.into()),
        Err(_) => {
            served.status = 408;
            let _ = recv.stop(REQUEST_TIMEOUT);
            send.reset(REQUEST_TIMEOUT)?;
            return Err(ServeError::Refused(RequestError::TimedOut));
        }
    };
    let path = parse_request(&request);
    served.path = path.as_ref().ok().map(|p| p.to_string());
    let file = match path.and_then(|p| resolve(root, p)) {
        Ok(f) => f,
        Err(e) => {
            // The reset codes are HTTP's statuses in hex (0x403 for 403).
            served.status = status_of(e.code());
            send.reset(e.code())?;
            return Err(ServeError::Refused(e));
        }
    };
    let Ok(mut file) = FileSource::open(&file).await else {
        served.status = 404;
        send.reset(NOT_FOUND)?;
        return Ok(());
    };
    let left = file.left();
    if let Err(e) = copy(&mut file, &mut send).await {
        served.status = 500;
        served.bytes = left - file.left();
        let _ = send.reset(SERVER_ERROR);
        return Err(e);
    }
    served.bytes = left;
    send.finish()?;
    served.status = 200;
    Ok(())
}

/// The HTTP status a reset code stands for (0x404 is 404).
fn status_of(code: u64) -> u16 {
    let digits = format!("{code:x}");
    digits.parse().unwrap_or(0)
}

/// Send the rest of `file` on `send`, reading only what the stream can take
/// now (see [`crate::SendStream::writable`]): nothing is read ahead of the
/// connection's room, and no buffer is held while waiting for it.
async fn copy(file: &mut FileSource, send: &mut crate::SendStream) -> Result<(), ServeError> {
    while file.left() > 0 {
        let room = send.writable(FILE_PIECE.min(file.left_usize())).await?;
        let piece = file.read(room).await?;
        // The room was set aside for this stream: all of it is taken at once.
        send.write_chunk(piece).await?;
    }
    Ok(())
}

/// A regular file read in pieces, each with a blocking read off the
/// runtime's threads into a buffer of just its size, which is handed to the
/// stream as is ([`crate::SendStream::write_chunk`]): nothing is copied, and
/// nothing is kept between pieces (`tokio::fs::File` keeps the buffer of its
/// largest read for as long as the file is open).
pub struct FileSource {
    file: Arc<std::fs::File>,
    /// Bytes of its length not read yet.
    left: u64,
}

impl FileSource {
    /// Opens `path`, which must be a regular file.
    pub async fn open(path: &Path) -> std::io::Result<Self> {
        let path = path.to_path_buf();
        blocking(move || {
            let file = std::fs::File::open(path)?;
            let meta = file.metadata()?;
            if !meta.is_file() {
                return Err(std::io::Error::other("not a regular file"));
            }
            Ok(FileSource {
                file: Arc::new(file),
                left: meta.len(),
            })
        })
        .await
    }

    /// Bytes not read yet, of the length the file had when opened.
    pub fn left(&self) -> u64 {
        self.left
    }

    fn left_usize(&self) -> usize {
        usize::try_from(self.left).unwrap_or(usize::MAX)
    }

    /// The next `max` bytes at most, fewer only at the end (empty there). A
    /// file that ends before its length is an error (`UnexpectedEof`): the
    /// bytes cannot be what the receiver was promised.
    pub async fn read(&mut self, max: usize) -> std::io::Result<Bytes> {
        let want = max.min(self.left_usize());
        if want == 0 {
            return Ok(Bytes::new());
        }
        let file = Arc::clone(&self.file);
        let piece = blocking(move || {
            let mut piece = Vec::with_capacity(want);
            (&*file).take(want as u64).read_to_end(&mut piece)?;
            Ok(piece)
        })
        .await?;
        if piece.len() < want {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        self.left -= want as u64;
        Ok(Bytes::from(piece))
    }
}

/// Runs `f` on the runtime's blocking threads.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> std::io::Result<T> + Send + 'static,
) -> std::io::Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(std::io::Error::other)?
}

/// Why a fetch failed.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// The connection or stream failed.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// Sending the request failed.
    #[error(transparent)]
    Write(#[from] WriteError),
    /// The connection ended.
    #[error(transparent)]
    Connection(#[from] quark_proto::ConnectionError),
    /// Writing the output failed.
    #[error("output: {0}")]
    Output(#[from] std::io::Error),
}

impl FetchError {
    /// A one-line explanation, naming hq reset codes.
    pub fn describe(&self) -> String {
        match self {
            FetchError::Read(ReadError::Reset(code)) => match *code {
                NOT_FOUND => "not found (server reset the stream with 0x404)".into(),
                FORBIDDEN => "forbidden path (server reset the stream with 0x403)".into(),
                BAD_REQUEST => "bad request (server reset the stream with 0x400)".into(),
                REQUEST_TIMEOUT => "request timed out (server reset the stream with 0x408)".into(),
                other => format!("server reset the stream with code {other:#x}"),
            },
            other => other.to_string(),
        }
    }
}

/// Fetch `path` on `conn`, writing the body to `out`. Calls `progress` with each
/// chunk's size. Returns the body length.
pub async fn fetch(
    conn: &Connection,
    path: &str,
    out: &mut (impl AsyncWrite + Unpin),
    mut progress: impl FnMut(usize),
) -> Result<u64, FetchError> {
    let (mut send, mut recv) = conn.open_bi().await?;
    send.write_all(format!("GET {path}\r\n").as_bytes()).await?;
    send.finish()?;
    let mut buf = vec![0u8; 256 * 1024];
    let mut total = 0u64;
    while let Some(n) = recv.read(&mut buf).await? {
        out.write_all(&buf[..n]).await?;
        total += n as u64;
        progress(n);
    }
    out.flush().await?;
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests() {
        assert_eq!(parse_request(b"GET /a/b.txt\r\n"), Ok("/a/b.txt"));
        assert_eq!(parse_request(b"GET /x"), Ok("/x"));
        assert_eq!(parse_request(b"GET /x\n"), Ok("/x"));
        assert_eq!(parse_request(b"POST /x\r\n"), Err(RequestError::Malformed));
        assert_eq!(parse_request(b"GET x\r\n"), Err(RequestError::Malformed));
        assert_eq!(parse_request(b"GET /a b\r\n"), Err(RequestError::Malformed));
        assert_eq!(parse_request(&[0xff, 0xfe]), Err(RequestError::Malformed));
    }

    #[test]
    fn paths_stay_under_the_root() {
        let root = Path::new("/srv");
        assert_eq!(resolve(root, "/a/b"), Ok(PathBuf::from("/srv/a/b")));
        assert_eq!(resolve(root, "/"), Ok(PathBuf::from("/srv/index.html")));
        assert_eq!(resolve(root, "/./a"), Ok(PathBuf::from("/srv/a")));
        assert_eq!(resolve(root, "/a?x=1"), Ok(PathBuf::from("/srv/a")));
        assert_eq!(
            resolve(root, "//a//b/"),
            Ok(PathBuf::from("/srv/a/b/index.html"))
        );
        for bad in ["/../etc/passwd", "/a/../../b", "/a\\..\\b", "/a\0"] {
            assert_eq!(resolve(root, bad), Err(RequestError::Forbidden), "{bad}");
        }
    }

    #[test]
    fn paths_are_percent_decoded() {
        let root = Path::new("/srv");
        assert_eq!(
            resolve(root, "/a%20b.txt"),
            Ok(PathBuf::from("/srv/a b.txt"))
        );
        assert_eq!(
            resolve(root, "/caf%C3%A9/x"),
            Ok(PathBuf::from("/srv/café/x"))
        );
        assert_eq!(
            resolve(root, "/100%"),
            Ok(PathBuf::from("/srv/100%")),
            "a lone % stays"
        );
        let raw = resolve(root, "/%FF").unwrap();
        assert_eq!(
            raw.as_os_str().as_bytes(),
            b"/srv/\xff",
            "not UTF-8, still a name"
        );
        // Encoded dots, slashes, backslashes and NUL cannot leave the root.
        for bad in [
            "/%2e%2e/etc/passwd",
            "/a/%2E%2E/%2e%2E/b",
            "/..%2fetc",
            "/a%5c..%5cb",
            "/a%00",
        ] {
            assert_eq!(resolve(root, bad), Err(RequestError::Forbidden), "{bad}");
        }
    }
}
