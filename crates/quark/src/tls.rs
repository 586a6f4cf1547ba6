//! Certificates and TLS configurations for quark endpoints: a self-signed
//! identity or one loaded from PEM files, server certificate verification against
//! a CA file (or, explicitly, none), cipher-suite selection, ALPN.

use std::path::Path;
use std::sync::Arc;

use quark_proto::{ClientConfig, ServerConfig};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme, SupportedCipherSuite};

/// Errors building TLS configurations.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file could not be read or parsed.
    #[error("{path}: {reason}")]
    File {
        /// The file.
        path: String,
        /// What went wrong.
        reason: String,
    },
    /// Certificate generation failed.
    #[error("certificate generation: {0}")]
    Generate(String),
    /// rustls refused the configuration.
    #[error("TLS configuration: {0}")]
    Config(#[from] rustls::Error),
    /// An unknown cipher suite name.
    #[error("unknown cipher suite '{0}' (expected aes128, aes256 or chacha20)")]
    Suite(String),
}

/// A certificate chain and its private key.
pub struct Identity {
    /// The end-entity certificate (first of the chain).
    pub cert: CertificateDer<'static>,
    /// The whole chain.
    pub chain: Vec<CertificateDer<'static>>,
    /// The private key.
    pub key: PrivateKeyDer<'static>,
}

impl Identity {
    /// A fresh self-signed certificate for `names`.
    pub fn self_signed(names: &[&str]) -> Result<Self, TlsError> {
        let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        let ck = rcgen::generate_simple_self_signed(names)
            .map_err(|e| TlsError::Generate(e.to_string()))?;
        let cert = ck.cert.der().clone();
        let key =
            rustls::pki_types::PrivatePkcs8KeyDer::from(ck.signing_key.serialize_der()).into();
        Ok(Identity {
            chain: vec![cert.clone()],
            cert,
            key,
        })
    }

    /// Load a PEM certificate chain and private key.
    pub fn from_pem_files(cert: &Path, key: &Path) -> Result<Self, TlsError> {
        let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
            .map_err(|e| file_error(cert, e))?
            .collect::<Result<_, _>>()
            .map_err(|e| file_error(cert, e))?;
        let first = chain.first().cloned().ok_or_else(|| TlsError::File {
            path: cert.display().to_string(),
            reason: "no certificate found".into(),
        })?;
        let key = PrivateKeyDer::from_pem_file(key).map_err(|e| file_error(key, e))?;
        Ok(Identity {
            cert: first,
            chain,
            key,
        })
    }

    /// SHA-256 fingerprint of the certificate, as colon-separated hex.
    pub fn fingerprint(&self) -> String {
        fingerprint(&self.cert)
    }

    /// The certificate in PEM form (to hand to clients as a CA file).
    pub fn cert_pem(&self) -> String {
        pem_encode("CERTIFICATE", &self.cert)
    }

    /// The private key in PEM form (PKCS#8 as made by [`Identity::self_signed`]),
    /// e.g. for a launcher to hand one identity to several server processes.
    /// Keep it secret: write it only to files only the server can read.
    pub fn key_pem(&self) -> String {
        let label = match &self.key {
            PrivateKeyDer::Pkcs1(_) => "RSA PRIVATE KEY",
            PrivateKeyDer::Sec1(_) => "EC PRIVATE KEY",
            _ => "PRIVATE KEY",
        };
        pem_encode(label, self.key.secret_der())
    }
}

fn file_error(path: &Path, e: impl std::fmt::Display) -> TlsError {
    TlsError::File {
        path: path.display().to_string(),
        reason: e.to_string(),
    }
}

/// SHA-256 fingerprint of a DER certificate.
pub fn fingerprint(cert: &CertificateDer<'_>) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, cert);
    digest
        .as_ref()
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join(":")
}

fn pem_encode(label: &str, der: &[u8]) -> String {
    // Base64 by hand is not crypto; it keeps the dependency list short.
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut b64 = String::new();
    for chunk in der.chunks(3) {
        let n =
            chunk.iter().fold(0u32, |acc, &b| (acc << 8) | u32::from(b)) << (8 * (3 - chunk.len()));
        for i in 0..4 {
            if i <= chunk.len() {
                b64.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                b64.push('=');
            }
        }
    }
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).expect("ascii"));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

pub use quark_proto::crypto::provider::{CRYPTO_ENV, Crypto, crypto, set_crypto};

/// The TLS 1.3 cipher suite names quark accepts on the command line (the
/// suite of the crypto library in force, [`crypto`]).
pub fn cipher_suite(name: &str) -> Result<SupportedCipherSuite, TlsError> {
    use rustls::crypto::ring::cipher_suite as cs;
    let suite = match name.to_ascii_lowercase().as_str() {
        "aes128" | "aes-128-gcm" | "tls13_aes_128_gcm_sha256" => cs::TLS13_AES_128_GCM_SHA256,
        "aes256" | "aes-256-gcm" | "tls13_aes_256_gcm_sha384" => cs::TLS13_AES_256_GCM_SHA384,
        "chacha20" | "chacha20-poly1305" | "tls13_chacha20_poly1305_sha256" => {
            cs::TLS13_CHACHA20_POLY1305_SHA256
        }
        other => return Err(TlsError::Suite(other.to_string())),
    };
    Ok(quark_proto::crypto::provider::same_suite(suite))
}

/// The provider of the crypto library in force ([`crypto`]: ring unless
/// chosen otherwise), restricted to `suites` (all TLS 1.3 suites, AES-128-GCM
/// first, when empty). Suites of another library are mapped to this one's.
pub fn provider(suites: &[SupportedCipherSuite]) -> Arc<CryptoProvider> {
    let mut p = quark_proto::crypto::provider::provider();
    if !suites.is_empty() {
        p.cipher_suites = suites
            .iter()
            .map(|s| quark_proto::crypto::provider::same_suite(*s))
            .collect();
    }
    Arc::new(p)
}

/// A server configuration presenting `identity` and offering `alpn`.
pub fn server_config(identity: &Identity, alpn: &[&[u8]]) -> Result<ServerConfig, TlsError> {
    server_config_with(identity, alpn, &[])
}

/// As [`server_config`], restricted to `suites`.
pub fn server_config_with(
    identity: &Identity,
    alpn: &[&[u8]],
    suites: &[SupportedCipherSuite],
) -> Result<ServerConfig, TlsError> {
    let mut tls = rustls::ServerConfig::builder_with_provider(provider(suites))
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_no_client_auth()
        .with_single_cert(identity.chain.clone(), identity.key.clone_key())?;
    tls.alpn_protocols = alpn.iter().map(|a| a.to_vec()).collect();
    tls.max_early_data_size = 0;
    if let Some(log) = key_log() {
        tls.key_log = log;
    }
    Ok(ServerConfig::new(Arc::new(tls)))
}

/// With `SSLKEYLOGFILE` set, TLS secrets are appended to that file in the
/// NSS key log format, so Wireshark can decrypt captured QUIC packets.
/// Never set it in production: anyone who reads the file reads the traffic.
fn key_log() -> Option<Arc<dyn rustls::KeyLog>> {
    std::env::var_os("SSLKEYLOGFILE").map(|_| Arc::new(rustls::KeyLogFile::new()) as _)
}

/// How a client checks the server's certificate.
pub enum Verify {
    /// Trust these certificates as roots.
    Roots(Vec<CertificateDer<'static>>),
    /// Trust the certificates in this PEM file.
    CaFile(std::path::PathBuf),
    /// Accept any certificate (`--insecure`): the handshake signature is still
    /// checked, but not who signed the certificate. For tests and benchmarks only.
    Insecure,
}

/// A client configuration offering `alpn`.
pub fn client_config(verify: Verify, alpn: &[&[u8]]) -> Result<ClientConfig, TlsError> {
    client_config_with(verify, alpn, &[])
}

/// As [`client_config`], restricted to `suites`.
pub fn client_config_with(
    verify: Verify,
    alpn: &[&[u8]],
    suites: &[SupportedCipherSuite],
) -> Result<ClientConfig, TlsError> {
    let provider = provider(suites);
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])?;
    let mut tls = match verify {
        Verify::Insecure => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
            .with_no_client_auth(),
        Verify::Roots(certs) => builder
            .with_root_certificates(roots(certs)?)
            .with_no_client_auth(),
        Verify::CaFile(path) => {
            let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&path)
                .map_err(|e| file_error(&path, e))?
                .collect::<Result<_, _>>()
                .map_err(|e| file_error(&path, e))?;
            if certs.is_empty() {
                return Err(TlsError::File {
                    path: path.display().to_string(),
                    reason: "no certificate found".into(),
                });
            }
            builder
                .with_root_certificates(roots(certs)?)
                .with_no_client_auth()
        }
    };
    tls.alpn_protocols = alpn.iter().map(|a| a.to_vec()).collect();
    if let Some(log) = key_log() {
        tls.key_log = log;
    }
    Ok(ClientConfig::new(Arc::new(tls)))
}

fn roots(certs: Vec<CertificateDer<'static>>) -> Result<rustls::RootCertStore, TlsError> {
    let mut store = rustls::RootCertStore::empty();
    for cert in certs {
        store.add(cert)?;
    }
    Ok(store)
}

/// A verifier that accepts any server certificate but still checks the
/// handshake signature (what [`Verify::Insecure`] uses), for callers that
/// authenticate the server some other way: the lab's agents prove a shared
/// token with a MAC over the certificate.
pub fn any_certificate(provider: Arc<CryptoProvider>) -> Arc<dyn ServerCertVerifier> {
    Arc::new(AnyCertificate(provider))
}

/// Accepts any server certificate while still verifying the handshake signature.
#[derive(Debug)]
struct AnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
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
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pem_round_trip() {
        let id = Identity::self_signed(&["localhost"]).unwrap();
        let pem = id.cert_pem();
        let parsed = CertificateDer::from_pem_slice(pem.as_bytes()).unwrap();
        assert_eq!(parsed, id.cert);
        assert_eq!(id.fingerprint().len(), 32 * 3 - 1);
    }

    #[test]
    fn suite_names() {
        assert!(cipher_suite("aes128").is_ok());
        assert!(cipher_suite("CHACHA20").is_ok());
        assert!(matches!(cipher_suite("rc4"), Err(TlsError::Suite(_))));
    }
}
