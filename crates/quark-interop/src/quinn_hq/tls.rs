//! TLS 1.3 configuration for the quinn peer: cipher-suite choice, PEM
//! loading, and the QUIC client/server configs.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::{Context, anyhow};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, ring};
use rustls::{DigitallySignedStruct, SignatureScheme};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};

/// The ALPN of HTTP/0.9 over QUIC.
pub const ALPN: &[u8] = b"hq-interop";

/// A TLS 1.3 cipher suite, by the names every peer's `--cipher` takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum Cipher {
    /// TLS_AES_128_GCM_SHA256
    Aes128,
    /// TLS_AES_256_GCM_SHA384
    Aes256,
    /// TLS_CHACHA20_POLY1305_SHA256
    Chacha20,
}

impl Cipher {
    /// Every suite.
    pub const ALL: [Cipher; 3] = [Cipher::Aes128, Cipher::Aes256, Cipher::Chacha20];

    /// The `--cipher` argument naming this suite.
    pub fn arg(self) -> &'static str {
        match self {
            Self::Aes128 => "aes128",
            Self::Aes256 => "aes256",
            Self::Chacha20 => "chacha20",
        }
    }

    /// The part of the IANA name that identifies the suite in any peer's log
    /// (`TLS_AES_128_GCM_SHA256`, rustls's `TLS13_AES_128_GCM_SHA256`, ...).
    pub fn marker(self) -> &'static str {
        match self {
            Self::Aes128 => "AES_128_GCM",
            Self::Aes256 => "AES_256_GCM",
            Self::Chacha20 => "CHACHA20_POLY1305",
        }
    }

    fn suite(self) -> rustls::SupportedCipherSuite {
        match self {
            Self::Aes128 => ring::cipher_suite::TLS13_AES_128_GCM_SHA256,
            Self::Aes256 => ring::cipher_suite::TLS13_AES_256_GCM_SHA384,
            Self::Chacha20 => ring::cipher_suite::TLS13_CHACHA20_POLY1305_SHA256,
        }
    }
}

/// The ring provider, limited to `ciphers` (all TLS 1.3 suites when empty).
fn provider(ciphers: &[Cipher]) -> Arc<CryptoProvider> {
    let mut provider = ring::default_provider();
    if !ciphers.is_empty() {
        provider.cipher_suites = ciphers.iter().map(|c| c.suite()).collect();
    }
    Arc::new(provider)
}

//= https://www.rfc-editor.org/rfc/rfc9001#section-5
//# Initial packets use AEAD_AES_128_GCM with keys derived from the
//# Destination Connection ID field of the first Initial packet sent by
//# the client; see Section 5.2.
// That holds whatever suite the handshake picks, so quinn is given the
// Initial suite apart from the negotiable ones (which may exclude it).
fn initial_suite() -> anyhow::Result<rustls::quic::Suite> {
    ring::cipher_suite::TLS13_AES_128_GCM_SHA256
        .tls13()
        .and_then(|s| s.quic_suite())
        .ok_or_else(|| anyhow!("ring has no QUIC AES-128-GCM suite"))
}

/// Transport settings sized for bulk transfers on loopback.
fn transport(server: bool) -> Arc<quinn::TransportConfig> {
    let mut t = quinn::TransportConfig::default();
    t.max_idle_timeout(Some(quinn::VarInt::from_u32(30_000).into()))
        .stream_receive_window(quinn::VarInt::from_u32(16 << 20))
        .receive_window(quinn::VarInt::from_u32(64 << 20))
        .send_window(64 << 20)
        .keep_alive_interval(Some(Duration::from_secs(5)));
    if server {
        t.max_concurrent_bidi_streams(quinn::VarInt::from_u32(1000))
            .max_concurrent_uni_streams(0u8.into());
    }
    Arc::new(t)
}

/// A server config from PEM files; with `zero_rtt`, its session tickets
/// allow early data (quinn takes all of it or none).
pub fn server_config(
    cert: &Path,
    key: &Path,
    ciphers: &[Cipher],
    zero_rtt: bool,
) -> anyhow::Result<quinn::ServerConfig> {
    let chain = CertificateDer::pem_file_iter(cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .with_context(|| format!("--cert {}", cert.display()))?;
    let key =
        PrivateKeyDer::from_pem_file(key).with_context(|| format!("--key {}", key.display()))?;
    let mut tls = rustls::ServerConfig::builder_with_provider(provider(ciphers))
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_no_client_auth()
        .with_single_cert(chain, key)?;
    tls.alpn_protocols = vec![ALPN.to_vec()];
    if zero_rtt {
        tls.max_early_data_size = u32::MAX;
    }
    let crypto =
        quinn::crypto::rustls::QuicServerConfig::with_initial(Arc::new(tls), initial_suite()?)?;
    let mut config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    config.transport_config(transport(true));
    Ok(config)
}

/// How the client checks the server's certificate.
pub enum Verify<'a> {
    /// Trust the certificates in this PEM file.
    CaFile(&'a Path),
    /// Accept any certificate (signatures are still checked).
    Insecure,
}

/// A client config (sending early data when a ticket allows it), and the
/// count of server certificates it has checked: a resumed TLS 1.3
/// handshake carries none, which is how the client tells it resumed (quinn
/// does not say).
pub fn client_config(
    verify: Verify<'_>,
    ciphers: &[Cipher],
) -> anyhow::Result<(quinn::ClientConfig, Arc<Counted>)> {
    let provider = provider(ciphers);
    let roots = match verify {
        Verify::CaFile(path) => {
            let mut roots = rustls::RootCertStore::empty();
            for cert in CertificateDer::pem_file_iter(path)
                .with_context(|| format!("--ca {}", path.display()))?
            {
                roots.add(cert.with_context(|| format!("--ca {}", path.display()))?)?;
            }
            let verifier = rustls::client::WebPkiServerVerifier::builder_with_provider(
                Arc::new(roots),
                provider.clone(),
            );
            Some(verifier.build()?)
        }
        Verify::Insecure => None,
    };
    let counted = Arc::new(Counted {
        roots,
        provider: provider.clone(),
        checks: AtomicUsize::new(0),
    });
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .dangerous()
        .with_custom_certificate_verifier(counted.clone())
        .with_no_client_auth();
    tls.alpn_protocols = vec![ALPN.to_vec()];
    tls.enable_early_data = true;
    let crypto =
        quinn::crypto::rustls::QuicClientConfig::with_initial(Arc::new(tls), initial_suite()?)?;
    let mut config = quinn::ClientConfig::new(Arc::new(crypto));
    config.transport_config(transport(false));
    Ok((config, counted))
}

/// Checks the server's certificate against the `--ca` roots, or with
/// `--insecure` accepts any (the handshake signature is checked either
/// way), and counts the certificates it checks.
#[derive(Debug)]
pub struct Counted {
    /// `None`: `--insecure`.
    roots: Option<Arc<rustls::client::WebPkiServerVerifier>>,
    provider: Arc<CryptoProvider>,
    checks: AtomicUsize,
}

impl Counted {
    /// Server certificates checked so far.
    pub fn checks(&self) -> usize {
        self.checks.load(Ordering::SeqCst)
    }
}

impl ServerCertVerifier for Counted {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.checks.fetch_add(1, Ordering::SeqCst);
        match &self.roots {
            Some(roots) => {
                roots.verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
            }
            None => Ok(ServerCertVerified::assertion()),
        }
    }

    fn verify_tls12_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Err(rustls::Error::PeerIncompatible(
            rustls::PeerIncompatible::Tls12NotOffered,
        ))
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}
