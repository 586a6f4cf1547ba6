//! A request stream (RFC 9114 §4.1): HEADERS, then DATA frames, then optional
//! trailing HEADERS, then FIN. Both ends use it: a client sends a request and
//! receives a response, a server the other way round.

use bytes::Bytes;
use http::HeaderMap;
use quark::SendStream;

use quark_proto::Side;

use crate::conn::Conn;
use crate::error::*;
use crate::frame::{self, FrameBuf, FrameHeader};
use crate::head::Fields;
use crate::reader::{FrameReader, HEAD_READ_AHEAD};

/// Bytes of a blocked request's stream read ahead while it waits for QPACK
/// inserts (a body's first bytes; past them the peer's flow control waits).
const BLOCKED_READ_AHEAD: usize = 16 * 1024;

/// Where the receiving side of a request stream is.
#[derive(Debug, Clone)]
enum Recv {
    /// Before the (final) HEADERS.
    Head,
    /// In the body: this many bytes left of the current DATA frame.
    Body(u64),
    /// Trailers came, or the stream ended.
    Done,
    /// An error ended it: every later read returns it again (the stream below
    /// would otherwise report a clean end).
    Failed(Error),
}

/// One request and its response.
///
/// Dropping it before [`finish`](Self::finish) resets the sending side with
/// H3_REQUEST_CANCELLED, so the peer never takes a cut-off message for a
/// whole one; a receiving side not read to its end is stopped (H3_NO_ERROR
/// once our side is finished, as a server that answered without reading a
/// body does; H3_REQUEST_CANCELLED otherwise). Reads are not cancel-safe: a
/// read dropped half-way (a timeout around it) leaves the stream unusable.
pub struct RequestStream {
    pub(crate) conn: Conn,
    send: SendStream,
    recv: FrameReader,
    state: Recv,
    /// The body length announced by content-length (0 when the message can
    /// have no body), and what arrived so far.
    expected: Option<u64>,
    received: u64,
    /// Boxed: a stream is moved whole several times per request, and few
    /// messages have trailers.
    trailers: Option<Box<HeaderMap>>,
    /// Our side ended (FIN or reset).
    sent_all: bool,
    /// A client's request was HEAD: its response has no body.
    pub(crate) head_request: bool,
    /// A field section was decoded here: the peer's encoder needs no Stream
    /// Cancellation when the stream is dropped.
    head_decoded: bool,
    /// A field section (a head or trailers) waits for QPACK inserts.
    blocked: bool,
    /// The final status a server sent, and the body bytes sent (DATA
    /// payloads): what an access log reports.
    pub(crate) status_sent: Option<http::StatusCode>,
    data_sent: u64,
    /// HTTP Datagrams for this (CONNECT) stream, once routed here.
    pub(crate) datagrams: Option<tokio::sync::mpsc::Receiver<Bytes>>,
}

impl Drop for RequestStream {
    fn drop(&mut self) {
        if self.datagrams.is_some() {
            let id = self.id();
            self.conn.state.lock().unwrap().datagram_routes.remove(&id);
        }
        if !self.sent_all {
            let _ = self.send.reset(H3_REQUEST_CANCELLED);
        }
        if !matches!(self.state, Recv::Done | Recv::Failed(_)) {
            let code = if self.sent_all {
                H3_NO_ERROR
            } else {
                H3_REQUEST_CANCELLED
            };
            let _ = self.recv.stream().stop(code);
        }
        //= https://www.rfc-editor.org/rfc/rfc9204#section-4.4.2
        //# When a stream is reset or reading is abandoned, the decoder emits a
        //# Stream Cancellation instruction.
        if let (Some(q), true) = (&self.conn.qpack, !self.head_decoded || self.blocked) {
            q.cancel(self.id());
            self.conn.defer_decoder_flush();
        }
        self.conn.buffers.give(self.recv.take_buf());
    }
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
            sent_all: false,
            head_request: false,
            head_decoded: false,
            blocked: false,
            status_sent: None,
            data_sent: 0,
            datagrams: None,
        }
    }

    /// The QUIC stream ID.
    pub fn id(&self) -> u64 {
        self.send.id().0
    }

    /// Changes the response's priority (RFC 9218): a client sends a
    /// PRIORITY_UPDATE, which the server applies to its response in place of
    /// the request's Priority field; a server reorders its own response.
    /// (A request's first priority goes in its `priority` header field:
    /// [`priority::format`](crate::priority::format) writes one.)
    pub async fn set_priority(&mut self, p: crate::Priority) -> Result<(), Error> {
        match self.conn.side {
            Side::Client => self.conn.send_priority_update(self.id(), p).await,
            Side::Server => {
                self.set_send_priority(p);
                Ok(())
            }
        }
    }

    /// Orders our side of the stream by `p` in the connection's sending.
    pub(crate) fn set_send_priority(&mut self, p: crate::Priority) {
        // A stream already finished or reset has nothing left to order.
        let _ = self.send.set_priority(p.urgency, p.incremental);
    }

    /// Records a connection error (closing the connection) or resets this
    /// stream for a stream error, and passes the error on.
    fn fail(&mut self, e: Error) -> Error {
        match &e {
            Error::Connection { .. } => self.conn.fail(&e),
            Error::Stream { code, .. } => {
                let _ = self.recv.stream().stop(*code);
                let _ = self.send.reset(*code);
                self.sent_all = true;
            }
            Error::Usage(_) => return e,
            _ => {}
        }
        let e = match self.conn.error().unwrap_or(e) {
            // RFC 9114 §5.2: a request at or above the server's GOAWAY ID was
            // not processed, so one cut off by the close is retryable.
            Error::ConnectionLost(_) if self.beyond_goaway() => Error::GoingAway,
            e => e,
        };
        self.state = Recv::Failed(e.clone());
        e
    }

    /// A client's request on a stream the server's GOAWAY excluded.
    fn beyond_goaway(&self) -> bool {
        let goaway = self.conn.state.lock().unwrap().goaway;
        self.conn.side == Side::Client && goaway.is_some_and(|id| self.id() >= id)
    }

    /// Sends `section` (a field section encoded into the payload) as a HEADERS frame.
    /// Inserts its field section made go out first, on the encoder stream,
    /// and the decoder's pending acknowledgments with it.
    pub(crate) async fn send_headers(&mut self, section: FrameBuf) -> Result<(), Error> {
        self.send_section(section, None).await
    }

    /// Sends `section` as a HEADERS frame, `body` as one DATA frame (none
    /// when empty), then FIN: a small message in one write to the stream
    /// (one visit to the endpoint where head, body and finish took four).
    pub(crate) async fn send_whole(&mut self, section: FrameBuf, body: &[u8]) -> Result<(), Error> {
        self.send_section(section, Some(body)).await?;
        self.data_sent += body.len() as u64;
        self.sent_all = true;
        Ok(())
    }

    /// `section` as a HEADERS frame, alone or with a whole body and FIN,
    /// after the QPACK streams' pending instructions.
    async fn send_section(
        &mut self,
        mut section: FrameBuf,
        body: Option<&[u8]>,
    ) -> Result<(), Error> {
        self.conn.flush_encoder().await?;
        self.conn.flush_decoder().await?;
        let head = section.finish(frame::HEADERS);
        match body {
            None => self.send.write_all(head).await?,
            Some(body) => {
                let mut data = [0u8; 16];
                let n = match body.is_empty() {
                    true => 0,
                    false => frame::write_header(&mut data, frame::DATA, body.len() as u64),
                };
                self.send
                    .write_parts(&[head, &data[..n], body], true)
                    .await?;
            }
        }
        self.conn.buffers.give(section.into_inner());
        Ok(())
    }

    /// A buffer to build a HEADERS frame in (a reused one).
    pub(crate) fn frame_buf(&self) -> FrameBuf {
        FrameBuf::with(self.conn.buffers.take())
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
        let len = data.len() as u64;
        self.send.write_chunk(data).await?;
        self.data_sent += len;
        Ok(())
    }

    /// The final status of the response sent on this stream (a server's),
    /// once sent.
    pub fn response_status(&self) -> Option<http::StatusCode> {
        self.status_sent
    }

    /// Body bytes sent so far (DATA frame payloads).
    pub fn body_bytes_sent(&self) -> u64 {
        self.data_sent
    }

    /// Waits until a DATA frame can go out, and returns how many payload
    /// bytes, at most `max`, one carries now: room for them and the frame's
    /// header is set aside for this stream's next [`send_data`](Self::send_data)
    /// (see quark's `SendStream::writable`). A sender whose body comes from
    /// elsewhere (a file) reads only that much, and holds no buffer while the
    /// connection has no room.
    pub async fn writable(&mut self, max: usize) -> Result<usize, Error> {
        if max == 0 {
            return Ok(0);
        }
        let header = |len: usize| frame::write_header(&mut [0; 16], frame::DATA, len as u64);
        let room = self.send.writable(max.saturating_add(header(max))).await?;
        // The largest payload whose frame fits (at least 1: a frame that does
        // not fit waits for room as any write does).
        let mut len = room.min(max);
        while len > 1 && header(len) + len > room {
            len -= 1;
        }
        Ok(len)
    }

    /// Sends trailing header fields (the same rules as a head's regular
    /// fields); the stream ends after them.
    pub async fn send_trailers(&mut self, trailers: &HeaderMap) -> Result<(), Error> {
        let mut section = self.frame_buf();
        let limit = self.conn.peer_field_limit();
        let (id, conn) = (self.id(), &self.conn);
        let mut encode = |f: &[(&[u8], &[u8])], out: &mut Vec<u8>| conn.encode(id, f, out);
        crate::message::encode_trailers(trailers, limit, section.payload(), &mut encode)?;
        self.send_headers(section).await?;
        self.finish()
    }

    /// Ends the sending side (FIN).
    pub fn finish(&mut self) -> Result<(), Error> {
        self.send.finish()?;
        self.sent_all = true;
        Ok(())
    }

    /// Waits until the peer has acknowledged all we sent (after
    /// [`finish`](Self::finish)), or stopped the stream: a connection closed
    /// sooner could cut the end of the response off.
    pub async fn acked(&mut self) -> Result<(), Error> {
        self.send.stopped().await?;
        Ok(())
    }

    /// Abandons the stream with `code` (e.g. H3_REQUEST_CANCELLED): both directions.
    pub fn cancel(&mut self, code: u64) {
        let _ = self.send.reset(code);
        let _ = self.recv.stream().stop(code);
        self.sent_all = true;
        self.state = Recv::Failed(Error::stream(code, "cancelled"));
    }

    /// Reads the next HEADERS frame's decoded fields, skipping unknown frames;
    /// `None` if the stream ends first.
    pub(crate) async fn recv_fields(&mut self) -> Result<Option<Vec<quark_qpack::Field>>, Error> {
        let got = self.next_headers().await;
        got.map_err(|e| self.fail(e))
    }

    async fn next_headers(&mut self) -> Result<Option<Vec<quark_qpack::Field>>, Error> {
        match self.next_headers_frame().await? {
            Some(h) => self.fields(h).await.map(Some),
            None => Ok(None),
        }
    }

    /// [`recv_fields`](Self::recv_fields) as a [`Fields`] section: decoded
    /// into one buffer (no allocation per field) when there is no dynamic table.
    pub(crate) async fn recv_section(&mut self) -> Result<Option<Fields>, Error> {
        let got = self.next_section().await;
        got.map_err(|e| self.fail(e))
    }

    async fn next_section(&mut self) -> Result<Option<Fields>, Error> {
        let Some(h) = self.next_headers_frame().await? else {
            return Ok(None);
        };
        if self.conn.qpack.is_some() {
            return Ok(Some(Fields::from_fields(&self.fields(h).await?)));
        }
        let limit = self.check_section_len(h)?;
        let decoded = self
            .recv
            .payload_with(h.len, |block| Fields::decode(block, limit))
            .await?;
        self.head_decoded = true;
        decoded.map(Some).map_err(decode_error)
    }

    /// The next HEADERS frame's header, skipping unknown frames; `None` if the
    /// stream ends first.
    async fn next_headers_frame(&mut self) -> Result<Option<FrameHeader>, Error> {
        loop {
            let Some(h) = self.recv.header_ahead(HEAD_READ_AHEAD).await? else {
                return Ok(None);
            };
            match h.ty {
                frame::HEADERS => return Ok(Some(h)),
                frame::DATA => {
                    return Err(Error::conn(H3_FRAME_UNEXPECTED, "DATA before HEADERS"));
                }
                ty => self.other_frame(ty, h).await?,
            }
        }
    }

    /// A HEADERS payload, decoded; a section over our limit is refused. A
    /// section that needs inserts not received yet waits for them (the
    /// decoder bounds how many streams may wait, a server's head timeout how
    /// long).
    async fn fields(&mut self, h: FrameHeader) -> Result<Vec<quark_qpack::Field>, Error> {
        let limit = self.check_section_len(h)?;
        let Some(q) = &self.conn.qpack else {
            let decoded = self
                .recv
                .payload_with(h.len, |block| quark_qpack::decode_section(block, limit))
                .await?;
            return decoded.map_err(decode_error);
        };
        let id = self.id();
        // A blocked section is copied out of the reader's buffer to wait.
        let decoded = self
            .recv
            .payload_with(h.len, |block| {
                let got = q.decode(id, block, limit);
                got.map(|fields| fields.ok_or_else(|| block.to_vec()))
            })
            .await?;
        let fields = match decoded.map_err(decode_error)? {
            Ok(fields) => fields,
            Err(block) => {
                self.blocked = true;
                // Boxed: a rare wait, whose state would otherwise make every
                // request's future larger (the allocation and the copies of
                // it are paid per request).
                let fields = Box::pin(self.unblock(&block, limit)).await?;
                self.blocked = false;
                fields
            }
        };
        self.head_decoded = true;
        self.conn.defer_decoder_flush();
        Ok(fields)
    }

    /// Our field section size limit; a HEADERS frame longer than it is refused.
    fn check_section_len(&self, h: FrameHeader) -> Result<u64, Error> {
        let limit = self.conn.local.max_field_section_size.unwrap_or(u64::MAX);
        if h.len > limit {
            return Err(Error::stream(
                H3_EXCESSIVE_LOAD,
                "a field section too large",
            ));
        }
        Ok(limit)
    }

    /// Waits for the inserts a blocked field section needs, then decodes it.
    /// Meanwhile the stream is read ahead (bounded), so a reset ends the
    /// wait (and the drop sends Stream Cancellation).
    async fn unblock(
        &mut self,
        block: &[u8],
        limit: u64,
    ) -> Result<Vec<quark_qpack::Field>, Error> {
        let id = self.id();
        let conn = self.conn.clone();
        let Some(q) = &conn.qpack else {
            return Err(Error::Usage("no dynamic table"));
        };
        loop {
            let notified = q.inserted.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Some(fields) = q.decode(id, block, limit).map_err(decode_error)? {
                return Ok(fields);
            }
            if let Some(e) = conn.error() {
                return Err(e);
            }
            tokio::select! {
                _ = notified => {}
                e = conn.quic.closed() => return Err(Error::ConnectionLost(e)),
                r = self.recv.read_ahead(BLOCKED_READ_AHEAD) => r?,
            }
        }
    }

    /// A frame that is neither HEADERS nor DATA on a request stream.
    async fn other_frame(&mut self, ty: u64, h: FrameHeader) -> Result<(), Error> {
        match ty {
            frame::SETTINGS
            | frame::GOAWAY
            | frame::MAX_PUSH_ID
            | frame::CANCEL_PUSH
            | crate::priority::PRIORITY_UPDATE_REQUEST
            | crate::priority::PRIORITY_UPDATE_PUSH => Err(Error::conn(
                H3_FRAME_UNEXPECTED,
                "a control frame on a request stream",
            )),
            // A client never allowed a push (no MAX_PUSH_ID); a server may
            // not receive one at all (RFC 9114 §7.2.5).
            frame::PUSH_PROMISE if self.conn.side == Side::Client => {
                Err(Error::conn(H3_ID_ERROR, "a push we never allowed"))
            }
            frame::PUSH_PROMISE => Err(Error::conn(
                H3_FRAME_UNEXPECTED,
                "PUSH_PROMISE from a client",
            )),
            ty if frame::is_http2_only(ty) => {
                Err(Error::conn(H3_FRAME_UNEXPECTED, "an HTTP/2 frame type"))
            }
            _ => self.recv.skip(h.len).await,
        }
    }

    /// The message head has been read: the body comes next. A message that
    /// cannot have a body (`no_body`: a response to HEAD, a 204 or a 304)
    /// expects none, whatever its content-length says.
    pub(crate) fn start_body(&mut self, headers: &HeaderMap, no_body: bool) -> Result<(), Error> {
        let announced = crate::message::content_length(headers).map_err(|e| self.fail(e))?;
        self.start_body_len(announced, no_body);
        Ok(())
    }

    /// [`start_body`](Self::start_body) with the length already read.
    pub(crate) fn start_body_len(&mut self, announced: Option<u64>, no_body: bool) {
        self.expected = if no_body { Some(0) } else { announced };
        self.state = Recv::Body(0);
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
    /// `Some(bytes)`, or `None` at its end. `f` may be called more than once;
    /// it runs under the endpoint's lock (as quark's `read_visit`), so keep it
    /// short and do not call into quark from it.
    pub async fn recv_data_with(&mut self, f: impl FnMut(&[u8])) -> Result<Option<usize>, Error> {
        let got = self.next_data(f).await;
        got.map_err(|e| self.fail(e))
    }

    async fn next_data(&mut self, mut f: impl FnMut(&[u8])) -> Result<Option<usize>, Error> {
        loop {
            match self.state {
                Recv::Head => return Err(Error::Usage("body read before the head")),
                Recv::Failed(ref e) => return Err(e.clone()),
                Recv::Done => return Ok(None),
                Recv::Body(left) if left > 0 => {
                    let n = self.recv.some_with(left, &mut f).await?;
                    self.state = Recv::Body(left - n as u64);
                    self.received += n as u64;
                    return Ok(Some(n));
                }
                Recv::Body(_) => match self.recv.header().await? {
                    None => {
                        self.end_body()?;
                        return Ok(None);
                    }
                    Some(h) if h.ty == frame::DATA => {
                        // Checked before any of it is handed on.
                        if self.expected.is_some_and(|e| self.received + h.len > e) {
                            return Err(Error::stream(
                                H3_MESSAGE_ERROR,
                                "more body than content-length",
                            ));
                        }
                        self.state = Recv::Body(h.len);
                    }
                    Some(h) if h.ty == frame::HEADERS => {
                        // Boxed, as `unblock` in `fields`: trailers are rare.
                        Box::pin(self.read_trailers(h)).await?;
                        return Ok(None);
                    }
                    Some(h) => self.other_frame(h.ty, h).await?,
                },
            }
        }
    }

    /// Trailing fields end the message: after them only frames of unknown
    /// (or reserved) types may come, and are skipped (RFC 9114 §4.1, §9);
    /// DATA or HEADERS is H3_FRAME_UNEXPECTED.
    async fn read_trailers(&mut self, h: FrameHeader) -> Result<(), Error> {
        let mut fields = self.fields(h).await?;
        let trailers = crate::message::headers(&mut fields)?;
        self.trailers = Some(Box::new(trailers));
        self.end_body()?;
        self.state = Recv::Body(0);
        while let Some(h) = self.recv.header().await? {
            if matches!(h.ty, frame::DATA | frame::HEADERS) {
                return Err(Error::conn(H3_FRAME_UNEXPECTED, "a frame after trailers"));
            }
            self.other_frame(h.ty, h).await?;
        }
        self.state = Recv::Done;
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
        self.trailers.as_deref()
    }
}

/// A field section that does not decode: QPACK_DECOMPRESSION_FAILED on the
/// connection, except one over our size limit (refused on its stream).
fn decode_error(e: quark_qpack::DecodeError) -> Error {
    match e {
        quark_qpack::DecodeError::TooLarge => {
            Error::stream(H3_EXCESSIVE_LOAD, "a field section too large")
        }
        e => Error::conn(e.code(), "a field section that does not decode"),
    }
}
