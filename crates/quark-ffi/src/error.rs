//! Error codes returned to C: always negative, `0` or a handle means success.

use std::ffi::c_char;

use quark::{ConnectionError, ReadError, WriteError};

/// Why a call failed. Every call returns one of these (all negative) on
/// failure, so `ret < 0` is the test for an error.
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QuarkError {
    /// A null pointer, a string that is not UTF-8, an address that does not parse.
    Inval = -1,
    /// The handle is unknown, already closed, or from an earlier use of its slot.
    BadHandle = -2,
    /// The handle is of another kind than the call needs (a stream for a connection, ...).
    WrongKind = -3,
    /// The certificate, key or TLS settings could not be loaded or used.
    Tls = -4,
    /// A socket call failed (bind, address in use, ...).
    Io = -5,
    /// The handshake failed or the peer refused the connection.
    Connect = -6,
    /// The connection or endpoint is closed (by either side, or timed out).
    Closed = -7,
    /// The peer reset the stream (RESET_STREAM).
    Reset = -8,
    /// The peer asked us to stop sending on the stream (STOP_SENDING).
    Stopped = -9,
    /// Writing after `quark_stream_shutdown`, or on a receive-only stream.
    Shutdown = -10,
    /// Too many open handles.
    Limit = -11,
    /// A bug inside the library: a panic, caught before it reached the caller.
    Internal = -12,
    /// Non-blocking mode: the call would have to wait (like EAGAIN); retry later.
    Again = -13,
    /// Nothing listens at the address: an ICMP port unreachable ended the
    /// handshake (like ECONNREFUSED).
    Refused = -14,
    /// The address's host or network cannot be reached: an ICMP error ended
    /// the handshake (like EHOSTUNREACH).
    Unreachable = -15,
}

impl QuarkError {
    /// A static, NUL-terminated description.
    pub(crate) fn message(self) -> &'static [u8] {
        match self {
            Self::Inval => b"invalid argument\0",
            Self::BadHandle => b"bad handle (unknown, closed or stale)\0",
            Self::WrongKind => b"handle of the wrong kind for this call\0",
            Self::Tls => b"TLS configuration error (certificate, key or settings)\0",
            Self::Io => b"socket error\0",
            Self::Connect => b"connection failed during the handshake\0",
            Self::Closed => b"connection or endpoint closed\0",
            Self::Reset => b"stream reset by the peer\0",
            Self::Stopped => b"peer stopped the stream (STOP_SENDING)\0",
            Self::Shutdown => b"stream already shut down for writing\0",
            Self::Limit => b"too many open handles\0",
            Self::Internal => b"internal error (caught panic)\0",
            Self::Again => b"operation would block; try again\0",
            Self::Refused => b"connection refused: nothing listens at the address (ICMP)\0",
            Self::Unreachable => b"host or network unreachable (ICMP)\0",
        }
    }

    fn from_code(code: i32) -> Option<Self> {
        const ALL: [QuarkError; 15] = [
            QuarkError::Inval,
            QuarkError::BadHandle,
            QuarkError::WrongKind,
            QuarkError::Tls,
            QuarkError::Io,
            QuarkError::Connect,
            QuarkError::Closed,
            QuarkError::Reset,
            QuarkError::Stopped,
            QuarkError::Shutdown,
            QuarkError::Limit,
            QuarkError::Internal,
            QuarkError::Again,
            QuarkError::Refused,
            QuarkError::Unreachable,
        ];
        ALL.into_iter().find(|e| *e as i32 == code)
    }
}

impl QuarkError {
    /// Why a handshake failed: refused or unreachable when an ICMP error
    /// said so, else `Connect`.
    pub(crate) fn handshake(e: &ConnectionError) -> Self {
        match e {
            ConnectionError::Unreachable { port_closed: true } => QuarkError::Refused,
            ConnectionError::Unreachable { port_closed: false } => QuarkError::Unreachable,
            _ => QuarkError::Connect,
        }
    }
}

impl From<quark::ConnectFirstError> for QuarkError {
    fn from(e: quark::ConnectFirstError) -> Self {
        match e {
            quark::ConnectFirstError::Failed { error, .. } => QuarkError::handshake(&error),
            _ => QuarkError::Connect,
        }
    }
}

impl From<ConnectionError> for QuarkError {
    fn from(_: ConnectionError) -> Self {
        QuarkError::Closed
    }
}

impl From<ReadError> for QuarkError {
    fn from(e: ReadError) -> Self {
        match e {
            ReadError::Reset(_) => QuarkError::Reset,
            ReadError::Stopped => QuarkError::Shutdown,
            ReadError::ConnectionLost(_) => QuarkError::Closed,
            ReadError::TooLong(_) => QuarkError::Inval,
        }
    }
}

impl From<WriteError> for QuarkError {
    fn from(e: WriteError) -> Self {
        match e {
            WriteError::Stopped(_) => QuarkError::Stopped,
            WriteError::ClosedStream => QuarkError::Shutdown,
            WriteError::ConnectionLost(_) => QuarkError::Closed,
        }
    }
}

/// A static description of `code` (`0` is "success"; unknown codes get a
/// generic text). Never NULL; the caller must not free it.
///
/// Thread safety: safe from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn quark_strerror(code: i32) -> *const c_char {
    let text: &'static [u8] = if code >= 0 {
        b"success\0"
    } else {
        QuarkError::from_code(code).map_or(b"unknown error\0", QuarkError::message)
    };
    text.as_ptr().cast()
}
