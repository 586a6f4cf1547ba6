//! The control channel's TLS: a fresh self-signed certificate on the agent; the
//! driver accepts any certificate because the token's MACs are bound to the
//! one it saw (see the module above), but still checks the handshake
//! signature, so the peer holds that certificate's key.

use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls::pki_types::PrivateKeyDer;
use rustls::{ClientConfig, ServerConfig};

/// ALPN of the control channel.
const ALPN: &[u8] = b"quark-agent";

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A server configuration with a fresh certificate; returns it and the certificate.
pub(super) fn server() -> anyhow::Result<(Arc<ServerConfig>, Vec<u8>)> {
    let id = crate::adapter::Identity::generate()?;
    let mut c = ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_no_client_auth()
        .with_single_cert(vec![id.cert.clone()], PrivateKeyDer::Pkcs8(id.key))?;
    c.alpn_protocols = vec![ALPN.to_vec()];
    Ok((Arc::new(c), id.cert.to_vec()))
}

/// The driver's configuration.
pub(super) fn client() -> anyhow::Result<Arc<ClientConfig>> {
    let p = provider();
    let mut c = ClientConfig::builder_with_provider(p.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .dangerous()
        .with_custom_certificate_verifier(quark::tls::any_certificate(p))
        // Authenticity comes from the token MAC over this certificate.
        .with_no_client_auth();
    c.alpn_protocols = vec![ALPN.to_vec()];
    Ok(Arc::new(c))
}
