//! A self-signed certificate for `localhost`, made fresh for each case.

use std::path::{Path, PathBuf};

/// PEM files of a self-signed certificate and its key. Every client trusts
/// the certificate itself (`--ca` = `cert`).
#[derive(Debug, Clone)]
pub struct Certs {
    /// The certificate (PEM); also the clients' trust anchor.
    pub cert: PathBuf,
    /// The private key (PEM, PKCS#8).
    pub key: PathBuf,
}

impl Certs {
    /// Generates `cert.pem` and `key.pem` in `dir` for `localhost` (and
    /// 127.0.0.1 / ::1, and 10.77.0.1: the server side of the AF_XDP bed).
    pub fn generate(dir: &Path) -> anyhow::Result<Certs> {
        let names = ["localhost", "127.0.0.1", "::1", "10.77.0.1"]
            .map(String::from)
            .to_vec();
        let certified = rcgen::generate_simple_self_signed(names)?;
        let certs = Certs {
            cert: dir.join("cert.pem"),
            key: dir.join("key.pem"),
        };
        std::fs::write(&certs.cert, certified.cert.pem())?;
        std::fs::write(&certs.key, certified.signing_key.serialize_pem())?;
        Ok(certs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generates_pem_files_rustls_accepts() {
        use rustls_pki_types::pem::PemObject;
        let dir = std::env::temp_dir().join(format!("quark-interop-certs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let certs = Certs::generate(&dir).unwrap();
        let cert = rustls_pki_types::CertificateDer::from_pem_file(&certs.cert).unwrap();
        let mut roots = rustls::RootCertStore::empty();
        roots.add(cert).unwrap();
        assert!(rustls_pki_types::PrivateKeyDer::from_pem_file(&certs.key).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
