//! A request stream (RFC 9114 §4.1): HEADERS, then DATA frames, then optional
//! trailing HEADERS, then FIN. Both ends use it: a client sends a request and
//! receives a response, a server the other way round.

use bytes::Bytes;
use http::HeaderMap;
use quark::SendStream;

use crate::conn::{Conn, LOCAL};
use crate::error::*;
use crate::frame::{self, FrameHeader};
use crate::reader::FrameReader;

/// Where the receiving side of a request stream is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Recv {
    /// Before the (final) HEADERS.
    Head,
    /// In the body: this many bytes left of the current DATA frame.
    Body(u64),
    /// Trailers came, or the stream ended.
    Done,
}

/// One request and its response.
pub struct RequestStream {
    pub(crate) conn: Conn,
    send: SendStream,
    recv: FrameReader,
    state: Recv,
    /// The body length announced by content-length, and what arrived so far.
    expected: Option<u64>,
    received: u64,
    trailers: Option<HeaderMap>,
}

impl RequestStream {
    pub(crate) fn new(conn: Conn, send: SendStream, recv: FrameReader) -> Self {
        RequestStream {
            conn,
            send,
            recv,
            state: Recv::Head,
            expected: None,
            received: 0,
            trailers: None,
        }
    }

    /// The QUIC stream ID.
    pub fn id(&self) -> u64 {
        self.send.id().0
    }

    /// Records a connection error (closing the connection) or resets this
    /// stream for a stream error, and passes the error on.
    fn fail(&mut self, e: Error) -> Error {
        match &e {
            Error::Connection { .. } => self.conn.fail(&e),
            Error::Stream { code, .. } => {
                let _ = self.recv.stream().stop(*code);
                let _ = self.send.reset(*code);
            }
            _ => {}
        }
        self.conn.error().unwrap_or(e)
    }

    /// Sends a HEADERS frame with the field section `block`.
    pub(crate) async fn send_headers(&mut self, block: &[u8]) -> Result<(), Error> {
        let mut out = Vec::with_capacity(block.len() + 16);
        frame::put_frame(&mut out, frame::HEADERS, block);
        self.send.write_all(&out).await?;
        Ok(())
    }

    /// Sends `data` as one DATA frame (the bytes are not copied into the stream
    /// when large: see quark's `write_chunk`).
    pub async fn send_data(&mut self, data: Bytes) -> Result<(), Error> {
        if data.is_empty() {
            return Ok(());
        }
        let mut head = [0u8; 16];
        let n = frame::write_header(&mut head, frame::DATA, data.len() as u64);
        self.send.write_all(&head[..n]).await?;
        self.send.write_chunk(data).await?;
        Ok(())
    }

    /// Sends trailing header fields; the stream ends after them.
    pub async fn send_trailers(&mut self, trailers: &HeaderMap) -> Result<(), Error> {
        let mut fields: Vec<(&[u8], &[u8])> = Vec::new();
        for (n, v) in trailers {
            fields.push((n.as_str().as_bytes(), v.as_bytes()));
        }
        let mut block = Vec::new();
        quark_qpack::encode_section(&fields, &mut block);
        self.send_headers(&block).await?;
        self.finish()
    }

    /// Ends the sending side (FIN).
    pub fn finish(&mut self) -> Result<(), Error> {
        self.send.finish()?;
        Ok(())
    }

    /// Abandons the stream with `code` (e.g. H3_REQUEST_CANCELLED): both directions.
    pub fn cancel(&mut self, code: u64) {
        let _ = self.send.reset(code);
        let _ = self.recv.stream().stop(code);
    }

    /// Reads the next HEADERS frame's decoded fields, skipping unknown frames;
    /// `None` if the stream ends first.
    pub(crate) async fn recv_fields(&mut self) -> Result<Option<Vec<quark_qpack::Field>>, Error> {
        let got = self.next_headers().await;
        got.map_err(|e| self.fail(e))
    }

    async fn next_headers(&mut self) -> Result<Option<Vec<quark_qpack::Field>>, Error> {
        loop {
            let Some(h) = self.recv.header().await? else {
                return Ok(None);
            };
            match h.ty {
                frame::HEADERS => return self.fields(h).await.map(Some),
                frame::DATA => {
                    return Err(Error::conn(H3_FRAME_UNEXPECTED, "DATA before HEADERS"));
                }
                ty => self.other_frame(ty, h).await?,
            }
        }
    }

    /// A HEADERS payload, decoded; a section over our limit is refused.
    async fn fields(&mut self, h: FrameHeader) -> Result<Vec<quark_qpack::Field>, Error> {
        let limit = LOCAL.max_field_section_size.unwrap_or(u64::MAX);
        if h.len > limit {
            return Err(Error::stream(
                H3_EXCESSIVE_LOAD,
                "a field section too large",
            ));
        }
        let block = self.recv.payload(h.len).await?;
        quark_qpack::decode_section(&block, limit).map_err(|e| match e {
            quark_qpack::DecodeError::TooLarge => {
                Error::stream(H3_EXCESSIVE_LOAD, "a field section too large")
            }
            e => Error::conn(e.code(), "a field section that does not decode"),
        })
    }

    /// A frame that is neither HEADERS nor DATA on a request stream.
    async fn other_frame(&mut self, ty: u64, h: FrameHeader) -> Result<(), Error> {
        match ty {
            frame::SETTINGS | frame::GOAWAY | frame::MAX_PUSH_ID | frame::CANCEL_PUSH => Err(
                Error::conn(H3_FRAME_UNEXPECTED, "a control frame on a request stream"),
            ),
            frame::PUSH_PROMISE => Err(Error::conn(H3_ID_ERROR, "a push we never allowed")),
            ty if frame::is_http2_only(ty) => {
                Err(Error::conn(H3_FRAME_UNEXPECTED, "an HTTP/2 frame type"))
            }
            _ => self.recv.skip(h.len).await,
        }
    }

    /// The message head has been read: the body comes next.
    pub(crate) fn start_body(&mut self, headers: &HeaderMap) -> Result<(), Error> {
        self.expected = crate::message::content_length(headers).map_err(|e| self.fail(e))?;
        self.state = Recv::Body(0);
        Ok(())
    }

    /// The next piece of the body, or `None` at its end (trailers, if any, are
    /// then in [`trailers`](Self::trailers)).
    pub async fn recv_data(&mut self) -> Result<Option<Bytes>, Error> {
        let mut out = Vec::new();
        let got = self
            .recv_data_with(|piece| out.extend_from_slice(piece))
            .await?;
        Ok(got.map(|_| out.into()))
    }

    /// Hands the next piece of the body to `f` in place (nothing allocated):
    /// `Some(bytes)`, or `None` at its end. `f` may be called more than once.
    pub async fn recv_data_with(&mut self, f: impl FnMut(&[u8])) -> Result<Option<usize>, Error> {
        let got = self.next_data(f).await;
        got.map_err(|e| self.fail(e))
    }

    async fn next_data(&mut self, mut f: impl FnMut(&[u8])) -> Result<Option<usize>, Error> {
        loop {
            match self.state {
                Recv::Head => {
                    return Err(Error::stream(H3_INTERNAL_ERROR, "body read before head"));
                }
                Recv::Done => return Ok(None),
                Recv::Body(left) if left > 0 => {
                    let n = self.recv.some_with(left, &mut f).await?;
                    self.state = Recv::Body(left - n as u64);
                    self.received += n as u64;
                    if self.expected.is_some_and(|e| self.received > e) {
                        return Err(Error::stream(
                            H3_MESSAGE_ERROR,
                            "more body than content-length",
                        ));
                    }
                    return Ok(Some(n));
                }
                Recv::Body(_) => match self.recv.header().await? {
                    None => {
                        self.end_body()?;
                        return Ok(None);
                    }
                    Some(h) if h.ty == frame::DATA => self.state = Recv::Body(h.len),
                    Some(h) if h.ty == frame::HEADERS => {
                        self.read_trailers(h).await?;
                        return Ok(None);
                    }
                    Some(h) => self.other_frame(h.ty, h).await?,
                },
            }
        }
    }

    /// Trailing fields end the body; nothing but the stream's end may follow.
    async fn read_trailers(&mut self, h: FrameHeader) -> Result<(), Error> {
        let fields = self.fields(h).await?;
        let trailers = crate::message::headers(&fields)?;
        self.trailers = Some(trailers);
        self.end_body()?;
        if self.recv.header().await?.is_some() {
            return Err(Error::conn(H3_FRAME_UNEXPECTED, "a frame after trailers"));
        }
        Ok(())
    }

    fn end_body(&mut self) -> Result<(), Error> {
        self.state = Recv::Done;
        if self.expected.is_some_and(|n| n != self.received) {
            return Err(Error::stream(
                H3_MESSAGE_ERROR,
                "less body than content-length",
            ));
        }
        Ok(())
    }

    /// The trailing header fields, once the body has been read to its end.
    pub fn trailers(&self) -> Option<&HeaderMap> {
        self.trailers.as_ref()
    }
}
