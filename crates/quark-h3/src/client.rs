//! The client side: requests on new bidirectional streams.

use http::{Request, Response};
use quark::Connection;
use quark_proto::Side;

use crate::config::Config;
use crate::conn::Conn;
use crate::error::*;
use crate::head::{ResponseHead, check_regular};
use crate::message::Lines;
use crate::reader::FrameReader;
use crate::request::RequestStream;

/// An HTTP/3 client on one QUIC connection (ALPN [`ALPN`](crate::ALPN)).
/// Clones share the connection. Close it when done
/// (`client.connection().close(H3_NO_ERROR, ..)`): the task reading the
/// server's control stream keeps it open otherwise, until the idle timeout.
#[derive(Clone)]
pub struct Client {
    conn: Conn,
}

impl Client {
    /// Starts HTTP/3 on an established connection, or on one taken for 0-RTT
    /// (`Connecting::into_0rtt`): opens the control stream. In 0-RTT the
    /// server's SETTINGS are not known yet, so their defaults apply (RFC 9114
    /// §7.2.4.2): no dynamic table until they come.
    pub async fn new(quic: Connection) -> Result<Client, Error> {
        Client::with_config(quic, &Config::default()).await
    }

    /// [`new`](Self::new) with `config`.
    pub async fn with_config(quic: Connection, config: &Config) -> Result<Client, Error> {
        Ok(Client {
            conn: Conn::start(quic, Side::Client, config).await?,
        })
    }

    /// Sends the head of `req` on a new stream; send the body (if any) with
    /// [`RequestStream::send_data`], end it with [`RequestStream::finish`], then
    /// read the answer with [`RequestStream::recv_response`].
    pub async fn send_request<B>(&self, req: &Request<B>) -> Result<RequestStream, Error> {
        self.ready(req.method()).await?;
        // Checked before a stream is opened; encoded once its ID is known
        // (QPACK tracks dynamic references per stream).
        if req.extensions().get::<crate::Protocol>().is_some() && !self.extended_connect() {
            // RFC 9220 §3: only to a server that announced it.
            return Err(Error::Usage("the server did not enable Extended CONNECT"));
        }
        let lines = crate::message::request_lines(req, self.conn.peer_field_limit())?;
        self.open(req.method(), &lines, None).await
    }

    /// Sends a request head on a new stream without building an
    /// `http::Request`: `method` (not CONNECT: that takes
    /// [`send_request`](Self::send_request)), scheme https, `authority`,
    /// `path` (with its query) and regular `fields` (lowercase names, e.g.
    /// `(b"content-length", b"10")`), checked as `send_request` checks a
    /// `Request`'s. Then as after `send_request`.
    pub async fn send_request_fields(
        &self,
        method: &http::Method,
        authority: &str,
        path: &str,
        fields: &[(&[u8], &[u8])],
    ) -> Result<RequestStream, Error> {
        self.request_fields(method, authority, path, fields, None)
            .await
    }

    /// A whole request: the head of
    /// [`send_request_fields`](Self::send_request_fields), `body` as one
    /// DATA frame (none when empty), and the end of the request, in one
    /// write to the stream (for a small body; `fields` should carry its
    /// content-length). Then read the response as after `send_request`.
    pub async fn send_request_with_body(
        &self,
        method: &http::Method,
        authority: &str,
        path: &str,
        fields: &[(&[u8], &[u8])],
        body: &[u8],
    ) -> Result<RequestStream, Error> {
        self.request_fields(method, authority, path, fields, Some(body))
            .await
    }

    /// The head of `send_request_fields`, checked, then sent alone or with
    /// a whole body.
    async fn request_fields(
        &self,
        method: &http::Method,
        authority: &str,
        path: &str,
        fields: &[(&[u8], &[u8])],
        body: Option<&[u8]>,
    ) -> Result<RequestStream, Error> {
        if method == http::Method::CONNECT {
            return Err(Error::Usage("CONNECT goes through send_request"));
        }
        let visible = |s: &str| s.bytes().all(|b| (0x21..0x7f).contains(&b));
        if path.is_empty() || !visible(path) || !visible(authority) {
            return Err(Error::Usage("a bad authority or path"));
        }
        self.ready(method).await?;
        let mut lines: Lines = smallvec::smallvec![
            (&b":method"[..], method.as_str().as_bytes()),
            (&b":scheme"[..], &b"https"[..]),
        ];
        if !authority.is_empty() {
            lines.push((b":authority", authority.as_bytes()));
        }
        lines.push((b":path", path.as_bytes()));
        for &(name, value) in fields {
            check_regular(name, value)?;
            lines.push((name, value));
        }
        crate::message::check_size(&lines, self.conn.peer_field_limit())?;
        self.open(method, &lines, body).await
    }

    /// Whether a request may go now: the connection is up and the server
    /// sent no GOAWAY. On a connection taken before its handshake (0-RTT),
    /// only safe methods go at once (0-RTT can be replayed: RFC 9114 §10.9
    /// points to RFC 8470); the others wait for the handshake.
    async fn ready(&self, method: &http::Method) -> Result<(), Error> {
        if let Some(e) = self.conn.error() {
            return Err(e);
        }
        if self.conn.state.lock().unwrap().goaway.is_some() {
            return Err(Error::GoingAway);
        }
        if !matches!(*method, http::Method::GET | http::Method::HEAD) {
            self.conn.quic.handshake().await?;
        }
        Ok(())
    }

    /// Opens a request stream and sends the head `lines` on it (encoded
    /// once the stream's ID is known: QPACK tracks dynamic references per
    /// stream).
    async fn open(
        &self,
        method: &http::Method,
        lines: &[(&[u8], &[u8])],
        body: Option<&[u8]>,
    ) -> Result<RequestStream, Error> {
        let (send, recv) = self.conn.quic.open_bi().await?;
        let reader = FrameReader::with_buf(recv, self.conn.buffers.take());
        let mut stream = RequestStream::new(self.conn.clone(), send, reader);
        stream.head_request = method == http::Method::HEAD;
        let mut section = stream.frame_buf();
        self.conn.encode(stream.id(), lines, section.payload());
        match body {
            Some(body) => stream.send_whole(section, body).await?,
            None => stream.send_headers(section).await?,
        }
        if method == http::Method::CONNECT {
            stream.take_datagrams();
        }
        Ok(stream)
    }

    /// The stream ID in the server's last GOAWAY (RFC 9114 §5.2): requests on
    /// streams below it may still be answered, none is sent any more (they
    /// fail with [`Error::GoingAway`]), and those at or above it were not
    /// processed (see [`Error::is_retryable`]).
    pub fn goaway_id(&self) -> Option<u64> {
        self.conn.state.lock().unwrap().goaway
    }

    /// QPACK dynamic table entries: inserted by our encoder, of those
    /// acknowledged by the peer, and inserted by the peer's encoder (for
    /// tests and measurements).
    #[doc(hidden)]
    pub fn qpack_inserts(&self) -> (u64, u64, u64) {
        self.conn.qpack_inserts()
    }

    /// Whether the server announced Extended CONNECT (RFC 9220), which a
    /// CONNECT with a [`Protocol`](crate::Protocol) needs; false until its
    /// SETTINGS came (wait with [`peer_settings`](Self::peer_settings)).
    pub fn extended_connect(&self) -> bool {
        let state = self.conn.state.lock().unwrap();
        state
            .peer_settings
            .is_some_and(|s| s.enable_connect_protocol)
    }

    /// Waits for the server's SETTINGS (they come with its first flight);
    /// `None` if the connection ends first.
    pub async fn peer_settings(&self) -> Option<crate::settings::Settings> {
        loop {
            if let Some(s) = self.conn.state.lock().unwrap().peer_settings {
                return Some(s);
            }
            if self.conn.error().is_some() {
                return None;
            }
            tokio::select! {
                _ = tokio::time::sleep(std::time::Duration::from_millis(2)) => {}
                _ = self.conn.quic.closed() => return None,
            }
        }
    }

    /// The QUIC connection.
    pub fn connection(&self) -> &Connection {
        &self.conn.quic
    }
}

impl RequestStream {
    /// The final response's head as a [`ResponseHead`]: the checks of
    /// [`recv_response`](Self::recv_response) (interim responses skipped),
    /// without building an `http::Response`.
    pub async fn recv_response_head(&mut self) -> Result<ResponseHead, Error> {
        loop {
            let Some(fields) = self.recv_section().await? else {
                return Err(Error::stream(H3_REQUEST_INCOMPLETE, "no response"));
            };
            let head = match ResponseHead::parse(fields) {
                Ok(head) => head,
                Err(e) => {
                    self.cancel(H3_MESSAGE_ERROR);
                    return Err(e);
                }
            };
            let status = head.status();
            if status.is_informational() {
                continue;
            }
            // No body after HEAD, 204 or 304, whatever content-length says.
            let no_body = self.head_request || status == 204 || status == 304;
            self.start_body_len(head.content_length(), no_body);
            return Ok(head);
        }
    }

    /// The response's head; interim (1xx) responses are skipped.
    pub async fn recv_response(&mut self) -> Result<Response<()>, Error> {
        loop {
            let Some(mut fields) = self.recv_fields().await? else {
                return Err(Error::stream(H3_REQUEST_INCOMPLETE, "no response"));
            };
            let resp = crate::message::decode_response(&mut fields);
            let resp = match resp {
                Ok(r) => r,
                Err(e) => {
                    self.cancel(H3_MESSAGE_ERROR);
                    return Err(e);
                }
            };
            if resp.status().is_informational() {
                continue;
            }
            // No body after HEAD, 204 or 304, whatever content-length says.
            let status = resp.status();
            let no_body = self.head_request || status == 204 || status == 304;
            self.start_body(resp.headers(), no_body)?;
            return Ok(resp);
        }
    }
}
