//! TLS material for the adapters: a self-signed certificate and rustls
//! configurations restricted to one TLS 1.3 cipher suite.

use std::sync::Arc;

use rustls::crypto::{CryptoProvider, ring};
use rustls::{ClientConfig, RootCertStore, ServerConfig, SupportedCipherSuite};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use serde::{Deserialize, Serialize};

/// The TLS 1.3 cipher suite every TLS-based adapter is restricted to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Cipher {
    /// TLS_AES_128_GCM_SHA256 (the default, like the papers' setups).
    #[default]
    #[serde(rename = "aes128gcm")]
    Aes128Gcm,
    /// TLS_AES_256_GCM_SHA384.
    #[serde(rename = "aes256gcm")]
    Aes256Gcm,
    /// TLS_CHACHA20_POLY1305_SHA256.
    #[serde(rename = "chacha20")]
    Chacha20,
}

impl Cipher {
    /// All accepted names, for help texts.
    pub const NAMES: &'static [&'static str] = &["aes128gcm", "aes256gcm", "chacha20"];

    /// Parses `aes128gcm`, `aes256gcm` or `chacha20`.
    pub fn parse(s: &str) -> Option<Cipher> {
        match s.to_ascii_lowercase().as_str() {
            "aes128gcm" | "aes-128-gcm" => Some(Cipher::Aes128Gcm),
            "aes256gcm" | "aes-256-gcm" => Some(Cipher::Aes256Gcm),
            "chacha20" | "chacha20-poly1305" => Some(Cipher::Chacha20),
            _ => None,
        }
    }

    /// The name [`Cipher::parse`] accepts.
    pub fn name(self) -> &'static str {
        match self {
            Cipher::Aes128Gcm => "aes128gcm",
            Cipher::Aes256Gcm => "aes256gcm",
            Cipher::Chacha20 => "chacha20",
        }
    }

    fn suite(self) -> SupportedCipherSuite {
        match self {
            Cipher::Aes128Gcm => ring::cipher_suite::TLS13_AES_128_GCM_SHA256,
            Cipher::Aes256Gcm => ring::cipher_suite::TLS13_AES_256_GCM_SHA384,
            Cipher::Chacha20 => ring::cipher_suite::TLS13_CHACHA20_POLY1305_SHA256,
        }
    }

    /// A provider offering only this suite, of the crypto library quark
    /// uses (`QUARK_CRYPTO`, [`quark::tls::crypto`]): the TLS baselines get
    /// the same choice as quark.
    pub fn provider(self) -> Arc<CryptoProvider> {
        quark::tls::provider(&[self.suite()])
    }
}

/// The server certificate's key type (`quark bench --cert-key`): what the
/// server signs with and the client verifies in every full handshake.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CertKey {
    /// ECDSA P-256 with SHA-256 (rcgen's default, and the lab's until now).
    #[default]
    EcdsaP256,
    /// Ed25519.
    Ed25519,
    /// RSA 2048 (PKCS#1 v1.5 certificate signature; TLS 1.3 signs with PSS).
    Rsa2048,
}

impl CertKey {
    /// All accepted names, for help texts.
    pub const NAMES: &'static [&'static str] = &["ecdsa", "ed25519", "rsa"];

    /// Parses `ecdsa`, `ed25519` or `rsa`.
    pub fn parse(s: &str) -> Option<CertKey> {
        match s.to_ascii_lowercase().as_str() {
            "ecdsa" | "p256" | "ecdsa-p256" => Some(CertKey::EcdsaP256),
            "ed25519" => Some(CertKey::Ed25519),
            "rsa" | "rsa2048" | "rsa-2048" => Some(CertKey::Rsa2048),
            _ => None,
        }
    }

    /// The name [`CertKey::parse`] accepts.
    pub fn name(self) -> &'static str {
        match self {
            CertKey::EcdsaP256 => "ecdsa",
            CertKey::Ed25519 => "ed25519",
            CertKey::Rsa2048 => "rsa",
        }
    }

    /// A fresh key pair of this type. ring cannot generate RSA keys, so RSA
    /// comes from the `openssl` command (lab machines have it).
    fn key_pair(self) -> anyhow::Result<rcgen::KeyPair> {
        Ok(match self {
            CertKey::EcdsaP256 => rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)?,
            CertKey::Ed25519 => rcgen::KeyPair::generate_for(&rcgen::PKCS_ED25519)?,
            CertKey::Rsa2048 => {
                // PEM output is PKCS#8 (its DER output is PKCS#1).
                let out = std::process::Command::new("openssl")
                    .args(["genpkey", "-algorithm", "RSA"])
                    .args(["-pkeyopt", "rsa_keygen_bits:2048"])
                    .output()
                    .map_err(|e| anyhow::anyhow!("--cert-key rsa needs openssl: {e}"))?;
                anyhow::ensure!(out.status.success(), "openssl genpkey failed");
                rcgen::KeyPair::from_pkcs8_pem_and_sign_algo(
                    std::str::from_utf8(&out.stdout)?,
                    &rcgen::PKCS_RSA_SHA256,
                )?
            }
        })
    }
}

/// Whether TLS configurations made here resume sessions (`quark bench
/// --resumption off`: every connection a full handshake). Unset: on, rustls's
/// defaults (the server issues tickets, the client keeps them).
static RESUMPTION: std::sync::OnceLock<bool> = std::sync::OnceLock::new();

/// Turns session resumption on or off for this process's TLS configurations.
pub fn set_resumption(on: bool) {
    let _ = RESUMPTION.set(on);
}

pub(crate) fn resumption() -> bool {
    RESUMPTION.get().copied().unwrap_or(true)
}

/// A server certificate and its key (DER), valid for `localhost` and 127.0.0.1.
pub struct Identity {
    /// The certificate, which clients trust directly.
    pub cert: CertificateDer<'static>,
    /// The PKCS#8 private key.
    pub key: PrivatePkcs8KeyDer<'static>,
}

impl Clone for Identity {
    fn clone(&self) -> Self {
        Identity {
            cert: self.cert.clone(),
            key: self.key.clone_key(),
        }
    }
}

impl std::fmt::Debug for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Identity")
            .field("cert_len", &self.cert.len())
            .finish_non_exhaustive()
    }
}

/// The name clients ask for and the certificate covers.
pub const SERVER_NAME: &str = "localhost";

impl Identity {
    /// Generates a fresh self-signed ECDSA P-256 certificate.
    pub fn generate() -> anyhow::Result<Identity> {
        Identity::generate_with(CertKey::EcdsaP256)
    }

    /// Generates a fresh self-signed certificate with a `key` key.
    pub fn generate_with(key: CertKey) -> anyhow::Result<Identity> {
        let names = vec![SERVER_NAME.into(), "127.0.0.1".into(), "::1".into()];
        let pair = key.key_pair()?;
        let cert = rcgen::CertificateParams::new(names)?.self_signed(&pair)?;
        Ok(Identity {
            cert: cert.der().clone(),
            key: PrivatePkcs8KeyDer::from(pair.serialize_der()),
        })
    }

    /// Reads a certificate and key written by [`Identity::save`].
    pub fn load(cert: &std::path::Path, key: &std::path::Path) -> anyhow::Result<Identity> {
        Ok(Identity {
            cert: CertificateDer::from(std::fs::read(cert)?),
            key: PrivatePkcs8KeyDer::from(std::fs::read(key)?),
        })
    }

    /// Writes the certificate and key as DER files.
    pub fn save(&self, cert: &std::path::Path, key: &std::path::Path) -> anyhow::Result<()> {
        std::fs::write(cert, self.cert.as_ref())?;
        std::fs::write(key, self.key.secret_pkcs8_der())?;
        Ok(())
    }

    /// A TLS 1.3 server configuration offering `alpn`.
    pub fn server_config(&self, cipher: Cipher, alpn: &[&[u8]]) -> anyhow::Result<ServerConfig> {
        let mut c = ServerConfig::builder_with_provider(cipher.provider())
            .with_protocol_versions(&[&rustls::version::TLS13])?
            .with_no_client_auth()
            .with_single_cert(
                vec![self.cert.clone()],
                PrivateKeyDer::Pkcs8(self.key.clone_key()),
            )?;
        c.alpn_protocols = alpn.iter().map(|a| a.to_vec()).collect();
        if !resumption() {
            c.send_tls13_tickets = 0;
            c.session_storage = Arc::new(rustls::server::NoServerSessionStorage {});
        }
        Ok(c)
    }
}

/// A TLS 1.3 client configuration trusting only `cert` and offering `alpn`.
pub fn client_config(
    cert: &CertificateDer<'static>,
    cipher: Cipher,
    alpn: &[&[u8]],
) -> anyhow::Result<ClientConfig> {
    let mut roots = RootCertStore::empty();
    roots.add(cert.clone())?;
    let mut c = ClientConfig::builder_with_provider(cipher.provider())
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_root_certificates(roots)
        .with_no_client_auth();
    c.alpn_protocols = alpn.iter().map(|a| a.to_vec()).collect();
    if !resumption() {
        c.resumption = rustls::client::Resumption::disabled();
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ciphers_parse_and_restrict_provider() {
        for name in Cipher::NAMES {
            let c = Cipher::parse(name).unwrap();
            assert_eq!(c.name(), *name);
            assert_eq!(c.provider().cipher_suites.len(), 1);
        }
        assert_eq!(Cipher::parse("rc4"), None);
    }

    #[test]
    fn identity_round_trips_through_files() {
        let id = Identity::generate().unwrap();
        let dir = std::env::temp_dir().join(format!("quark-lab-tls-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        id.save(&dir.join("c"), &dir.join("k")).unwrap();
        let back = Identity::load(&dir.join("c"), &dir.join("k")).unwrap();
        assert_eq!(back.cert, id.cert);
        std::fs::remove_dir_all(&dir).unwrap();
        id.server_config(Cipher::Aes128Gcm, &[b"h2"]).unwrap();
        client_config(&id.cert, Cipher::Chacha20, &[]).unwrap();
    }

    #[test]
    fn every_cert_key_makes_a_working_identity() {
        for name in CertKey::NAMES {
            let k = CertKey::parse(name).unwrap();
            assert_eq!(k.name(), *name);
            // RSA keys come from the openssl command: skipped where it is
            // missing, unless QUARK_REQUIRE_OPENSSL=1 (CI installs it).
            if k == CertKey::Rsa2048
                && std::process::Command::new("openssl").output().is_err()
                && std::env::var("QUARK_REQUIRE_OPENSSL").is_err()
            {
                continue;
            }
            let id = Identity::generate_with(k).unwrap();
            id.server_config(Cipher::Aes128Gcm, &[b"h2"]).unwrap();
            client_config(&id.cert, Cipher::Aes128Gcm, &[]).unwrap();
        }
        assert_eq!(CertKey::parse("dsa"), None);
    }
}
