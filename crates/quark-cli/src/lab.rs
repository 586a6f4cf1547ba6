//! `quark lab-server` and `quark lab-client`: the processes `quark bench` drives;
//! `quark lab-cert` makes the identity they need when run by hand.

use std::path::PathBuf;

/// Runs a lab server; returns the exit code.
pub(crate) fn server(args: quark_lab::child::ServerArgs) -> i32 {
    quark_lab::child::run_server(args)
}

/// Runs a lab client; returns the exit code.
pub(crate) fn client(args: quark_lab::child::ClientArgs) -> i32 {
    quark_lab::child::run_client(args)
}

/// Where `lab-cert` writes.
#[derive(Debug, clap::Args)]
pub(crate) struct CertArgs {
    /// Certificate file to write (DER).
    #[arg(long)]
    cert: PathBuf,
    /// Private key file to write (PKCS#8 DER).
    #[arg(long)]
    key: PathBuf,
    /// Key type: ecdsa (P-256, default), ed25519 or rsa (2048).
    #[arg(long, default_value = "ecdsa")]
    cert_key: String,
}

/// Writes a fresh self-signed lab identity; returns the exit code.
pub(crate) fn cert(args: CertArgs) -> i32 {
    use quark_lab::adapter::{CertKey, Identity};
    let made = CertKey::parse(&args.cert_key)
        .ok_or_else(|| anyhow::anyhow!("unknown --cert-key '{}'", args.cert_key))
        .and_then(Identity::generate_with)
        .and_then(|id| id.save(&args.cert, &args.key));
    match made {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("error: {e:#}");
            1
        }
    }
}
