//! quark's errors as h3's: h3 decides from them whether a stream or the whole
//! connection ended, and with which code.

use std::sync::Arc;

use h3::quic::{ConnectionErrorIncoming, StreamErrorIncoming};
use quark::{ConnectionError, ReadError, WriteError};

/// Why the connection ended, as h3 tells it.
pub(crate) fn conn_error(e: ConnectionError) -> ConnectionErrorIncoming {
    match e {
        // The peer's h3 layer closed (RFC 9114 §8.1 codes).
        ConnectionError::ApplicationClosed { code, .. } => {
            ConnectionErrorIncoming::ApplicationClose { error_code: code }
        }
        ConnectionError::TimedOut => ConnectionErrorIncoming::Timeout,
        // Transport errors, stateless resets and local closes mean nothing
        // to h3 but that the connection is gone.
        other => ConnectionErrorIncoming::Undefined(Arc::new(other)),
    }
}

/// A stream operation that failed because the connection ended.
pub(crate) fn stream_conn_error(e: ConnectionError) -> StreamErrorIncoming {
    StreamErrorIncoming::ConnectionErrorIncoming {
        connection_error: conn_error(e),
    }
}

pub(crate) fn read_error(e: ReadError) -> StreamErrorIncoming {
    match e {
        // RESET_STREAM from the peer (RFC 9000 §19.4).
        ReadError::Reset(code) => StreamErrorIncoming::StreamTerminated { error_code: code },
        ReadError::ConnectionLost(e) => stream_conn_error(e),
        other => StreamErrorIncoming::Unknown(Box::new(other)),
    }
}

pub(crate) fn write_error(e: WriteError) -> StreamErrorIncoming {
    match e {
        // STOP_SENDING from the peer (RFC 9000 §19.5).
        WriteError::Stopped(code) => StreamErrorIncoming::StreamTerminated { error_code: code },
        WriteError::ConnectionLost(e) => stream_conn_error(e),
        other => StreamErrorIncoming::Unknown(Box::new(other)),
    }
}
