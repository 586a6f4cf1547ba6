//! The server side: each client-initiated bidirectional stream is a request.

use std::time::Duration;

use http::{Request, Response, StatusCode};
use quark::Connection;
use quark_proto::Side;
use tokio::task::JoinSet;

use crate::config::Config;
use crate::conn::Conn;
use crate::error::*;
use crate::head::{RequestHead, check_regular};
use crate::message::Lines;
use crate::reader::FrameReader;
use crate::request::RequestStream;

/// How long a request's head may take by default.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);

/// A request's head and its stream, or nothing when the stream was dropped.
type Head = Option<(Request<()>, RequestStream)>;

/// An HTTP/3 server on one QUIC connection (ALPN [`ALPN`](crate::ALPN)).
///
/// Two ways to take requests: [`accept`](Self::accept) returns each request
/// with its head read (heads are read in tasks of their own, so a slow client
/// holds up no other request); [`accept_stream`](Self::accept_stream) returns
/// the stream at once, for a caller that reads the head itself
/// ([`RequestStream::recv_request`]) in a task it already has.
pub struct Server {
    conn: Conn,
    heads: JoinSet<Head>,
    /// How long [`accept`](Self::accept) waits for a request's head.
    head_timeout: Duration,
    closed: bool,
}

impl Server {
    /// Starts HTTP/3 on an accepted connection with the default
    /// [`Config`]: opens the control stream (and QPACK's).
    pub async fn new(quic: Connection) -> Result<Server, Error> {
        Server::with_config(quic, &Config::default()).await
    }

    /// [`new`](Self::new) with `config`.
    pub async fn with_config(quic: Connection, config: &Config) -> Result<Server, Error> {
        Ok(Server {
            conn: Conn::start(quic, Side::Server, config).await?,
            heads: JoinSet::new(),
            head_timeout: HEAD_TIMEOUT,
            closed: false,
        })
    }

    /// The next request stream, its head not read yet; `None` once the
    /// connection has ended.
    pub async fn accept_stream(&self) -> Result<Option<RequestStream>, Error> {
        next_stream(&self.conn).await
    }

    /// The next request: its head, and the stream to read its body from and to
    /// answer on. `None` once the connection has ended.
    pub async fn accept(&mut self) -> Result<Option<(Request<()>, RequestStream)>, Error> {
        loop {
            if self.closed && self.heads.is_empty() {
                return match self.conn.error() {
                    Some(e @ Error::Connection { .. }) => Err(e),
                    _ => Ok(None),
                };
            }
            tokio::select! {
                next = next_stream(&self.conn), if !self.closed => match next {
                    Ok(Some(stream)) => {
                        self.heads.spawn(read_head(stream, self.head_timeout));
                    }
                    _ => self.closed = true,
                },
                Some(done) = self.heads.join_next() => {
                    if let Ok(Some(head)) = done {
                        return Ok(Some(head));
                    }
                }
            }
        }
    }

    /// How long [`accept`](Self::accept) waits for a request's head before it
    /// refuses the stream (H3_REQUEST_REJECTED): a client that opens streams and
    /// sends nothing holds no stream credit beyond it. Default 10 s.
    pub fn set_head_timeout(&mut self, limit: Duration) {
        self.head_timeout = limit;
    }

    /// Graceful shutdown: GOAWAY tells the client which requests will be
    /// answered (those accepted so far); it may send no new ones, and any that
    /// arrive anyway are refused with H3_REQUEST_REJECTED (while
    /// [`accept`](Self::accept) is called).
    pub async fn shutdown(&self) -> Result<(), Error> {
        self.conn.goaway().await
    }

    /// Whether GOAWAY went out and no request head is still being read: no
    /// request will come from [`accept`](Self::accept) any more.
    pub fn drained(&self) -> bool {
        self.heads.is_empty() && self.conn.state.lock().unwrap().goaway_sent.is_some()
    }

    /// QPACK dynamic table entries: inserted by our encoder, of those
    /// acknowledged by the peer, and inserted by the peer's encoder (for
    /// tests and measurements).
    #[doc(hidden)]
    pub fn qpack_inserts(&self) -> (u64, u64, u64) {
        self.conn.qpack_inserts()
    }

    /// The QUIC connection.
    pub fn connection(&self) -> &Connection {
        &self.conn.quic
    }
}

/// The next request stream on `conn`, its head unread.
/// Requests on streams at or above our GOAWAY's ID are refused with
/// H3_REQUEST_REJECTED (the client knows they were not processed).
async fn next_stream(conn: &Conn) -> Result<Option<RequestStream>, Error> {
    loop {
        let (mut send, mut recv) = match conn.quic.accept_bi().await {
            Ok(pair) => pair,
            Err(_) => {
                return match conn.error() {
                    Some(e @ Error::Connection { .. }) => Err(e),
                    _ => Ok(None),
                };
            }
        };
        if !conn.admit(send.id().0) {
            let _ = send.reset(H3_REQUEST_REJECTED);
            let _ = recv.stop(H3_REQUEST_REJECTED);
            continue;
        }
        let reader = FrameReader::with_buf(recv, conn.buffers.take());
        return Ok(Some(RequestStream::new(conn.clone(), send, reader)));
    }
}

/// Reads a request's head; a stream that ends before it or breaks the rules is
/// dropped (it was reset as the error required).
async fn read_head(mut stream: RequestStream, limit: Duration) -> Head {
    match tokio::time::timeout(limit, stream.recv_request()).await {
        Ok(req) => Some((req.ok()?, stream)),
        Err(_) => {
            // A head that does not come in time: the request is refused, unprocessed.
            stream.cancel(H3_REQUEST_REJECTED);
            None
        }
    }
}

impl RequestStream {
    /// Reads the request's head (the first HEADERS frame). A malformed one
    /// resets the stream with H3_MESSAGE_ERROR, a stream that ends first with
    /// H3_REQUEST_INCOMPLETE.
    pub async fn recv_request(&mut self) -> Result<Request<()>, Error> {
        let Some(fields) = self.recv_fields().await? else {
            self.cancel(H3_REQUEST_INCOMPLETE);
            return Err(Error::stream(H3_REQUEST_INCOMPLETE, "no request head"));
        };
        let req = match crate::message::decode_request(fields) {
            Ok(req) => req,
            Err(e) => {
                if let Error::Stream { code, .. } = e {
                    self.cancel(code);
                }
                return Err(e);
            }
        };
        if req.method() == http::Method::CONNECT {
            // RFC 9220 §3: :protocol from a client we never offered it to
            // is malformed.
            if req.extensions().get::<crate::Protocol>().is_some()
                && !self.conn.local.enable_connect_protocol
            {
                self.cancel(H3_MESSAGE_ERROR);
                return Err(Error::stream(H3_MESSAGE_ERROR, ":protocol not enabled"));
            }
            self.take_datagrams();
        }
        self.start_body(req.headers(), false)?;
        // RFC 9218 §5, §7: the client's priority orders our response.
        if let Some(p) = self.conn.request_priority(self.id(), req.headers()) {
            self.set_send_priority(p);
        }
        Ok(req)
    }

    /// Reads the request's head as a [`RequestHead`]: the checks of
    /// [`recv_request`](Self::recv_request) (and its stream errors), without
    /// building an `http::Request` (no `Uri`, `HeaderMap` or allocation
    /// per field). For a server that routes on the path and a few fields.
    pub async fn recv_request_head(&mut self) -> Result<RequestHead, Error> {
        let Some(fields) = self.recv_section().await? else {
            self.cancel(H3_REQUEST_INCOMPLETE);
            return Err(Error::stream(H3_REQUEST_INCOMPLETE, "no request head"));
        };
        let head = match RequestHead::parse(fields) {
            Ok(head) => head,
            Err(e) => {
                if let Error::Stream { code, .. } = e {
                    self.cancel(code);
                }
                return Err(e);
            }
        };
        if head.method() == http::Method::CONNECT {
            // RFC 9220 §3, as in `recv_request`.
            if head.protocol().is_some() && !self.conn.local.enable_connect_protocol {
                self.cancel(H3_MESSAGE_ERROR);
                return Err(Error::stream(H3_MESSAGE_ERROR, ":protocol not enabled"));
            }
            self.take_datagrams();
        }
        self.start_body_len(head.content_length(), false);
        // RFC 9218 §5, §7: the client's priority orders our response.
        let field = head.header(crate::priority::PRIORITY.as_bytes());
        if let Some(p) = self.conn.request_priority_field(self.id(), field) {
            self.set_send_priority(p);
        }
        Ok(head)
    }

    /// Sends a response head of `status` and regular `fields` (lowercase
    /// names; e.g. `(b"content-length", b"2048")`), checked as
    /// [`send_response`](Self::send_response) checks a `Response`'s, without
    /// building one.
    pub async fn send_response_fields(
        &mut self,
        status: StatusCode,
        fields: &[(&[u8], &[u8])],
    ) -> Result<(), Error> {
        let section = self.response_section(status, fields)?;
        self.send_headers(section).await?;
        if !status.is_informational() {
            self.status_sent = Some(status);
        }
        Ok(())
    }

    /// A whole response: the head of
    /// [`send_response_fields`](Self::send_response_fields), `body` as one
    /// DATA frame, and the end of the stream, in one write to the stream
    /// (for a small body; `fields` should carry its content-length). A 1xx
    /// status is refused: it cannot end a response.
    pub async fn send_response_with_body(
        &mut self,
        status: StatusCode,
        fields: &[(&[u8], &[u8])],
        body: &[u8],
    ) -> Result<(), Error> {
        if status.is_informational() {
            return Err(Error::Usage("an interim response has no body"));
        }
        let section = self.response_section(status, fields)?;
        self.send_whole(section, body).await?;
        self.status_sent = Some(status);
        Ok(())
    }

    /// The HEADERS frame's section of a response head, checked.
    fn response_section(
        &self,
        status: StatusCode,
        fields: &[(&[u8], &[u8])],
    ) -> Result<crate::frame::FrameBuf, Error> {
        if status == StatusCode::SWITCHING_PROTOCOLS {
            return Err(Error::stream(
                H3_MESSAGE_ERROR,
                "101 does not exist in HTTP/3",
            ));
        }
        let mut lines: Lines = smallvec::smallvec![(&b":status"[..], status.as_str().as_bytes())];
        for &(name, value) in fields {
            check_regular(name, value)?;
            lines.push((name, value));
        }
        crate::message::check_size(&lines, self.conn.peer_field_limit())?;
        let mut section = self.frame_buf();
        self.conn.encode(self.id(), &lines, section.payload());
        Ok(section)
    }

    /// Sends the response's head (then the body with
    /// [`send_data`](Self::send_data), and [`finish`](Self::finish)).
    pub async fn send_response<B>(&mut self, resp: &Response<B>) -> Result<(), Error> {
        let mut section = self.frame_buf();
        let limit = self.conn.peer_field_limit();
        let (id, conn) = (self.id(), &self.conn);
        let mut encode = |f: &[(&[u8], &[u8])], out: &mut Vec<u8>| conn.encode(id, f, out);
        crate::message::encode_response(resp, limit, section.payload(), &mut encode)?;
        self.send_headers(section).await?;
        if !resp.status().is_informational() {
            self.status_sent = Some(resp.status());
        }
        Ok(())
    }
}
