//! `h3-on-quark`: hyperium's `h3` over quark through `h3-quark`, the same h3
//! client and server code as `h3-quinn` (shared with it) on quark's streams.
//! Beside `h3` (quark-h3) it shows what h3's own HTTP/3 layer costs on quark,
//! beside `h3-quinn` what the QUIC stack underneath it does.

use std::sync::Arc;

use super::h3::H3_UNI_STREAMS;
use super::h3_quinn::{h3_connect, serve_h3};
use super::quic::{QuarkEndpoints, breakdown, quark_client_config, serve_quark, server_config};
use super::tls::SERVER_NAME;
use super::{
    Adapter, BoxFuture, Client, ClientConfig, Connection, CpuCounters, ServeConfig, Server,
    ServerStats,
};

/// The h3-over-quark adapter.
#[derive(Debug)]
pub struct H3OnQuark;

async fn serve_connection(conn: quark::Connection, stats: Arc<ServerStats>) {
    serve_h3(h3_quark::Connection::new(conn), &stats).await;
}

impl Adapter for H3OnQuark {
    fn name(&self) -> &'static str {
        "h3-on-quark"
    }

    fn about(&self) -> &'static str {
        "hyperium h3 0.0.8 HTTP/3 over quark (h3-quark)"
    }

    fn busy_poll(&self, window: std::time::Duration) -> bool {
        super::quic::Quic.busy_poll(window)
    }

    fn own_workers(&self) -> bool {
        true
    }

    fn serve(&self, cfg: ServeConfig) -> BoxFuture<'static, anyhow::Result<Box<dyn Server>>> {
        Box::pin(async move {
            let config = server_config(&cfg, b"h3", H3_UNI_STREAMS.into())?;
            serve_quark(cfg, config, serve_connection)
        })
    }

    fn client(&self, cfg: ClientConfig) -> BoxFuture<'static, anyhow::Result<Arc<dyn Client>>> {
        Box::pin(async move {
            let config = quark_client_config(&cfg.cert, cfg.cipher, b"h3", H3_UNI_STREAMS.into())?;
            let base = format!("https://{SERVER_NAME}:{}", cfg.server.port());
            let endpoints = QuarkEndpoints::new(&cfg, config)?;
            Ok(Arc::new(H3OnQuarkClient { endpoints, base }) as Arc<dyn Client>)
        })
    }
}

struct H3OnQuarkClient {
    endpoints: QuarkEndpoints,
    base: String,
}

impl Client for H3OnQuarkClient {
    fn connect(&self) -> BoxFuture<'_, anyhow::Result<Arc<dyn Connection>>> {
        Box::pin(async move {
            let conn = self.endpoints.connect().await?;
            let quic = conn.clone();
            // H3_NO_ERROR (RFC 9114 §8.1).
            let close = move || quic.close(0x100, b"done");
            h3_connect(h3_quark::Connection::new(conn), close, &self.base).await
        })
    }

    fn wait_idle(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.endpoints.wait_idle())
    }

    fn cpu_counters(&self) -> Option<CpuCounters> {
        Some(breakdown())
    }
}
