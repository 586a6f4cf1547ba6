//! The TLS 1.3 handshake for QUIC: a thin, typed wrapper over `rustls::quic`.
//!
//! CONTRACT (filled in by the packet/crypto work).

use std::sync::Arc;

use crate::crypto::KeyChange;
use crate::error::TransportError;
use crate::transport_params::TransportParameters;
use crate::types::Side;

/// One endpoint's TLS session.
pub struct TlsSession {
    // implementer's fields (a rustls::quic::Connection)
    _todo: (),
}

/// The ALPN protocol of the connection could not be agreed, the name is invalid,
/// or rustls refused the configuration.
#[derive(Debug, thiserror::Error)]
pub enum TlsSetupError {
    /// rustls rejected the configuration or server name.
    #[error("TLS setup: {0}")]
    Config(String),
}

impl TlsSession {
    /// A client session. `config` must allow TLS 1.3 only and carry the ALPN list.
    pub fn client(
        config: Arc<rustls::ClientConfig>,
        server_name: &str,
        params: &TransportParameters,
    ) -> Result<Self, TlsSetupError> {
        let _ = (config, server_name, params);
        todo!("tls")
    }

    /// A server session.
    pub fn server(
        config: Arc<rustls::ServerConfig>,
        params: &TransportParameters,
    ) -> Result<Self, TlsSetupError> {
        let _ = (config, params);
        todo!("tls")
    }

    /// Feed handshake bytes received in CRYPTO frames (in order). TLS failures map to
    /// CRYPTO_ERROR (0x100 + alert), RFC 9001 §4.8.
    pub fn read_handshake(&mut self, data: &[u8]) -> Result<(), TransportError> {
        let _ = data;
        todo!("tls")
    }

    /// Collect handshake bytes to send at the current write level, and any new keys.
    /// Call repeatedly until it returns `None` and writes nothing.
    pub fn write_handshake(&mut self, buf: &mut Vec<u8>) -> Option<KeyChange> {
        let _ = buf;
        todo!("tls")
    }

    /// True until the handshake completes.
    pub fn is_handshaking(&self) -> bool {
        todo!("tls")
    }

    /// The peer's transport parameters, once received, decoded and validated
    /// (`Ok(None)` before they arrive).
    pub fn peer_params(
        &self,
        our_side: Side,
    ) -> Result<Option<TransportParameters>, TransportError> {
        let _ = our_side;
        todo!("tls")
    }

    /// The negotiated ALPN protocol.
    pub fn alpn(&self) -> Option<&[u8]> {
        todo!("tls")
    }

    /// The server name the client asked for (server side).
    pub fn server_name(&self) -> Option<&str> {
        todo!("tls")
    }

    /// The peer's certificate chain, DER-encoded.
    pub fn peer_certificates(&self) -> Option<&[rustls::pki_types::CertificateDer<'static>]> {
        todo!("tls")
    }

    /// The negotiated TLS cipher suite.
    pub fn cipher_suite(&self) -> Option<rustls::SupportedCipherSuite> {
        todo!("tls")
    }
}
