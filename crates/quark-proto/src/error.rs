//! Transport error codes and the error that closes a connection.
//!
//= https://www.rfc-editor.org/rfc/rfc9000#section-20.1

use std::fmt;

/// A QUIC transport error code (RFC 9000 §20.1), carried in CONNECTION_CLOSE (0x1c).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct TransportErrorCode(pub u64);

macro_rules! codes {
    ($($name:ident = $value:expr,)*) => {
        impl TransportErrorCode {
            $(
                #[doc = concat!("`", stringify!($name), "` (", stringify!($value), "), RFC 9000 §20.1.")]
                pub const $name: TransportErrorCode = TransportErrorCode($value);
            )*

            /// The RFC's name for this code, if it has one.
            pub fn name(self) -> Option<&'static str> {
                match self.0 {
                    $($value => Some(stringify!($name)),)*
                    0x100..=0x1ff => Some("CRYPTO_ERROR"),
                    _ => None,
                }
            }
        }
    };
}

codes! {
    NO_ERROR = 0x0,
    INTERNAL_ERROR = 0x1,
    CONNECTION_REFUSED = 0x2,
    FLOW_CONTROL_ERROR = 0x3,
    STREAM_LIMIT_ERROR = 0x4,
    STREAM_STATE_ERROR = 0x5,
    FINAL_SIZE_ERROR = 0x6,
    FRAME_ENCODING_ERROR = 0x7,
    TRANSPORT_PARAMETER_ERROR = 0x8,
    CONNECTION_ID_LIMIT_ERROR = 0x9,
    PROTOCOL_VIOLATION = 0xa,
    INVALID_TOKEN = 0xb,
    APPLICATION_ERROR = 0xc,
    CRYPTO_BUFFER_EXCEEDED = 0xd,
    KEY_UPDATE_ERROR = 0xe,
    AEAD_LIMIT_REACHED = 0xf,
    NO_VIABLE_PATH = 0x10,
    VERSION_NEGOTIATION_ERROR = 0x11,
}

impl TransportErrorCode {
    /// CRYPTO_ERROR carrying a TLS alert (RFC 9001 §4.8: 0x100 + alert).
    pub const fn crypto(alert: u8) -> Self {
        TransportErrorCode(0x100 + alert as u64)
    }
}

impl fmt::Debug for TransportErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some("CRYPTO_ERROR") => write!(f, "CRYPTO_ERROR(alert {})", self.0 - 0x100),
            Some(name) => f.write_str(name),
            None => write!(f, "TransportErrorCode({:#x})", self.0),
        }
    }
}

impl fmt::Display for TransportErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// An error that terminates a connection with a CONNECTION_CLOSE of type 0x1c.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TransportError {
    /// What went wrong.
    pub code: TransportErrorCode,
    /// The type of the frame that triggered it, when known.
    pub frame_type: Option<u64>,
    /// A human-readable reason, sent to the peer.
    pub reason: String,
}

impl TransportError {
    /// An error with a reason and no frame type.
    pub fn new(code: TransportErrorCode, reason: impl Into<String>) -> Self {
        TransportError {
            code,
            frame_type: None,
            reason: reason.into(),
        }
    }

    /// Attach the type of the frame that caused the error.
    pub fn with_frame(mut self, frame_type: u64) -> Self {
        self.frame_type = Some(frame_type);
        self
    }
}

macro_rules! constructors {
    ($($fn_name:ident => $code:ident,)*) => {
        impl TransportError {
            $(
                #[doc = concat!("A `", stringify!($code), "` error.")]
                pub fn $fn_name(reason: impl Into<String>) -> Self {
                    Self::new(TransportErrorCode::$code, reason)
                }
            )*
        }
    };
}

constructors! {
    internal => INTERNAL_ERROR,
    flow_control => FLOW_CONTROL_ERROR,
    stream_limit => STREAM_LIMIT_ERROR,
    stream_state => STREAM_STATE_ERROR,
    final_size => FINAL_SIZE_ERROR,
    frame_encoding => FRAME_ENCODING_ERROR,
    transport_parameter => TRANSPORT_PARAMETER_ERROR,
    connection_id_limit => CONNECTION_ID_LIMIT_ERROR,
    protocol_violation => PROTOCOL_VIOLATION,
    invalid_token => INVALID_TOKEN,
    crypto_buffer_exceeded => CRYPTO_BUFFER_EXCEEDED,
    key_update => KEY_UPDATE_ERROR,
    aead_limit_reached => AEAD_LIMIT_REACHED,
}

impl fmt::Display for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.code)?;
        if let Some(ty) = self.frame_type {
            write!(f, " in frame {ty:#x}")?;
        }
        if !self.reason.is_empty() {
            write!(f, ": {}", self.reason)?;
        }
        Ok(())
    }
}

impl std::error::Error for TransportError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_crypto_codes() {
        assert_eq!(
            format!("{:?}", TransportErrorCode::FLOW_CONTROL_ERROR),
            "FLOW_CONTROL_ERROR"
        );
        assert_eq!(
            format!("{:?}", TransportErrorCode::crypto(42)),
            "CRYPTO_ERROR(alert 42)"
        );
        assert_eq!(TransportErrorCode::crypto(0x28).0, 0x128);
        let e = TransportError::frame_encoding("bad ack").with_frame(0x02);
        assert_eq!(e.to_string(), "FRAME_ENCODING_ERROR in frame 0x2: bad ack");
    }
}
