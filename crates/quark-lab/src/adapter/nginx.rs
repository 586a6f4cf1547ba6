//! `nginx`: Debian's nginx (OpenSSL TLS 1.3) serving the pattern from a
//! static file over HTTPS/1.1, the production TCP baseline of issue #30.
//!
//! The server is an nginx process started by the lab server (so it runs in the
//! server's namespace with `--net veth`); its master's and workers' CPU time
//! count as the server's ([`Server::helper_cpu`]). nginx cannot make bodies of
//! any length, so the client asks for a response as range requests of at most
//! 16 MiB of one pattern file, on one keep-alive connection
//! (hyper HTTP/1.1 over rustls, the `http1+tls` client), and checks every
//! byte. Requests with a body are not served (nginx serves static files).
//! Without nginx installed the lab skips the protocol ([`Adapter::unavailable`]).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use tokio::task::JoinHandle;
use tokio_rustls::TlsConnector;

use super::nginx_proc::{Nginx, SPAN, program};
use super::tcp::connect_tcp;
use super::tls::{SERVER_NAME, client_config};
use super::{Adapter, BoxFuture, Client, ClientConfig, Connection, Request, ServeConfig, Server};
use crate::wire::Verifier;

/// The nginx adapter.
#[derive(Debug)]
pub struct NginxAdapter;

struct NginxServer(Nginx);

impl Server for NginxServer {
    fn local_addr(&self) -> SocketAddr {
        self.0.addr
    }

    fn helper_cpu(&self) -> Option<(Duration, Duration)> {
        Some(self.0.cpu())
    }

    fn sync_counters(&self) {
        self.0.sync();
    }
}

impl Adapter for NginxAdapter {
    fn name(&self) -> &'static str {
        "nginx"
    }

    fn about(&self) -> &'static str {
        "Debian's nginx with OpenSSL, HTTPS/1.1 static file (range requests), hyper+rustls client"
    }

    fn own_workers(&self) -> bool {
        true
    }

    fn unavailable(&self) -> Option<String> {
        program().err()
    }

    fn serve(&self, cfg: ServeConfig) -> BoxFuture<'static, anyhow::Result<Box<dyn Server>>> {
        Box::pin(async move {
            let workers = cfg.workers.unwrap_or(1).max(1);
            let n = Nginx::start(cfg.listen, &cfg.identity, cfg.cipher, workers, cfg.stats).await?;
            Ok(Box::new(NginxServer(n)) as Box<dyn Server>)
        })
    }

    fn client(&self, cfg: ClientConfig) -> BoxFuture<'static, anyhow::Result<Arc<dyn Client>>> {
        Box::pin(async move {
            let tls = client_config(&cfg.cert, cfg.cipher, &[b"http/1.1"])?;
            Ok(Arc::new(NginxClient {
                server: cfg.server,
                connector: TlsConnector::from(Arc::new(tls)),
            }) as Arc<dyn Client>)
        })
    }
}

struct NginxClient {
    server: SocketAddr,
    connector: TlsConnector,
}

type Sender = hyper::client::conn::http1::SendRequest<Empty<Bytes>>;

struct NginxConn {
    sender: tokio::sync::Mutex<Option<Sender>>,
    task: std::sync::Mutex<Option<JoinHandle<()>>>,
}

impl Client for NginxClient {
    fn connect(&self) -> BoxFuture<'_, anyhow::Result<Arc<dyn Connection>>> {
        Box::pin(async move {
            let sock = connect_tcp(self.server).await?;
            let name = rustls_pki_types::ServerName::try_from(SERVER_NAME)?;
            let tls = self
                .connector
                .connect(name, sock)
                .await
                .context("TLS handshake")?;
            let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls)).await?;
            let task = tokio::spawn(async move {
                conn.await.ok();
            });
            Ok(Arc::new(NginxConn {
                sender: tokio::sync::Mutex::new(Some(sender)),
                task: std::sync::Mutex::new(Some(task)),
            }) as Arc<dyn Connection>)
        })
    }
}

/// The range requests that fetch a response of `len` bytes: (path, first
/// byte, last byte) of the pattern file; `None` range for an empty response.
pub(crate) fn spans(len: u64) -> Vec<(&'static str, Option<(u64, u64)>)> {
    if len == 0 {
        return vec![("/empty?first", None)];
    }
    (0..len.div_ceil(SPAN))
        .map(|i| {
            let off = i * SPAN;
            let n = (len - off).min(SPAN);
            // File byte j is j % 251, like response byte j.
            let start = off % 251;
            let path = if i == 0 {
                "/pattern?first"
            } else {
                "/pattern?more"
            };
            (path, Some((start, start + n - 1)))
        })
        .collect()
}

impl Connection for NginxConn {
    fn request(&self, req: Request) -> BoxFuture<'_, anyhow::Result<()>> {
        Box::pin(async move {
            if req.body_len != 0 {
                bail!("nginx serves static files: requests with a body are not supported");
            }
            let mut guard = self.sender.lock().await;
            let s = guard.as_mut().ok_or_else(|| anyhow!("connection closed"))?;
            let mut v = Verifier::new(req.response_len);
            for (path, range) in spans(req.response_len) {
                let mut b = hyper::Request::get(path).header(hyper::header::HOST, SERVER_NAME);
                if let Some((a, z)) = range {
                    b = b.header(hyper::header::RANGE, format!("bytes={a}-{z}"));
                }
                s.ready().await?;
                let resp = s.send_request(b.body(Empty::new())?).await?;
                let want = if range.is_some() { 206 } else { 200 };
                if resp.status().as_u16() != want {
                    bail!("nginx answered {} to {path}", resp.status());
                }
                let mut body = resp.into_body();
                while let Some(frame) = body.frame().await {
                    if let Ok(data) = frame?.into_data() {
                        v.update(&data).map_err(|e| anyhow!("response: {e}"))?;
                    }
                }
            }
            v.finish().map_err(|e| anyhow!("response: {e}"))?;
            Ok(())
        })
    }

    fn close(&self) -> BoxFuture<'_, anyhow::Result<()>> {
        Box::pin(async move {
            drop(self.sender.lock().await.take());
            let task = self.task.lock().ok().and_then(|mut t| t.take());
            if let Some(t) = task {
                t.await.ok();
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_cover_the_response_at_pattern_offsets() {
        assert_eq!(spans(0), vec![("/empty?first", None)]);
        assert_eq!(spans(10), vec![("/pattern?first", Some((0, 9)))]);
        let s = spans(2 * SPAN + 5);
        assert_eq!(s.len(), 3);
        assert_eq!(s[0], ("/pattern?first", Some((0, SPAN - 1))));
        let o = SPAN % 251;
        assert_eq!(s[1], ("/pattern?more", Some((o, o + SPAN - 1))));
        let o2 = (2 * SPAN) % 251;
        assert_eq!(s[2], ("/pattern?more", Some((o2, o2 + 4))));
    }
}
