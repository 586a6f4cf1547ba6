//! Streams: `SendStream` implements `AsyncWrite`, `RecvStream` implements `AsyncRead`.
//! Received data is credited back to the peer's flow control only as it is read.

use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes};
use quark_proto::{
    ConnectionError, ConnectionHandle, Priority, ReadOutcome, StreamError, StreamId,
};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::connection::ConnRef;
use crate::shared::State;

/// Why a write failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WriteError {
    /// The peer asked us to stop (STOP_SENDING) with this code.
    #[error("stopped by peer with code {0}")]
    Stopped(u64),
    /// The stream was already finished or reset.
    #[error("stream closed")]
    ClosedStream,
    /// The connection ended.
    #[error(transparent)]
    ConnectionLost(#[from] ConnectionError),
}

/// Why a read failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    /// The peer reset the stream with this code.
    #[error("reset by peer with code {0}")]
    Reset(u64),
    /// We stopped the stream.
    #[error("stream stopped")]
    Stopped,
    /// The connection ended.
    #[error(transparent)]
    ConnectionLost(#[from] ConnectionError),
    /// `read_to_end` exceeded its limit.
    #[error("stream longer than {0} bytes")]
    TooLong(usize),
}

impl From<WriteError> for io::Error {
    fn from(e: WriteError) -> Self {
        let kind = match e {
            WriteError::Stopped(_) | WriteError::ClosedStream => io::ErrorKind::BrokenPipe,
            WriteError::ConnectionLost(_) => io::ErrorKind::ConnectionAborted,
        };
        io::Error::new(kind, e)
    }
}

impl From<ReadError> for io::Error {
    fn from(e: ReadError) -> Self {
        let kind = match e {
            ReadError::Reset(_) => io::ErrorKind::ConnectionReset,
            ReadError::Stopped | ReadError::TooLong(_) => io::ErrorKind::Other,
            ReadError::ConnectionLost(_) => io::ErrorKind::ConnectionAborted,
        };
        io::Error::new(kind, e)
    }
}

/// The sending half of a stream.
pub struct SendStream {
    conn: ConnRef,
    id: StreamId,
    finished: bool,
}

impl SendStream {
    /// `conn`'s reference and the send half's entry were counted by the caller.
    pub(crate) fn new(conn: ConnRef, id: StreamId) -> Self {
        SendStream {
            conn,
            id,
            finished: false,
        }
    }

    /// The stream ID.
    pub fn id(&self) -> StreamId {
        self.id
    }

    /// Set the stream's RFC 9218 priority: urgency 0 (sent first) to 7, and
    /// whether its data is useful in pieces (`incremental`: it shares the
    /// connection round-robin with others of its urgency; otherwise streams of
    /// one urgency go whole, in stream-ID order). Streams without a priority
    /// go round-robin at urgency 3.
    pub fn set_priority(&mut self, urgency: u8, incremental: bool) -> Result<(), WriteError> {
        let priority = Priority {
            urgency: urgency.min(7),
            incremental,
        };
        let mut state = self.conn.shared.lock();
        lost(&state, self.conn.handle)?;
        let conn = state
            .proto
            .connection_mut(self.conn.handle)
            .ok_or(WriteError::ClosedStream)?;
        conn.set_stream_priority(self.id, Some(priority))
            .map_err(write_error)?;
        state.touch(self.conn.handle);
        Ok(())
    }

    /// Write some of `buf`, waiting for flow-control credit or buffer space.
    pub fn poll_write_buf(
        &mut self,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<Result<usize, WriteError>> {
        self.poll_write_with(cx, buf.len(), true, |conn, id| conn.write(id, buf))
    }

    /// Write all of `buf`.
    pub async fn write_all(&mut self, mut buf: &[u8]) -> Result<(), WriteError> {
        while !buf.is_empty() {
            let n = poll_fn(|cx| self.poll_write_buf(cx, buf)).await?;
            buf = &buf[n..];
        }
        Ok(())
    }

    /// Write all of `parts`, in order, then with `fin` finish the stream: in
    /// one visit to the endpoint (one lock) when the stream has room for them
    /// all, as a small message's head, body and end usually do; otherwise it
    /// waits for room between parts as [`write_all`](Self::write_all) does.
    pub async fn write_parts(&mut self, parts: &[&[u8]], fin: bool) -> Result<(), WriteError> {
        let mut at = (0, 0);
        poll_fn(|cx| self.poll_write_parts(cx, parts, &mut at, fin)).await
    }

    /// [`write_parts`](Self::write_parts) as a poll; `at` (part, offset) is
    /// how far it got, kept by the caller between polls (start at `(0, 0)`).
    /// `Pending` may come after some parts were taken: `at` says how much,
    /// which a non-blocking caller can report as a partial write.
    pub fn poll_write_parts(
        &mut self,
        cx: &mut Context<'_>,
        parts: &[&[u8]],
        at: &mut (usize, usize),
        fin: bool,
    ) -> Poll<Result<(), WriteError>> {
        let mut guard = self.conn.shared.lock();
        let state = &mut *guard;
        let (entry, conn) = match state.live(self.conn.handle) {
            Ok(live) => live,
            Err(e) => return Poll::Ready(Err(WriteError::ConnectionLost(e))),
        };
        let mut wrote = false;
        while at.0 < parts.len() {
            // The rest, at most four parts at once (a head, a frame header,
            // a body), in one write.
            let mut rest: [&[u8]; 4] = [&[]; 4];
            let end = parts.len().min(at.0 + rest.len());
            for (r, p) in rest.iter_mut().zip(&parts[at.0..end]) {
                *r = p;
            }
            rest[0] = &rest[0][at.1..];
            match conn.write_parts(self.id, &rest[..end - at.0]) {
                Ok(0) if rest.iter().any(|r| !r.is_empty()) => {
                    entry.wakers.writers.insert(self.id, cx.waker().clone());
                    // What was written goes, and a blocked write may owe
                    // the peer a *_BLOCKED frame.
                    state.touch(self.conn.handle);
                    return Poll::Pending;
                }
                Ok(mut n) => {
                    wrote |= n > 0;
                    // Past the parts taken whole, into the one cut short.
                    for r in &rest[..end - at.0] {
                        if n < r.len() {
                            at.1 += n;
                            break;
                        }
                        n -= r.len();
                        *at = (at.0 + 1, 0);
                    }
                }
                Err(e) => {
                    if wrote {
                        state.touch(self.conn.handle);
                    }
                    return Poll::Ready(Err(write_error(e)));
                }
            }
        }
        let done = match fin && !self.finished {
            true => conn.finish(self.id).map_err(write_error),
            false => Ok(()),
        };
        self.finished |= fin && done.is_ok();
        if wrote || fin {
            state.touch(self.conn.handle);
        }
        Poll::Ready(done)
    }

    /// Write some of `chunk` without copying it into the stream's buffer: the
    /// stream holds what it takes (a slice of `chunk`) until the peer
    /// acknowledges it, and its bytes are copied once, into packets. For data
    /// the application already holds as [`Bytes`] (a cached file, a response
    /// body); chunks under 4 KiB are copied anyway.
    pub fn poll_write_chunk(
        &mut self,
        cx: &mut Context<'_>,
        chunk: &Bytes,
    ) -> Poll<Result<usize, WriteError>> {
        self.poll_write_with(cx, chunk.len(), true, |conn, id| {
            conn.write_shared(id, chunk)
        })
    }

    /// Wait until the stream can take bytes, and return how many, at most
    /// `max`, it takes now. They are set aside for this stream's next writes
    /// (no other stream of the connection can take them) until written, or
    /// until the stream is finished or reset; a later call replaces them. A
    /// writer whose data comes from elsewhere (a file) reads only that much,
    /// and holds no buffer while the connection has no room: its send budget
    /// (`TransportConfig::send_budget`) and the peer's flow-control credit.
    pub async fn writable(&mut self, max: usize) -> Result<usize, WriteError> {
        poll_fn(|cx| self.poll_writable(cx, max)).await
    }

    /// [`writable`](Self::writable) as a poll.
    pub fn poll_writable(
        &mut self,
        cx: &mut Context<'_>,
        max: usize,
    ) -> Poll<Result<usize, WriteError>> {
        // Room set aside gives the driver nothing to send.
        self.poll_write_with(cx, max, false, |conn, id| conn.reserve(id, max))
    }

    /// Write all of `chunk` (see [`poll_write_chunk`](Self::poll_write_chunk)).
    pub async fn write_chunk(&mut self, mut chunk: Bytes) -> Result<(), WriteError> {
        while !chunk.is_empty() {
            let n = poll_fn(|cx| self.poll_write_chunk(cx, &chunk)).await?;
            chunk.advance(n);
        }
        Ok(())
    }

    /// A write of `len` bytes made by `write`, waiting for credit or room;
    /// `sends`: what it takes is for the driver to send.
    fn poll_write_with(
        &mut self,
        cx: &mut Context<'_>,
        len: usize,
        sends: bool,
        write: impl FnOnce(&mut quark_proto::Connection, StreamId) -> Result<usize, StreamError>,
    ) -> Poll<Result<usize, WriteError>> {
        let mut guard = self.conn.shared.lock();
        let state = &mut *guard;
        let (entry, conn) = match state.live(self.conn.handle) {
            Ok(live) => live,
            Err(e) => return Poll::Ready(Err(WriteError::ConnectionLost(e))),
        };
        match write(conn, self.id) {
            Ok(0) if len > 0 => {
                entry.wakers.writers.insert(self.id, cx.waker().clone());
                // A blocked write may owe the peer a *_BLOCKED frame.
                state.touch(self.conn.handle);
                Poll::Pending
            }
            Ok(n) => {
                if sends && n > 0 {
                    state.touch(self.conn.handle);
                }
                Poll::Ready(Ok(n))
            }
            Err(e) => Poll::Ready(Err(write_error(e))),
        }
    }

    /// Finish the stream: FIN after what was written. Returns at once; use
    /// [`SendStream::stopped`] to wait for the peer to acknowledge everything.
    pub fn finish(&mut self) -> Result<(), WriteError> {
        if self.finished {
            return Ok(());
        }
        finish_locked(&mut self.conn.shared.lock(), self.conn.handle, self.id)?;
        self.finished = true;
        Ok(())
    }

    /// Abandon the stream with an application error code.
    pub fn reset(&mut self, code: u64) -> Result<(), WriteError> {
        let mut state = self.conn.shared.lock();
        lost(&state, self.conn.handle)?;
        let conn = state
            .proto
            .connection_mut(self.conn.handle)
            .ok_or(WriteError::ClosedStream)?;
        conn.reset_stream(self.id, code).map_err(write_error)?;
        self.finished = true;
        state.touch(self.conn.handle);
        Ok(())
    }

    /// Wait until the peer acknowledged all data (`Ok(None)`) or sent
    /// STOP_SENDING (`Ok(Some(code))`).
    pub async fn stopped(&mut self) -> Result<Option<u64>, ConnectionError> {
        poll_fn(|cx| {
            let mut guard = self.conn.shared.lock();
            let entry = guard
                .conns
                .get_mut(&self.conn.handle)
                .expect("connection entry");
            if let Some(Some(outcome)) = entry.send_halves.get(&self.id) {
                return Poll::Ready(Ok(*outcome));
            }
            if let Some(e) = entry.error.as_deref() {
                return Poll::Ready(Err(e.clone()));
            }
            entry.wakers.finishers.insert(self.id, cx.waker().clone());
            Poll::Pending
        })
        .await
    }
}

/// FIN on stream `id` of connection `h`, with the endpoint's state locked.
fn finish_locked(state: &mut State, h: ConnectionHandle, id: StreamId) -> Result<(), WriteError> {
    lost(state, h)?;
    let conn = state
        .proto
        .connection_mut(h)
        .ok_or(WriteError::ClosedStream)?;
    conn.finish(id).map_err(write_error)?;
    state.touch(h);
    Ok(())
}

/// The connection's error once it ended: a closed connection keeps no sending
/// halves, so this, not the stream, explains why a send-side call fails.
fn lost(state: &State, h: ConnectionHandle) -> Result<(), WriteError> {
    match state
        .conns
        .get(&h)
        .and_then(|e| e.error.as_deref().cloned())
    {
        Some(e) => Err(WriteError::ConnectionLost(e)),
        None => Ok(()),
    }
}

/// STOP_SENDING on stream `id` of connection `h`, with the endpoint's state locked.
fn stop_locked(state: &mut State, h: ConnectionHandle, id: StreamId, code: u64) {
    if let Some(conn) = state.proto.connection_mut(h) {
        let _ = conn.stop_sending(id, code);
    }
    state.touch(h);
}

fn write_error(e: StreamError) -> WriteError {
    match e {
        StreamError::Write(quark_proto::WriteError::Stopped(code)) => WriteError::Stopped(code),
        _ => WriteError::ClosedStream,
    }
}

impl AsyncWrite for SendStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().poll_write_buf(cx, buf).map_err(Into::into)
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // Data is handed to the transport as it is written; nothing is held back here.
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(self.get_mut().finish().map_err(Into::into))
    }
}

impl Drop for SendStream {
    fn drop(&mut self) {
        let mut state = self.conn.shared.lock();
        // Like closing a TCP socket: what was written is still delivered.
        if !self.finished {
            let _ = finish_locked(&mut state, self.conn.handle, self.id);
        }
        if let Some(entry) = state.conns.get_mut(&self.conn.handle) {
            entry.send_halves.remove(&self.id);
            entry.wakers.writers.remove(&self.id);
            entry.wakers.finishers.remove(&self.id);
        }
        self.conn.release(&mut state);
    }
}

/// A read on the protocol connection: its outcome, and whether its data
/// ended the stream.
trait ProtoRead:
    FnOnce(&mut quark_proto::Connection, StreamId) -> Result<(ReadOutcome, bool), StreamError>
{
}

impl<F> ProtoRead for F where
    F: FnOnce(&mut quark_proto::Connection, StreamId) -> Result<(ReadOutcome, bool), StreamError>
{
}

/// The receiving half of a stream.
pub struct RecvStream {
    conn: ConnRef,
    id: StreamId,
    /// The end was reached (or an error reported): nothing to stop on drop.
    done: bool,
    /// The error a read reported: every later read reports it again (a
    /// stream cut short must never read as if it had ended). Boxed: the
    /// stream sits in every reader's future, which moves it.
    failed: Option<Box<ReadError>>,
}

impl RecvStream {
    pub(crate) fn new(conn: ConnRef, id: StreamId) -> Self {
        RecvStream {
            conn,
            id,
            done: false,
            failed: None,
        }
    }

    /// The stream ID.
    pub fn id(&self) -> StreamId {
        self.id
    }

    /// Whether nothing is left to read: the end of the stream was reached
    /// (by a read that returned `None`, or one whose bytes were the last,
    /// the FIN having arrived with them), or a read failed, or
    /// [`stop`](Self::stop) was called. The next read then returns at once,
    /// without the connection's lock.
    pub fn at_end(&self) -> bool {
        self.done
    }

    /// Read into `buf`: `Some(n)` bytes, or `None` at the end of the stream.
    pub fn poll_read_buf(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<Result<Option<usize>, ReadError>> {
        self.poll_read_with(cx, |conn, id| conn.read(id, buf).map(|o| (o, false)))
    }

    /// Read what has arrived in order, at most `max` bytes, into a new buffer of
    /// exactly that size: `None` at the end of the stream. Unlike a read into a
    /// large zeroed buffer, this costs only the bytes it returns (one copy).
    pub fn poll_read_chunk(
        &mut self,
        cx: &mut Context<'_>,
        max: usize,
    ) -> Poll<Result<Option<Vec<u8>>, ReadError>> {
        let mut chunk = Vec::new();
        let polled = self.poll_read_with(cx, |conn, id| {
            conn.read_append(id, &mut chunk, max).map(|o| (o, false))
        });
        polled.map_ok(|n| n.map(|_| chunk))
    }

    /// [`poll_read_chunk`](Self::poll_read_chunk) as a future.
    pub async fn read_chunk(&mut self, max: usize) -> Result<Option<Vec<u8>>, ReadError> {
        poll_fn(|cx| self.poll_read_chunk(cx, max)).await
    }

    /// Read what has arrived in order, at most `max` bytes, as [`Bytes`]:
    /// `None` at the end of the stream. Without a copy when the bytes are
    /// still in the datagram they arrived in (zero-copy receive): the
    /// `Bytes` then shares the driver's receive buffer until dropped, so
    /// drop it soon (the driver lends a bounded number of buffers, and
    /// copies past that). Copied from the stream's storage otherwise.
    pub fn poll_read_bytes(
        &mut self,
        cx: &mut Context<'_>,
        max: usize,
    ) -> Poll<Result<Option<Bytes>, ReadError>> {
        let mut chunk = Bytes::new();
        let polled = self.poll_read_with(cx, |conn, id| {
            let outcome = match conn.read_bytes(id, max)? {
                None => ReadOutcome::Finished,
                Some(bytes) if bytes.is_empty() => ReadOutcome::Blocked,
                Some(bytes) => {
                    let n = bytes.len();
                    chunk = bytes;
                    ReadOutcome::Data(n)
                }
            };
            Ok((outcome, false))
        });
        polled.map_ok(|n| n.map(|_| chunk))
    }

    /// [`poll_read_bytes`](Self::poll_read_bytes) as a future.
    pub async fn read_bytes(&mut self, max: usize) -> Result<Option<Bytes>, ReadError> {
        poll_fn(|cx| self.poll_read_bytes(cx, max)).await
    }

    /// Hand what has arrived in order, at most `max` bytes, to `f` in place (one
    /// piece or more): `Some(n)` bytes, or `None` at the end of the stream. Nothing is
    /// copied or allocated; `f` runs under the endpoint's lock, so keep it short.
    /// A read that takes the last bytes (the FIN already here) also ends the
    /// stream, so the `None` after it costs no lock.
    pub fn poll_read_visit(
        &mut self,
        cx: &mut Context<'_>,
        max: usize,
        f: impl FnMut(&[u8]),
    ) -> Poll<Result<Option<usize>, ReadError>> {
        self.poll_read_with(cx, |conn, id| conn.read_visit_to_end(id, max, f))
    }

    /// [`poll_read_visit`](Self::poll_read_visit) as a future.
    pub async fn read_visit(
        &mut self,
        max: usize,
        mut f: impl FnMut(&[u8]),
    ) -> Result<Option<usize>, ReadError> {
        poll_fn(|cx| self.poll_read_visit(cx, max, &mut f)).await
    }

    /// Run `read` on the protocol connection and turn its outcome into a poll
    /// result, registering the waker when nothing is readable yet. `read`
    /// also says whether its data ended the stream.
    fn poll_read_with(
        &mut self,
        cx: &mut Context<'_>,
        read: impl ProtoRead,
    ) -> Poll<Result<Option<usize>, ReadError>> {
        if self.done {
            return Poll::Ready(self.failed.as_deref().cloned().map_or(Ok(None), Err));
        }
        let polled = self.poll_read_locked(cx, read);
        if let Poll::Ready(Err(e)) = &polled {
            self.done = true;
            self.failed = Some(Box::new(e.clone()));
        }
        polled
    }

    /// [`poll_read_with`](Self::poll_read_with) under the connection's lock.
    fn poll_read_locked(
        &mut self,
        cx: &mut Context<'_>,
        read: impl ProtoRead,
    ) -> Poll<Result<Option<usize>, ReadError>> {
        let mut guard = self.conn.shared.lock();
        let state = &mut *guard;
        let entry = state
            .conns
            .get_mut(&self.conn.handle)
            .expect("connection entry");
        let Some(conn) = state.proto.connection_mut(self.conn.handle) else {
            return Poll::Ready(Err(ReadError::ConnectionLost(
                entry
                    .error
                    .as_deref()
                    .cloned()
                    .unwrap_or(ConnectionError::LocallyClosed),
            )));
        };
        match read(conn, self.id) {
            Ok((ReadOutcome::Data(n), ended)) => {
                // The stream ended with these bytes: the next read returns
                // `None` without the lock.
                self.done = ended;
                // Wake the driver only if the read opened flow-control credit
                // worth announcing: most reads leave it nothing to send
                // (a stream that ended may be freed, raising MAX_STREAMS).
                if conn.has_pending_stream_control() {
                    state.touch(self.conn.handle);
                }
                Poll::Ready(Ok(Some(n)))
            }
            Ok((ReadOutcome::Finished, _)) => {
                self.done = true;
                // The finished stream may be freed, raising MAX_STREAMS.
                if conn.has_pending_stream_control() {
                    state.touch(self.conn.handle);
                }
                Poll::Ready(Ok(None))
            }
            Ok((ReadOutcome::Blocked, _)) => {
                if let Some(e) = entry.error.as_deref() {
                    return Poll::Ready(Err(ReadError::ConnectionLost(e.clone())));
                }
                entry.wakers.readers.insert(self.id, cx.waker().clone());
                state.reader_waits += 1;
                Poll::Pending
            }
            Err(StreamError::Read(quark_proto::ReadError::Reset(code))) => {
                Poll::Ready(Err(ReadError::Reset(code)))
            }
            Err(_) => {
                // A closed connection keeps only the streams with something left
                // to read: for the others the connection's end is the answer.
                Poll::Ready(Err(match entry.error.as_deref() {
                    Some(e) => ReadError::ConnectionLost(e.clone()),
                    None => ReadError::Stopped,
                }))
            }
        }
    }

    /// Read some bytes: `Some(n)`, or `None` at the end.
    pub async fn read(&mut self, buf: &mut [u8]) -> Result<Option<usize>, ReadError> {
        poll_fn(|cx| self.poll_read_buf(cx, buf)).await
    }

    /// Read the whole stream, refusing more than `limit` bytes.
    pub async fn read_to_end(&mut self, limit: usize) -> Result<Vec<u8>, ReadError> {
        let mut out = Vec::new();
        while let Some(chunk) = self.read_chunk(usize::MAX).await? {
            if out.len() + chunk.len() > limit {
                let _ = self.stop(0);
                return Err(ReadError::TooLong(limit));
            }
            if out.is_empty() {
                out = chunk;
            } else {
                out.extend_from_slice(&chunk);
            }
        }
        Ok(out)
    }

    /// Tell the peer we will not read any more (STOP_SENDING with `code`).
    pub fn stop(&mut self, code: u64) -> Result<(), ReadError> {
        self.done = true;
        stop_locked(
            &mut self.conn.shared.lock(),
            self.conn.handle,
            self.id,
            code,
        );
        Ok(())
    }
}

impl AsyncRead for RecvStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        // Initialise (zero) only what this read will fill, not the whole buffer.
        let polled = this.poll_read_with(cx, |conn, id| {
            let n = conn.readable_bytes(id).min(buf.remaining());
            conn.read(id, buf.initialize_unfilled_to(n))
                .map(|o| (o, false))
        });
        match polled {
            Poll::Ready(Ok(Some(n))) => {
                buf.advance(n);
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Ok(None)) => Poll::Ready(Ok(())),
            Poll::Ready(Err(e)) => Poll::Ready(Err(e.into())),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl Drop for RecvStream {
    fn drop(&mut self) {
        let mut state = self.conn.shared.lock();
        if !self.done {
            stop_locked(&mut state, self.conn.handle, self.id, 0);
        }
        if let Some(entry) = state.conns.get_mut(&self.conn.handle) {
            entry.wakers.readers.remove(&self.id);
        }
        self.conn.release(&mut state);
    }
}
