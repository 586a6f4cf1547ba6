//! `s2n-quic`: hq-interop over AWS's s2n-quic stack, a second QUIC stack to
//! measure quark against beside quinn.
//!
//! Run at its defaults (its own MTU probing, CUBIC, GSO/GRO I/O), as quinn is,
//! with one difference that keeps the comparison about the transport: TLS is
//! rustls with ring restricted to the lab's cipher suite (`provider-tls-rustls`
//! with our own rustls configurations), so every QUIC stack in the lab runs
//! the same AEAD code. Streams are read and written as shared `Bytes` chunks,
//! s2n-quic's zero-copy interface.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use anyhow::Context;
use bytes::Bytes;
use s2n_quic::client::Connect;
use s2n_quic::provider::limits::Limits;
use s2n_quic::stream::{ReceiveStream, SendStream};
use tokio::task::JoinHandle;

use super::hq::{self, ALPN, ReadChunks, SendPattern};
use super::tls::{SERVER_NAME, client_config};
use super::{
    Adapter, BoxFuture, Client, ClientConfig, Connection, Request, ServeConfig, Server, ServerStats,
};
use crate::wire::pattern_chunks;

/// Concurrent bidirectional streams a peer may open, as for quinn.
const MAX_STREAMS: u64 = 1024;

/// The s2n-quic adapter.
#[derive(Debug)]
pub struct S2n;

impl SendPattern for SendStream {
    async fn send(&mut self, head: &[u8], len: u64) -> anyhow::Result<()> {
        SendStream::send(self, Bytes::copy_from_slice(head)).await?;
        for chunk in pattern_chunks(len) {
            SendStream::send(self, chunk).await?;
        }
        self.finish()?;
        Ok(())
    }
}

impl ReadChunks for ReceiveStream {
    async fn read_with<F: FnMut(&[u8]) + Send>(&mut self, mut f: F) -> anyhow::Result<bool> {
        match self.receive().await? {
            Some(chunk) => {
                f(&chunk);
                Ok(true)
            }
            None => Ok(false),
        }
    }
}

fn limits() -> anyhow::Result<Limits> {
    Limits::new()
        .with_max_open_local_bidirectional_streams(MAX_STREAMS)
        .and_then(|l| l.with_max_open_remote_bidirectional_streams(MAX_STREAMS))
        .context("s2n-quic stream limit")
}

struct S2nServer {
    addr: SocketAddr,
    task: JoinHandle<()>,
}

impl Server for S2nServer {
    fn local_addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for S2nServer {
    fn drop(&mut self) {
        // The accept loop owns the server; ending it closes the endpoint.
        self.task.abort();
    }
}

/// Serves every request stream of one connection in its own task.
async fn serve_connection(conn: s2n_quic::Connection, stats: Arc<ServerStats>) {
    let _open = stats.connection();
    let (_handle, acceptor) = conn.split();
    // One accept is pending at a time; the lock is only held while polling.
    let acceptor = Mutex::new(acceptor);
    let stats = &stats;
    super::serve::serve_streams(
        || {
            std::future::poll_fn(|cx| {
                let mut a = acceptor.lock().unwrap_or_else(|e| e.into_inner());
                a.poll_accept_bidirectional_stream(cx)
                    .map(|r| r.ok().flatten())
            })
        },
        |stream| async move {
            let (recv, send) = stream.split();
            // Failures are counted by the request guard.
            let _ = hq::serve_stream(recv, send, stats).await;
        },
    )
    .await;
}

impl Adapter for S2n {
    fn name(&self) -> &'static str {
        "s2n-quic"
    }

    fn about(&self) -> &'static str {
        "s2n-quic 1.91 QUIC (rustls/ring), hq-interop"
    }

    fn in_default_suite(&self) -> bool {
        true
    }

    fn serve(&self, cfg: ServeConfig) -> BoxFuture<'static, anyhow::Result<Box<dyn Server>>> {
        Box::pin(async move {
            let tls = cfg.identity.server_config(cfg.cipher, &[ALPN])?;
            #[allow(deprecated)] // the builders cannot take our own rustls configuration
            let tls = s2n_quic::provider::tls::rustls::Server::new(tls);
            let mut server = s2n_quic::Server::builder()
                .with_tls(tls)?
                .with_limits(limits()?)?
                .with_io(cfg.listen)
                .with_context(|| format!("cannot listen on udp {}", cfg.listen))?
                .start()
                .with_context(|| format!("cannot listen on udp {}", cfg.listen))?;
            let addr = server.local_addr()?;
            let stats = cfg.stats;
            let task = tokio::spawn(async move {
                while let Some(conn) = server.accept().await {
                    tokio::spawn(serve_connection(conn, stats.clone()));
                }
            });
            Ok(Box::new(S2nServer { addr, task }) as Box<dyn Server>)
        })
    }

    fn client(&self, cfg: ClientConfig) -> BoxFuture<'static, anyhow::Result<Arc<dyn Client>>> {
        Box::pin(async move {
            let client = start_client(&cfg)?;
            Ok(Arc::new(S2nClient {
                client: Mutex::new(client),
                cfg,
            }) as Arc<dyn Client>)
        })
    }
}

/// A client endpoint for `cfg`.
fn start_client(cfg: &ClientConfig) -> anyhow::Result<s2n_quic::Client> {
    let tls = client_config(&cfg.cert, cfg.cipher, &[ALPN])?;
    #[allow(deprecated)] // as for the server
    let tls = s2n_quic::provider::tls::rustls::Client::new(tls);
    Ok(s2n_quic::Client::builder()
        .with_tls(tls)?
        .with_limits(limits()?)?
        .with_io(super::client_bind(cfg.server))?
        .start()?)
}

struct S2nClient {
    /// Replaced after `wait_idle`, which closes an s2n-quic endpoint for good.
    client: Mutex<s2n_quic::Client>,
    cfg: ClientConfig,
}

impl S2nClient {
    fn endpoint(&self) -> s2n_quic::Client {
        self.client
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl Client for S2nClient {
    fn connect(&self) -> BoxFuture<'_, anyhow::Result<Arc<dyn Connection>>> {
        Box::pin(async move {
            let connect = Connect::new(self.cfg.server).with_server_name(SERVER_NAME);
            let mut conn = self
                .endpoint()
                .connect(connect)
                .await
                .context("QUIC handshake")?;
            // Requests arrive on bidirectional streams only; nothing to accept.
            conn.keep_alive(false)?;
            let (handle, _acceptor) = conn.split();
            Ok(Arc::new(S2nConn(handle)) as Arc<dyn Connection>)
        })
    }

    fn wait_idle(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            // Waiting for idle closes the endpoint (new connections would fail):
            // later phases get a fresh one.
            let _ = self.endpoint().wait_idle().await;
            match start_client(&self.cfg) {
                Ok(fresh) => *self.client.lock().unwrap_or_else(|e| e.into_inner()) = fresh,
                Err(e) => tracing::warn!(error = %e, "cannot restart the s2n-quic client"),
            }
        })
    }
}

struct S2nConn(s2n_quic::connection::Handle);

impl Connection for S2nConn {
    fn request(&self, req: Request) -> BoxFuture<'_, anyhow::Result<()>> {
        Box::pin(async move {
            let mut handle = self.0.clone();
            let stream = handle.open_bidirectional_stream().await?;
            let (recv, send) = stream.split();
            hq::request(send, recv, req).await
        })
    }

    fn close(&self) -> BoxFuture<'_, anyhow::Result<()>> {
        self.0.close(0u32.into());
        Box::pin(async { Ok(()) })
    }
}
