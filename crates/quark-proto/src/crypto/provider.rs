//! Which crypto library protects packets and runs the handshake: ring (the
//! default) or aws-lc-rs (cargo feature `aws-lc-rs`).
//!
//! Packet protection is rustls' QUIC packet keys, so the library is the
//! rustls provider the TLS configurations are built with. The choice is one
//! per process: [`set_crypto`], else the `QUARK_CRYPTO` environment variable
//! (`ring` or `aws-lc-rs`), else ring. Picked by measurement (issue #30).

use std::sync::OnceLock;

use rustls::crypto::CryptoProvider;

/// Environment variable that picks the library when [`set_crypto`] was not called.
pub const CRYPTO_ENV: &str = "QUARK_CRYPTO";

/// A crypto library for TLS and packet protection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Crypto {
    /// ring.
    Ring,
    /// aws-lc-rs (needs the `aws-lc-rs` cargo feature).
    AwsLc,
}

impl Crypto {
    /// `ring` or `aws-lc-rs`.
    pub fn name(self) -> &'static str {
        match self {
            Crypto::Ring => "ring",
            Crypto::AwsLc => "aws-lc-rs",
        }
    }

    /// Parses a name; `Err` says why (unknown, or not compiled in).
    pub fn parse(s: &str) -> Result<Crypto, String> {
        let c = match s.to_ascii_lowercase().as_str() {
            "ring" => Crypto::Ring,
            "aws-lc-rs" | "aws-lc" | "awslc" | "aws_lc_rs" => Crypto::AwsLc,
            other => {
                return Err(format!(
                    "unknown crypto library '{other}' (ring, aws-lc-rs)"
                ));
            }
        };
        if !c.available() {
            return Err(format!(
                "{} is not compiled in (cargo feature aws-lc-rs)",
                c.name()
            ));
        }
        Ok(c)
    }

    /// Whether this build has the library.
    pub fn available(self) -> bool {
        match self {
            Crypto::Ring => true,
            Crypto::AwsLc => cfg!(feature = "aws-lc-rs"),
        }
    }

    /// The library's rustls provider: TLS 1.3 suites, AES-128-GCM first,
    /// and the key exchange groups ring has (aws-lc-rs would otherwise lead
    /// with the post-quantum hybrid, a larger ClientHello: not what is compared).
    pub fn provider(self) -> CryptoProvider {
        let mut p = match self {
            #[cfg(feature = "aws-lc-rs")]
            Crypto::AwsLc => {
                use rustls::crypto::aws_lc_rs::kx_group;
                let mut p = rustls::crypto::aws_lc_rs::default_provider();
                p.kx_groups = vec![kx_group::X25519, kx_group::SECP256R1, kx_group::SECP384R1];
                p
            }
            _ => rustls::crypto::ring::default_provider(),
        };
        p.cipher_suites.retain(|s| s.tls13().is_some());
        p.cipher_suites
            .sort_by_key(|s| s.suite() != rustls::CipherSuite::TLS13_AES_128_GCM_SHA256);
        p
    }
}

static CHOICE: OnceLock<Crypto> = OnceLock::new();

/// Picks the library for this process; the first call (or first use) wins.
/// Returns the library in force.
pub fn set_crypto(c: Crypto) -> Crypto {
    *CHOICE.get_or_init(|| c)
}

/// The library in force: [`set_crypto`]'s, else `QUARK_CRYPTO`'s (an unknown
/// or missing one falls back to ring with a warning), else ring.
pub fn crypto() -> Crypto {
    *CHOICE.get_or_init(|| match std::env::var(CRYPTO_ENV) {
        Ok(v) => Crypto::parse(&v).unwrap_or_else(|why| {
            tracing::warn!("{CRYPTO_ENV}: {why}; using ring");
            Crypto::Ring
        }),
        Err(_) => Crypto::Ring,
    })
}

/// The provider of the library in force ([`Crypto::provider`]).
pub fn provider() -> CryptoProvider {
    crypto().provider()
}

/// The suite of the library in force with the id of `suite` (which may come
/// from another provider); `suite` itself if the library lacks it.
pub fn same_suite(suite: rustls::SupportedCipherSuite) -> rustls::SupportedCipherSuite {
    provider()
        .cipher_suites
        .into_iter()
        .find(|s| s.suite() == suite.suite())
        .unwrap_or(suite)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_providers_lead_with_aes128() {
        assert_eq!(Crypto::parse("ring"), Ok(Crypto::Ring));
        assert!(Crypto::parse("openssl").is_err());
        assert_eq!(
            Crypto::parse("aws-lc-rs").is_ok(),
            cfg!(feature = "aws-lc-rs")
        );
        for c in [Crypto::Ring, Crypto::AwsLc] {
            if !c.available() {
                continue;
            }
            let p = c.provider();
            assert_eq!(
                p.cipher_suites[0].suite(),
                rustls::CipherSuite::TLS13_AES_128_GCM_SHA256
            );
            assert!(p.cipher_suites.iter().all(|s| s.tls13().is_some()));
            assert_eq!(p.cipher_suites.len(), 3, "{}", c.name());
        }
    }
}
