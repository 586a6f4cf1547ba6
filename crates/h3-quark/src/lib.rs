//! hyperium [`h3`]'s QUIC traits on quark, so h3's client and server (and the
//! hyper-based stacks built on them) run over quark's streams.
//!
//! Wrap an established [`quark::Connection`] in [`Connection::new`] and hand
//! it to `h3::client::new` or `h3::server::Connection::new`. Errors keep
//! their meaning: a peer's RESET_STREAM or STOP_SENDING becomes
//! [`StreamErrorIncoming::StreamTerminated`] with the peer's code, an
//! application CONNECTION_CLOSE becomes
//! [`ConnectionErrorIncoming::ApplicationClose`], the idle timeout
//! [`ConnectionErrorIncoming::Timeout`].

#![warn(missing_docs)]

mod error;
mod stream;

use std::task::{Context, Poll};

use bytes::Buf;
use h3::quic::{self, ConnectionErrorIncoming, StreamErrorIncoming};

pub use stream::{BidiStream, RecvStream, SendStream};

use error::{conn_error, stream_conn_error};

/// A quark connection seen through h3's `Connection` trait.
#[derive(Clone, Debug)]
pub struct Connection {
    conn: quark::Connection,
    opener: OpenStreams,
}

impl Connection {
    /// Wraps an established (or 0-RTT) quark connection.
    pub fn new(conn: quark::Connection) -> Self {
        let opener = OpenStreams { conn: conn.clone() };
        Connection { conn, opener }
    }

    /// The quark connection underneath (for its stats, address, close).
    pub fn inner(&self) -> &quark::Connection {
        &self.conn
    }
}

impl<B: Buf> quic::Connection<B> for Connection {
    type RecvStream = RecvStream;
    type OpenStreams = OpenStreams;

    fn poll_accept_recv(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<RecvStream, ConnectionErrorIncoming>> {
        self.conn
            .poll_accept_uni(cx)
            .map(|r| r.map(RecvStream::new).map_err(conn_error))
    }

    fn poll_accept_bidi(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<BidiStream<B>, ConnectionErrorIncoming>> {
        self.conn
            .poll_accept_bi(cx)
            .map(|r| r.map(BidiStream::new).map_err(conn_error))
    }

    fn opener(&self) -> OpenStreams {
        self.opener.clone()
    }
}

impl<B: Buf> quic::OpenStreams<B> for Connection {
    type BidiStream = BidiStream<B>;
    type SendStream = SendStream<B>;

    fn poll_open_bidi(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<BidiStream<B>, StreamErrorIncoming>> {
        self.opener.poll_open_bidi(cx)
    }

    fn poll_open_send(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<SendStream<B>, StreamErrorIncoming>> {
        <OpenStreams as quic::OpenStreams<B>>::poll_open_send(&mut self.opener, cx)
    }

    fn close(&mut self, code: h3::error::Code, reason: &[u8]) {
        self.conn.close(code.value(), reason);
    }
}

/// Opens streams on a connection (h3's `OpenStreams`; a client's
/// `SendRequest` holds one).
#[derive(Clone, Debug)]
pub struct OpenStreams {
    conn: quark::Connection,
}

impl<B: Buf> quic::OpenStreams<B> for OpenStreams {
    type BidiStream = BidiStream<B>;
    type SendStream = SendStream<B>;

    fn poll_open_bidi(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<BidiStream<B>, StreamErrorIncoming>> {
        self.conn
            .poll_open_bi(cx)
            .map(|r| r.map(BidiStream::new).map_err(stream_conn_error))
    }

    fn poll_open_send(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<SendStream<B>, StreamErrorIncoming>> {
        self.conn
            .poll_open_uni(cx)
            .map(|r| r.map(SendStream::new).map_err(stream_conn_error))
    }

    fn close(&mut self, code: h3::error::Code, reason: &[u8]) {
        self.conn.close(code.value(), reason);
    }
}
