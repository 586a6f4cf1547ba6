//! Starting `quark serve --h3`'s TCP listener beside the QUIC endpoint.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use quark::tls::{self, Identity};
use quark_h3::files::FileOptions;

use crate::access_log::AccessLog;
use crate::serve::ServeArgs;

/// What `--h3`'s TCP listener is made from.
pub(crate) struct TcpSide<'a> {
    pub(crate) identity: &'a Identity,
    pub(crate) suites: &'a [rustls::SupportedCipherSuite],
    pub(crate) root: &'a Path,
    pub(crate) options: &'a FileOptions,
    pub(crate) log: Option<&'a AccessLog>,
    pub(crate) args: &'a ServeArgs,
}

/// Stops the TCP listener when dropped (connections it took end with the process).
pub(crate) struct Stop(tokio::task::JoinHandle<()>);

impl Drop for Stop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl TcpSide<'_> {
    /// With `--h3` (and not `--no-tcp`): HTTP/1.1 and HTTP/2 over TLS on
    /// TCP at `quic`'s address and port, advertising HTTP/3 there.
    pub(crate) async fn start(self, quic: SocketAddr) -> anyhow::Result<Option<Stop>> {
        if !self.args.h3 || self.args.no_tcp {
            return Ok(None);
        }
        let mut tls = rustls::ServerConfig::builder_with_provider(tls::provider(self.suites))
            .with_protocol_versions(&[&rustls::version::TLS13])?
            .with_no_client_auth()
            .with_single_cert(self.identity.chain.clone(), self.identity.key.clone_key())?;
        tls.alpn_protocols = super::ALPN.iter().map(|a| a.to_vec()).collect();
        let listener = tokio::net::TcpListener::bind(quic)
            .await
            .with_context(|| format!("cannot listen on TCP {quic} (--no-tcp turns it off)"))?;
        eprintln!("serving HTTP/1.1 and HTTP/2 on TCP {quic}");
        let files = super::TcpFiles {
            root: self.root.to_path_buf(),
            options: self.options.clone(),
            alt_svc: super::alt_svc(quic.port()),
            log: self.log.cloned(),
            tls: tokio_rustls::TlsAcceptor::from(Arc::new(tls)),
            max_connections: self.args.tcp_max_connections as usize,
            head_timeout: Duration::from_secs(self.args.tcp_head_timeout),
            idle_timeout: Duration::from_secs(self.args.tcp_idle_timeout),
        };
        Ok(Some(Stop(tokio::spawn(super::serve(
            listener,
            Arc::new(files),
        )))))
    }
}
