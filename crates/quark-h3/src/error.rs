//! HTTP/3 error codes (RFC 9114 §8.1) and the errors of this crate's API.

use quark::ConnectionError;

/// No error: graceful close.
pub const H3_NO_ERROR: u64 = 0x100;
/// A protocol error without a more specific code.
pub const H3_GENERAL_PROTOCOL_ERROR: u64 = 0x101;
/// An internal error.
pub const H3_INTERNAL_ERROR: u64 = 0x102;
/// A stream the peer may not create, or a second critical stream.
pub const H3_STREAM_CREATION_ERROR: u64 = 0x103;
/// A control or QPACK stream was closed.
pub const H3_CLOSED_CRITICAL_STREAM: u64 = 0x104;
/// A frame not permitted where it came.
pub const H3_FRAME_UNEXPECTED: u64 = 0x105;
/// A frame that does not parse.
pub const H3_FRAME_ERROR: u64 = 0x106;
/// The peer makes us do too much work.
pub const H3_EXCESSIVE_LOAD: u64 = 0x107;
/// A stream or push ID used wrongly.
pub const H3_ID_ERROR: u64 = 0x108;
/// A SETTINGS frame that is wrong.
pub const H3_SETTINGS_ERROR: u64 = 0x109;
/// No SETTINGS frame at the start of the control stream.
pub const H3_MISSING_SETTINGS: u64 = 0x10a;
/// The server did not process the request.
pub const H3_REQUEST_REJECTED: u64 = 0x10b;
/// The request or its response is cancelled.
pub const H3_REQUEST_CANCELLED: u64 = 0x10c;
/// The stream ended before the message was complete.
pub const H3_REQUEST_INCOMPLETE: u64 = 0x10d;
/// A malformed message (RFC 9114 §4.1.2).
pub const H3_MESSAGE_ERROR: u64 = 0x10e;
/// A malformed HTTP Datagram (RFC 9297 §2.1).
pub const H3_DATAGRAM_ERROR: u64 = 0x33;

/// What went wrong.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    /// We closed the connection with this HTTP/3 (or QPACK) error code.
    #[error("HTTP/3 connection error {code:#x}: {reason}")]
    Connection {
        /// The error code sent in CONNECTION_CLOSE.
        code: u64,
        /// Why.
        reason: &'static str,
    },
    /// A request stream failed with this error code: received, it was reset
    /// (or stopped) with it; before sending, nothing went out.
    #[error("HTTP/3 stream error {code:#x}: {reason}")]
    Stream {
        /// The error code sent in RESET_STREAM / STOP_SENDING.
        code: u64,
        /// Why.
        reason: &'static str,
    },
    /// The peer reset the stream.
    #[error("stream reset by the peer with code {0:#x}")]
    Reset(u64),
    /// The peer asked us to stop sending.
    #[error("stopped by the peer with code {0:#x}")]
    Stopped(u64),
    /// The peer sent GOAWAY: no new requests on this connection.
    #[error("the peer is going away")]
    GoingAway,
    /// A message head larger than the peer accepts (its
    /// SETTINGS_MAX_FIELD_SECTION_SIZE); nothing was sent.
    #[error("field section of {size} bytes, the peer accepts {limit}")]
    FieldSectionTooLarge {
        /// Its size (names, values and 32 bytes per field).
        size: u64,
        /// The peer's limit.
        limit: u64,
    },
    /// The API was used out of order (e.g. a body read before its head).
    #[error("misuse: {0}")]
    Usage(&'static str),
    /// The QUIC connection ended.
    #[error("connection lost: {0}")]
    ConnectionLost(ConnectionError),
}

impl Error {
    /// A connection error with `code`.
    pub(crate) fn conn(code: u64, reason: &'static str) -> Self {
        Error::Connection { code, reason }
    }

    /// Whether the request was not processed by the server and may be sent
    /// again on another connection (RFC 9114 §5.2, §8.1): refused before it
    /// went out as the server is going away, or rejected by the server
    /// (H3_REQUEST_REJECTED, as for a stream at or above its GOAWAY's ID).
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Error::GoingAway
                | Error::Reset(H3_REQUEST_REJECTED)
                | Error::Stopped(H3_REQUEST_REJECTED)
                | Error::Stream {
                    code: H3_REQUEST_REJECTED,
                    ..
                }
        )
    }

    /// A stream error with `code`.
    pub(crate) fn stream(code: u64, reason: &'static str) -> Self {
        Error::Stream { code, reason }
    }
}

impl From<quark::ReadError> for Error {
    fn from(e: quark::ReadError) -> Self {
        match e {
            quark::ReadError::Reset(code) => Error::Reset(code),
            quark::ReadError::ConnectionLost(e) => Error::ConnectionLost(e),
            quark::ReadError::Stopped | quark::ReadError::TooLong(_) => {
                Error::stream(H3_REQUEST_CANCELLED, "the stream was stopped")
            }
        }
    }
}

impl From<quark::WriteError> for Error {
    fn from(e: quark::WriteError) -> Self {
        match e {
            quark::WriteError::Stopped(code) => Error::Stopped(code),
            quark::WriteError::ConnectionLost(e) => Error::ConnectionLost(e),
            quark::WriteError::ClosedStream => {
                Error::stream(H3_INTERNAL_ERROR, "write on a closed stream")
            }
        }
    }
}

impl From<ConnectionError> for Error {
    fn from(e: ConnectionError) -> Self {
        Error::ConnectionLost(e)
    }
}
