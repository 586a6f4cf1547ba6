//! The TLS configuration a client endpoint's connections share: a
//! `quark_connect_on` with the same TLS arguments as the one before reuses
//! its configuration instead of building one (reading and parsing the CA
//! file, a root store, a session cache), and with it the session tickets
//! the server sent, so later handshakes resume (RFC 8446 section 2.2) as
//! those of one quark `ClientConfig` do. `QUARK_FLAG_NO_RESUMPTION` keeps
//! the sharing but turns resumption off.
//!
//! The CA file is not read again while its stamp (device, inode, size,
//! modification and change times: one `statx`) is that of the file the
//! configuration was made from. Reading it cost an `openat`, `statx`,
//! `read` and `close` per connect, and on short connections those system
//! calls were a few per cent of quic-c's CPU against `quic`. As with git's
//! index, a stamp taken soon after the file's last change is not trusted,
//! since a second write within the same clock tick could keep it: "soon" is
//! 50 ms (the kernel's coarse file clock ticks every 1-10 ms), or a second
//! on a file system whose times have no fraction of a second.

use std::os::unix::fs::MetadataExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

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

/// What identifies one version of a file without reading it.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct FileStamp {
    path: String,
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl FileStamp {
    /// The stamp of `path` now, if it can be trusted to change with the
    /// contents: the file's last change is old enough (module doc).
    pub(crate) fn of(path: &str) -> Option<FileStamp> {
        let m = std::fs::metadata(path).ok()?;
        let changed = m.modified().ok()?.max(
            SystemTime::UNIX_EPOCH
                + Duration::new(
                    u64::try_from(m.ctime()).ok()?,
                    u32::try_from(m.ctime_nsec()).ok()?,
                ),
        );
        let coarse = m.mtime_nsec() == 0 && m.ctime_nsec() == 0;
        let settled = if coarse {
            Duration::from_secs(1)
        } else {
            Duration::from_millis(50)
        };
        if SystemTime::now().duration_since(changed).ok()? < settled {
            return None;
        }
        Some(FileStamp {
            path: path.into(),
            dev: m.dev(),
            ino: m.ino(),
            size: m.size(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
        })
    }
}

/// A configuration and what it was made from.
struct Entry {
    args: TlsArgs,
    /// The CA file's stamp when its contents were read (if trusted).
    stamp: Option<FileStamp>,
    config: ClientConfig,
}

/// One endpoint's last client configuration (one entry: bounded).
#[derive(Default)]
pub(crate) struct TlsCache {
    last: Mutex<Option<Entry>>,
    no_resumption: AtomicBool,
    no_spin_bit: AtomicBool,
}

impl TlsCache {
    /// `QUARK_FLAG_NO_RESUMPTION`: every handshake a full one.
    pub(crate) fn disable_resumption(&self) {
        self.no_resumption.store(true, Ordering::Relaxed);
    }

    /// `QUARK_FLAG_NO_SPIN_BIT`: the connections never spin.
    pub(crate) fn disable_spin_bit(&self) {
        self.no_spin_bit.store(true, Ordering::Relaxed);
    }

    /// The last configuration, if it was made with these arguments from
    /// the CA file that `stamp` describes: no need to read the file.
    pub(crate) fn unchanged(
        &self,
        alpn: &str,
        ciphers: &str,
        stamp: &FileStamp,
    ) -> Option<ClientConfig> {
        let last = self.last.lock();
        let e = last.as_ref()?;
        (e.stamp.as_ref() == Some(stamp)
            && !e.args.insecure
            && e.args.alpn == alpn
            && e.args.ciphers == ciphers)
            .then(|| e.config.clone())
    }

    /// The configuration for `args` (the CA file's contents read under
    /// `stamp`): the last one if they are the same, else one `make` builds
    /// (kept for the next call).
    pub(crate) fn get(
        &self,
        args: TlsArgs,
        stamp: Option<FileStamp>,
        make: impl FnOnce(&TlsArgs) -> Result<ClientConfig, QuarkError>,
    ) -> Result<ClientConfig, QuarkError> {
        if let Some(e) = &mut *self.last.lock()
            && e.args == args
        {
            e.stamp = stamp;
            return Ok(e.config.clone());
        }
        let mut config = make(&args)?;
        if self.no_resumption.load(Ordering::Relaxed) {
            Arc::make_mut(&mut config.tls).resumption = rustls::client::Resumption::disabled();
        }
        if self.no_spin_bit.load(Ordering::Relaxed) {
            Arc::make_mut(&mut config.transport).spin_bit = false;
        }
        *self.last.lock() = Some(Entry {
            args,
            stamp,
            config: config.clone(),
        });
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args() -> TlsArgs {
        TlsArgs {
            insecure: true,
            ca_pem: None,
            alpn: "hq-interop".into(),
            ciphers: String::new(),
        }
    }

    fn make(_: &TlsArgs) -> Result<ClientConfig, QuarkError> {
        quark::tls::client_config_with(quark::tls::Verify::Insecure, &[b"hq-interop"], &[])
            .map_err(|_| QuarkError::Tls)
    }

    /// `QUARK_FLAG_NO_SPIN_BIT` on an endpoint reaches the configuration of
    /// every connection it makes; without it they may spin.
    #[test]
    fn the_spin_flag_reaches_the_transport() {
        let cache = TlsCache::default();
        assert!(cache.get(args(), None, make).unwrap().transport.spin_bit);
        let cache = TlsCache::default();
        cache.disable_spin_bit();
        assert!(!cache.get(args(), None, make).unwrap().transport.spin_bit);
    }
}
