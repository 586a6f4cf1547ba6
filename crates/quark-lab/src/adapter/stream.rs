//! The lab protocol over one reliable byte stream (TCP, TCP+TLS): requests
//! `GET /<n> <body_len>\r\n` + body, responses of exactly `n` bytes, in order.
//! The client pipelines: concurrent requests are written back to back and a
//! reader task matches responses to them in order.

use anyhow::{Context, anyhow, bail};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{Mutex, mpsc, oneshot};
use tokio::task::JoinHandle;

use super::{BoxFuture, Connection, Request, ServerStats};
use crate::wire::{Header, MAX_HEADER, Verifier, WireError, chunk_spans, pattern_slice};

/// Read buffer size: large, so bulk transfers take few syscalls.
pub const READ_BUF: usize = 256 * 1024;

/// Reads one header line. `Ok(None)` on a clean end of stream before any byte.
pub async fn read_header<R: AsyncBufRead + Unpin>(r: &mut R) -> anyhow::Result<Option<Header>> {
    let mut line = [0u8; MAX_HEADER];
    let mut len = 0;
    loop {
        let buf = r.fill_buf().await?;
        if buf.is_empty() {
            if len == 0 {
                return Ok(None);
            }
            bail!("stream ended inside a request header");
        }
        let room = MAX_HEADER - len;
        let (take, complete) = match buf.iter().take(room).position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len().min(room), false),
        };
        line[len..len + take].copy_from_slice(&buf[..take]);
        len += take;
        r.consume(take);
        if complete {
            return match Header::parse(&line[..len])? {
                Some((h, used)) if used == len => Ok(Some(h)),
                _ => Err(WireError::BadHeader.into()),
            };
        }
        if len == MAX_HEADER {
            return Err(WireError::HeaderTooLong.into());
        }
    }
}

/// Reads exactly `len` bytes and checks them against the pattern, without copying.
pub async fn read_verified<R: AsyncBufRead + Unpin>(r: &mut R, len: u64) -> anyhow::Result<()> {
    let mut v = Verifier::new(len);
    while !v.is_complete() {
        let buf = r.fill_buf().await?;
        if buf.is_empty() {
            v.finish()?;
        }
        let take = buf.len().min((len - v.received()) as usize);
        v.update(&buf[..take])?;
        r.consume(take);
    }
    Ok(())
}

/// Writes `len` bytes of pattern.
pub async fn write_pattern<W: AsyncWrite + Unpin>(w: &mut W, len: u64) -> std::io::Result<()> {
    for (off, n) in chunk_spans(len) {
        w.write_all(pattern_slice(off, n)).await?;
    }
    Ok(())
}

/// Serves framed requests on one connection until the client closes it.
pub async fn serve_framed<S: AsyncRead + AsyncWrite + Unpin>(
    stream: S,
    stats: &ServerStats,
) -> anyhow::Result<()> {
    let mut io = BufReader::with_capacity(READ_BUF, stream);
    while let Some(h) = read_header(&mut io).await? {
        let guard = stats.request();
        let body = h
            .body_len
            .ok_or(WireError::BadHeader)
            .context("framed requests carry a body length")?;
        read_verified(&mut io, body).await.context("request body")?;
        // BufReader passes writes through to the stream.
        write_pattern(&mut io, h.response_len).await?;
        io.flush().await?;
        guard.finish(body, h.response_len);
    }
    io.shutdown().await.ok();
    Ok(())
}

struct Pending {
    len: u64,
    done: oneshot::Sender<anyhow::Result<()>>,
}

struct Writer<S> {
    half: tokio::io::WriteHalf<S>,
    /// `None` once closed.
    pending: Option<mpsc::UnboundedSender<Pending>>,
    header: Vec<u8>,
}

/// A client connection that pipelines requests on one byte stream.
pub struct FramedConn<S> {
    writer: Mutex<Writer<S>>,
    reader: std::sync::Mutex<Option<JoinHandle<()>>>,
}

impl<S: AsyncRead + AsyncWrite + Send + 'static> FramedConn<S> {
    /// Wraps an established stream (handshakes done) and starts its reader task.
    pub fn new(stream: S) -> Self {
        let (read, write) = tokio::io::split(stream);
        let (tx, mut rx) = mpsc::unbounded_channel::<Pending>();
        let reader = tokio::spawn(async move {
            let mut r = BufReader::with_capacity(READ_BUF, read);
            while let Some(p) = rx.recv().await {
                let res = read_verified(&mut r, p.len).await.context("response");
                let failed = res.is_err();
                let _ = p.done.send(res);
                if failed {
                    break;
                }
            }
        });
        FramedConn {
            writer: Mutex::new(Writer {
                half: write,
                pending: Some(tx),
                header: Vec::new(),
            }),
            reader: std::sync::Mutex::new(Some(reader)),
        }
    }
}

impl<S: AsyncRead + AsyncWrite + Send + 'static> Connection for FramedConn<S> {
    fn request(&self, req: Request) -> BoxFuture<'_, anyhow::Result<()>> {
        Box::pin(async move {
            let (done, rx) = oneshot::channel();
            {
                let mut w = self.writer.lock().await;
                let w = &mut *w;
                // Queued under the writer lock, so responses are matched in send order.
                let pending = w
                    .pending
                    .as_ref()
                    .ok_or_else(|| anyhow!("connection closed"))?;
                pending
                    .send(Pending {
                        len: req.response_len,
                        done,
                    })
                    .map_err(|_| anyhow!("connection lost"))?;
                w.header.clear();
                Header {
                    response_len: req.response_len,
                    body_len: Some(req.body_len),
                }
                .encode(&mut w.header);
                w.half.write_all(&w.header).await?;
                write_pattern(&mut w.half, req.body_len).await?;
                w.half.flush().await?;
            }
            rx.await
                .map_err(|_| anyhow!("connection lost before the response"))?
        })
    }

    fn close(&self) -> BoxFuture<'_, anyhow::Result<()>> {
        Box::pin(async move {
            let mut w = self.writer.lock().await;
            // Without a sender the reader ends after the last pending response.
            w.pending = None;
            let reader = self.reader.lock().ok().and_then(|mut r| r.take());
            if let Some(r) = reader {
                r.await.ok();
            }
            w.half.shutdown().await.ok();
            Ok(())
        })
    }
}
