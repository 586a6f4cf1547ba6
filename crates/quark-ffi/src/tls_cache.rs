//! The TLS configuration a client endpoint's connections share: a
//! `quark_connect_on` with the same TLS arguments as the one before reuses
//! its configuration instead of building one (reading and parsing the CA
//! file, a root store, a session cache), and with it the session tickets
//! the server sent, so later handshakes resume (RFC 8446 section 2.2) as
//! those of one quark `ClientConfig` do. `QUARK_FLAG_NO_RESUMPTION` keeps
//! the sharing but turns resumption off.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;
use quark::ClientConfig;

use crate::error::QuarkError;

/// The TLS arguments of a connect call, with the CA file's contents (read
/// at each call, so a changed file is honoured).
#[derive(PartialEq, Eq)]
pub(crate) struct TlsArgs {
    pub(crate) insecure: bool,
    pub(crate) ca_pem: Option<Vec<u8>>,
    pub(crate) alpn: String,
    pub(crate) ciphers: String,
}

/// One endpoint's last client configuration (one entry: bounded).
#[derive(Default)]
pub(crate) struct TlsCache {
    last: Mutex<Option<(TlsArgs, ClientConfig)>>,
    no_resumption: AtomicBool,
}

impl TlsCache {
    /// `QUARK_FLAG_NO_RESUMPTION`: every handshake a full one.
    pub(crate) fn disable_resumption(&self) {
        self.no_resumption.store(true, Ordering::Relaxed);
    }

    /// The configuration for `args`: the last one if they are the same,
    /// else one `make` builds (kept for the next call).
    pub(crate) fn get(
        &self,
        args: TlsArgs,
        make: impl FnOnce(&TlsArgs) -> Result<ClientConfig, QuarkError>,
    ) -> Result<ClientConfig, QuarkError> {
        if let Some((a, config)) = &*self.last.lock()
            && *a == args
        {
            return Ok(config.clone());
        }
        let mut config = make(&args)?;
        if self.no_resumption.load(Ordering::Relaxed) {
            Arc::make_mut(&mut config.tls).resumption = rustls::client::Resumption::disabled();
        }
        *self.last.lock() = Some((args, config.clone()));
        Ok(config)
    }
}
