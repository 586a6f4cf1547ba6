//! A TCP response's body: file pieces read by a task one ahead of hyper,
//! and the access log line written when the body is done (or dropped).

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use quark_h3::files::FileBody;
use tokio::sync::mpsc;

use super::PIECE;
use crate::access_log::{AccessLog, Line};

/// A request's access log line, written when its body is done or dropped.
pub(super) struct Logged {
    log: AccessLog,
    peer: SocketAddr,
    method: String,
    path: String,
    protocol: &'static str,
    status: Option<u16>,
    bytes: u64,
    start: Instant,
}

impl Logged {
    pub(super) fn new(
        log: AccessLog,
        peer: SocketAddr,
        req: &http::Request<()>,
        protocol: &'static str,
        start: Instant,
    ) -> Logged {
        Logged {
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
        }
    }

    pub(super) fn with_status(mut self, status: u16) -> Logged {
        self.status = Some(status);
        self
    }
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
pub(super) struct FileStream {
    rx: Option<mpsc::Receiver<io::Result<Bytes>>>,
    left: u64,
    logged: Option<Logged>,
}

impl FileStream {
    pub(super) fn new(body: Option<FileBody>, logged: Option<Logged>) -> FileStream {
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
