//! The driver's side: sessions with agents, remote children, RTT probes.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncWriteExt, BufReader, ReadHalf, WriteHalf};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_rustls::client::TlsStream;

use super::{FromAgent, ToAgent, read_msg, write_msg};

type Reader = BufReader<ReadHalf<TlsStream<TcpStream>>>;
type Writer = WriteHalf<TlsStream<TcpStream>>;

/// An agent the driver uses.
#[derive(Clone)]
pub struct RemoteAgent {
    /// Its control address.
    pub addr: SocketAddr,
    token: Arc<Vec<u8>>,
}

impl std::fmt::Debug for RemoteAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RemoteAgent({})", self.addr) // never the token
    }
}

/// Where each side ran and the path between them (the results' `placement`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Placement {
    /// Server side: `agent` address or absent (local), and host name.
    pub server: SideHost,
    /// Client side.
    pub client: SideHost,
    /// TCP connect times from the client's host to the server's (median),
    /// measured at start; absent if no probe connected.
    pub rtt_ms: Option<f64>,
}

/// One side's host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SideHost {
    /// Host name.
    pub host: String,
    /// The agent's control address; absent: on the driver's host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

impl RemoteAgent {
    /// An agent at `addr` sharing `token`.
    pub fn new(addr: SocketAddr, token: Vec<u8>) -> Self {
        RemoteAgent {
            addr,
            token: Arc::new(token),
        }
    }

    /// Opens an authenticated session; returns it and the agent's host name.
    async fn connect(&self) -> anyhow::Result<(Reader, Writer, String)> {
        let fail = || format!("agent {}: connect", self.addr);
        let tcp = tokio::time::timeout(Duration::from_secs(10), TcpStream::connect(self.addr))
            .await
            .map_err(|_| anyhow!("connect timed out"))
            .and_then(|r| r.map_err(Into::into))
            .with_context(fail)?;
        super::keepalive(&tcp);
        let connector = tokio_rustls::TlsConnector::from(super::tls::client()?);
        let name = rustls::pki_types::ServerName::from(self.addr.ip());
        let tls = connector.connect(name, tcp).await.with_context(fail)?;
        let cert_fp = match tls.get_ref().1.peer_certificates() {
            Some([c, ..]) => super::fingerprint(c),
            _ => bail!("agent {}: no certificate", self.addr),
        };
        let (r, mut w) = tokio::io::split(tls);
        let mut r = BufReader::new(r);
        let theirs = match read_msg(&mut r).await.with_context(fail)? {
            Some(FromAgent::Hello { nonce }) => hex::decode(nonce)?,
            Some(FromAgent::Refused { message }) => bail!("agent {}: {message}", self.addr),
            _ => bail!("agent {}: no greeting", self.addr),
        };
        let ours = super::nonce()?;
        let proof = super::proof(&self.token, "driver", &theirs, &ours, &cert_fp);
        let auth = ToAgent::Auth {
            nonce: hex::encode(ours),
            proof: hex::encode(proof.as_ref()),
        };
        write_msg(&mut w, &auth).await.with_context(fail)?;
        let host = match read_msg(&mut r).await {
            Ok(Some(FromAgent::Welcome { proof, host })) => {
                let proof = hex::decode(proof).unwrap_or_default();
                if !super::verify(&self.token, "agent", &theirs, &ours, &cert_fp, &proof) {
                    bail!("agent {}: it does not know the token", self.addr);
                }
                host
            }
            Ok(Some(FromAgent::Refused { message })) => bail!("agent {}: {message}", self.addr),
            _ => bail!("agent {}: refused (wrong token?)", self.addr),
        };
        Ok((r, w, host))
    }

    /// The agent's host name and the median control-channel round trip.
    pub async fn ping(&self, count: u32) -> anyhow::Result<(String, f64)> {
        let (mut r, mut w, host) = self.connect().await?;
        let mut rtts = Vec::new();
        for _ in 0..count.max(1) {
            let t = Instant::now();
            write_msg(&mut w, &ToAgent::Ping).await?;
            match read_msg(&mut r).await? {
                Some(FromAgent::Pong) => rtts.push(t.elapsed().as_secs_f64() * 1e3),
                _ => bail!("agent {}: no pong", self.addr),
            }
        }
        let _ = w.shutdown().await;
        Ok((host, median(&mut rtts).unwrap_or(0.0)))
    }

    /// TCP connect times from the agent's host to `to`.
    pub async fn probe(&self, to: SocketAddr, count: u32) -> anyhow::Result<Vec<f64>> {
        let (mut r, mut w, _) = self.connect().await?;
        write_msg(&mut w, &ToAgent::Probe { addr: to, count }).await?;
        match read_msg(&mut r).await? {
            Some(FromAgent::Rtt { ms }) => Ok(ms),
            _ => bail!("agent {}: no probe answer", self.addr),
        }
    }

    /// Starts a lab child on the agent. Its stdout lines go to `out` as
    /// `Some(line)`, then one `None` when it exits or the agent is lost.
    pub async fn spawn(
        &self,
        sub: &str,
        args: &[String],
        cert: &[u8],
        key: Option<&[u8]>,
        out: impl Fn(Option<String>) + Send + 'static,
    ) -> anyhow::Result<Remote> {
        let (mut r, mut w, _) = self.connect().await?;
        let spawn = ToAgent::Spawn {
            sub: sub.into(),
            args: args.to_vec(),
            cert: hex::encode(cert),
            key: key.map(hex::encode),
        };
        write_msg(&mut w, &spawn).await?;
        match read_msg(&mut r).await? {
            Some(FromAgent::Spawned) => {}
            Some(FromAgent::Refused { message }) => bail!("agent {}: {message}", self.addr),
            _ => bail!("agent {}: did not start {sub}", self.addr),
        }
        let exit = Arc::new(Mutex::new(None));
        let e = exit.clone();
        let addr = self.addr;
        let reader = tokio::spawn(async move {
            let why = loop {
                match read_msg(&mut r).await {
                    Ok(Some(FromAgent::Out { line })) => out(Some(line)),
                    Ok(Some(FromAgent::Exit { status, stderr })) => {
                        let last = stderr.last().cloned().unwrap_or_default();
                        break format!("exited unexpectedly ({status}) on agent {addr}: {last}");
                    }
                    Ok(Some(_)) => {}
                    Ok(None) => break format!("lost agent {addr}: control channel closed"),
                    Err(err) if err.kind() == std::io::ErrorKind::UnexpectedEof => {
                        break format!(
                            "lost agent {addr}: control channel cut (agent died or network lost)"
                        );
                    }
                    Err(err) => break format!("lost agent {addr}: {err}"),
                }
            };
            if let Ok(mut e) = e.lock() {
                *e = Some(why);
            }
            out(None);
        });
        let (tx, mut rx) = mpsc::unbounded_channel::<ToAgent>();
        let writer = tokio::spawn(async move {
            while let Some(m) = rx.recv().await {
                if write_msg(&mut w, &m).await.is_err() {
                    return;
                }
            }
            let _ = w.shutdown().await;
        });
        Ok(Remote {
            tx: Some(tx),
            exit,
            reader,
            writer,
        })
    }
}

/// A lab child running on an agent.
pub struct Remote {
    tx: Option<mpsc::UnboundedSender<ToAgent>>,
    exit: Arc<Mutex<Option<String>>>,
    reader: JoinHandle<()>,
    writer: JoinHandle<()>,
}

impl Remote {
    /// Sends a line to the child's stdin; false if the session is gone.
    pub fn send(&self, line: &str) -> bool {
        self.tx.as_ref().is_some_and(|tx| {
            tx.send(ToAgent::In { line: line.into() }).is_ok() && !self.writer.is_finished()
        })
    }

    /// Why the child stopped, once known (waits up to `limit`).
    pub async fn exit(&self, limit: Duration) -> Option<String> {
        let end = Instant::now() + limit;
        loop {
            if let Some(e) = self.exit.lock().ok().and_then(|e| e.clone()) {
                return Some(e);
            }
            if Instant::now() >= end {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Closes the child's stdin (it exits) and waits for the session to end.
    pub async fn close(mut self, kill: bool) {
        if kill && let Some(tx) = &self.tx {
            let _ = tx.send(ToAgent::Kill);
        }
        drop(self.tx.take());
        if tokio::time::timeout(Duration::from_secs(3), &mut self.reader)
            .await
            .is_err()
        {
            self.reader.abort();
        }
        self.writer.abort();
    }
}

/// Median of `v`, if any.
fn median(v: &mut [f64]) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied()
}

/// The path RTT between the client's host and the server agent: TCP connects
/// from the client agent (or from here when the client is local).
pub async fn probe_rtt(client: Option<&RemoteAgent>, server: SocketAddr) -> Option<f64> {
    let mut ms = match client {
        Some(c) => c.probe(server, 5).await.ok()?,
        None => super::server::probe(server, 5).await,
    };
    median(&mut ms)
}
