//! Stream halves behind h3's `SendStream`, `RecvStream` and `BidiStream`.

use std::task::{Context, Poll};

use bytes::{Buf, Bytes};
use h3::quic::{self, StreamErrorIncoming, StreamId, WriteBuf};

use crate::error::{read_error, write_error};

/// The most a single `poll_data` hands to h3: one allocation of at most this.
const READ_CHUNK: usize = 64 * 1024;

/// quark's stream IDs are varints (below 2^62), so h3 always takes them.
fn h3_id(id: quark::StreamId) -> StreamId {
    StreamId::try_from(id.0).expect("a QUIC stream ID is below 2^62")
}

/// The sending half of a stream. h3 hands it one frame at a time
/// (`send_data`), then polls `poll_ready` until quark took all of it.
pub struct SendStream<B: Buf> {
    stream: quark::SendStream,
    id: StreamId,
    /// The frame h3 gave and quark has not yet taken in full.
    pending: Option<WriteBuf<B>>,
}

impl<B: Buf> SendStream<B> {
    pub(crate) fn new(stream: quark::SendStream) -> Self {
        let id = h3_id(stream.id());
        SendStream {
            stream,
            id,
            pending: None,
        }
    }

    /// Writes what is pending, as far as flow control and quark's send
    /// budget allow now.
    fn poll_flush(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), StreamErrorIncoming>> {
        let Some(buf) = self.pending.as_mut() else {
            return Poll::Ready(Ok(()));
        };
        while buf.has_remaining() {
            match self.stream.poll_write_buf(cx, buf.chunk()) {
                Poll::Ready(Ok(n)) => buf.advance(n),
                Poll::Ready(Err(e)) => {
                    self.pending = None;
                    return Poll::Ready(Err(write_error(e)));
                }
                Poll::Pending => return Poll::Pending,
            }
        }
        self.pending = None;
        Poll::Ready(Ok(()))
    }
}

impl<B: Buf> quic::SendStream<B> for SendStream<B> {
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), StreamErrorIncoming>> {
        self.poll_flush(cx)
    }

    fn send_data<T: Into<WriteBuf<B>>>(&mut self, data: T) -> Result<(), StreamErrorIncoming> {
        if self.pending.is_some() {
            // h3 polls `poll_ready` to completion first; this is its misuse.
            return Err(StreamErrorIncoming::Unknown(
                "send_data while the previous frame is still being written".into(),
            ));
        }
        self.pending = Some(data.into());
        Ok(())
    }

    fn poll_finish(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), StreamErrorIncoming>> {
        if self.poll_flush(cx)?.is_pending() {
            return Poll::Pending;
        }
        // quark queues the FIN behind the data at once.
        Poll::Ready(self.stream.finish().map_err(write_error))
    }

    fn reset(&mut self, reset_code: u64) {
        self.pending = None;
        // Already finished, reset or gone: nothing more to abandon.
        let _ = self.stream.reset(reset_code);
    }

    fn send_id(&self) -> StreamId {
        self.id
    }
}

impl<B: Buf> quic::SendStreamUnframed<B> for SendStream<B> {
    fn poll_send<D: Buf>(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut D,
    ) -> Poll<Result<usize, StreamErrorIncoming>> {
        // Bytes of an earlier frame go first, or the stream would interleave.
        if self.poll_flush(cx)?.is_pending() {
            return Poll::Pending;
        }
        let n =
            std::task::ready!(self.stream.poll_write_buf(cx, buf.chunk())).map_err(write_error)?;
        buf.advance(n);
        Poll::Ready(Ok(n))
    }
}

/// The receiving half of a stream.
pub struct RecvStream {
    stream: quark::RecvStream,
    id: StreamId,
}

impl RecvStream {
    pub(crate) fn new(stream: quark::RecvStream) -> Self {
        let id = h3_id(stream.id());
        RecvStream { stream, id }
    }
}

impl quic::RecvStream for RecvStream {
    type Buf = Bytes;

    fn poll_data(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Option<Bytes>, StreamErrorIncoming>> {
        // Zero-copy where the data still lies in the datagram it came in.
        self.stream
            .poll_read_bytes(cx, READ_CHUNK)
            .map(|r| r.map_err(read_error))
    }

    fn stop_sending(&mut self, error_code: u64) {
        // Already at its end or gone: nothing to stop.
        let _ = self.stream.stop(error_code);
    }

    fn recv_id(&self) -> StreamId {
        self.id
    }
}

/// Both halves of a bidirectional stream (a request).
pub struct BidiStream<B: Buf> {
    send: SendStream<B>,
    recv: RecvStream,
}

impl<B: Buf> BidiStream<B> {
    pub(crate) fn new((send, recv): (quark::SendStream, quark::RecvStream)) -> Self {
        BidiStream {
            send: SendStream::new(send),
            recv: RecvStream::new(recv),
        }
    }
}

impl<B: Buf> quic::SendStream<B> for BidiStream<B> {
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), StreamErrorIncoming>> {
        self.send.poll_ready(cx)
    }

    fn send_data<T: Into<WriteBuf<B>>>(&mut self, data: T) -> Result<(), StreamErrorIncoming> {
        self.send.send_data(data)
    }

    fn poll_finish(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), StreamErrorIncoming>> {
        self.send.poll_finish(cx)
    }

    fn reset(&mut self, reset_code: u64) {
        self.send.reset(reset_code)
    }

    fn send_id(&self) -> StreamId {
        self.send.send_id()
    }
}

impl<B: Buf> quic::SendStreamUnframed<B> for BidiStream<B> {
    fn poll_send<D: Buf>(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut D,
    ) -> Poll<Result<usize, StreamErrorIncoming>> {
        self.send.poll_send(cx, buf)
    }
}

impl<B: Buf> quic::RecvStream for BidiStream<B> {
    type Buf = Bytes;

    fn poll_data(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Option<Bytes>, StreamErrorIncoming>> {
        self.recv.poll_data(cx)
    }

    fn stop_sending(&mut self, error_code: u64) {
        self.recv.stop_sending(error_code)
    }

    fn recv_id(&self) -> StreamId {
        self.recv.recv_id()
    }
}

impl<B: Buf> quic::BidiStream<B> for BidiStream<B> {
    type SendStream = SendStream<B>;
    type RecvStream = RecvStream;

    fn split(self) -> (SendStream<B>, RecvStream) {
        (self.send, self.recv)
    }
}
