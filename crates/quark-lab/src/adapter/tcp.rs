//! `tcp` and `tcp+tls`: the framed lab protocol over TCP, optionally inside
//! TLS 1.3 (tokio-rustls). TCP_NODELAY is set on both sides so small
//! request/response exchanges are not delayed by Nagle's algorithm.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio_rustls::{TlsAcceptor, TlsConnector};

use super::stream::{FramedConn, serve_framed};
use super::tls::{SERVER_NAME, client_config};
use super::{Adapter, BoxFuture, Client, ClientConfig, Connection, ServeConfig, Server};

/// The TCP adapters.
#[derive(Debug)]
pub struct Tcp {
    /// Whether the stream runs inside TLS.
    pub tls: bool,
}

/// A server built on a spawned accept loop; aborting the task stops it.
pub(crate) struct TaskServer {
    pub(crate) addr: SocketAddr,
    pub(crate) task: JoinHandle<()>,
}

impl Server for TaskServer {
    fn local_addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for TaskServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Binds a TCP listener with a clear message when the address is taken.
/// Accepted connections inherit the congestion controller set here.
pub(crate) async fn bind_tcp(addr: SocketAddr) -> anyhow::Result<TcpListener> {
    let listener = TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on tcp {addr}"))?;
    set_congestion(&listener)?;
    Ok(listener)
}

/// Linux's TCP congestion controller for this process's TCP sockets (the
/// children of one cell share one setting: `quark bench --tcp-cc`).
static TCP_CC: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Choose the kernel's TCP congestion controller (e.g. `cubic`, `bbr`) for every
/// TCP socket this process makes; `None` leaves the system default.
pub fn set_tcp_congestion(name: Option<String>) {
    if let Some(name) = name {
        let _ = TCP_CC.set(name);
    }
}

fn set_congestion(socket: &impl std::os::fd::AsFd) -> anyhow::Result<()> {
    if let Some(name) = TCP_CC.get() {
        socket2::SockRef::from(socket)
            .set_tcp_congestion(name.as_bytes())
            .with_context(|| format!("TCP congestion control '{name}' is not available"))?;
    }
    Ok(())
}

impl Adapter for Tcp {
    fn name(&self) -> &'static str {
        if self.tls { "tcp+tls" } else { "tcp" }
    }

    fn about(&self) -> &'static str {
        if self.tls {
            "TLS 1.3 (tokio-rustls) over TCP, framed requests, pipelined"
        } else {
            "plain TCP, framed requests, pipelined"
        }
    }

    fn in_default_suite(&self) -> bool {
        true
    }

    fn serve(&self, cfg: ServeConfig) -> BoxFuture<'static, anyhow::Result<Box<dyn Server>>> {
        let tls = self.tls;
        Box::pin(async move {
            let acceptor = match tls {
                true => Some(TlsAcceptor::from(Arc::new(
                    cfg.identity.server_config(cfg.cipher, &[])?,
                ))),
                false => None,
            };
            let listener = bind_tcp(cfg.listen).await?;
            let addr = listener.local_addr()?;
            let stats = cfg.stats;
            let task = tokio::spawn(async move {
                loop {
                    let Ok((sock, _)) = listener.accept().await else {
                        continue;
                    };
                    let _ = sock.set_nodelay(true);
                    let stats = stats.clone();
                    let acceptor = acceptor.clone();
                    tokio::spawn(async move {
                        let res = match acceptor {
                            Some(a) => match a.accept(sock).await {
                                Ok(s) => {
                                    let _c = stats.connection();
                                    serve_framed(s, &stats).await
                                }
                                Err(e) => Err(e.into()),
                            },
                            None => {
                                let _c = stats.connection();
                                serve_framed(sock, &stats).await
                            }
                        };
                        if res.is_err() {
                            stats.error();
                        }
                    });
                }
            });
            Ok(Box::new(TaskServer { addr, task }) as Box<dyn Server>)
        })
    }

    fn client(&self, cfg: ClientConfig) -> BoxFuture<'static, anyhow::Result<Arc<dyn Client>>> {
        let tls = self.tls;
        Box::pin(async move {
            let connector = match tls {
                true => Some(TlsConnector::from(Arc::new(client_config(
                    &cfg.cert,
                    cfg.cipher,
                    &[],
                )?))),
                false => None,
            };
            Ok(Arc::new(TcpClient {
                server: cfg.server,
                connector,
            }) as Arc<dyn Client>)
        })
    }
}

struct TcpClient {
    server: SocketAddr,
    connector: Option<TlsConnector>,
}

/// Opens a TCP connection with Nagle off.
pub(crate) async fn connect_tcp(addr: SocketAddr) -> anyhow::Result<TcpStream> {
    let socket = match addr {
        SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
        SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
    };
    // Before connecting, so the handshake already runs the chosen controller.
    set_congestion(&socket)?;
    let s = socket
        .connect(addr)
        .await
        .with_context(|| format!("cannot connect to tcp {addr}"))?;
    s.set_nodelay(true)?;
    Ok(s)
}

impl Client for TcpClient {
    fn connect(&self) -> BoxFuture<'_, anyhow::Result<Arc<dyn Connection>>> {
        Box::pin(async move {
            let sock = connect_tcp(self.server).await?;
            Ok(match &self.connector {
                Some(c) => {
                    let name = rustls_pki_types::ServerName::try_from(SERVER_NAME)?;
                    Arc::new(FramedConn::new(
                        c.connect(name, sock).await.context("TLS handshake")?,
                    )) as Arc<dyn Connection>
                }
                None => Arc::new(FramedConn::new(sock)),
            })
        })
    }
}
