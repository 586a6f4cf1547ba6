//! The agent: accepts control sessions, authenticates them, runs lab children.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::process::Command;
use tokio::sync::{Semaphore, mpsc};

use super::{FromAgent, ToAgent, read_msg, write_msg};

/// Sessions at once; more wait in the kernel's backlog.
const MAX_SESSIONS: usize = 32;
/// Time to finish TLS and authentication.
const AUTH_TIMEOUT: Duration = Duration::from_secs(10);
/// Failed authentications per minute before the agent refuses everyone for
/// the rest of that minute.
const MAX_FAILURES: u32 = 10;
/// Delay before answering a wrong token (slows guessing).
const FAIL_DELAY: Duration = Duration::from_secs(1);

/// How an agent runs.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    /// Control address.
    pub listen: SocketAddr,
    /// The shared token.
    pub token: Vec<u8>,
    /// The `quark` binary its children run from.
    pub exe: PathBuf,
}

struct Shared {
    opts: AgentOptions,
    cert_fp: Vec<u8>,
    host: String,
    /// Start of the current minute and its failures.
    failures: Mutex<(Instant, u32)>,
}

impl Shared {
    fn locked_out(&self) -> bool {
        self.failures
            .lock()
            .map(|f| f.0.elapsed() < Duration::from_secs(60) && f.1 >= MAX_FAILURES)
            .unwrap_or(true)
    }

    fn failed(&self) {
        if let Ok(mut f) = self.failures.lock() {
            if f.0.elapsed() >= Duration::from_secs(60) {
                *f = (Instant::now(), 0);
            }
            f.1 += 1;
        }
    }
}

/// The host's name, for the results.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

/// Runs the agent until the process ends; `ready` gets the bound address.
pub async fn serve(opts: AgentOptions, ready: impl FnOnce(SocketAddr)) -> anyhow::Result<()> {
    let (config, cert) = super::tls::server()?;
    let acceptor = tokio_rustls::TlsAcceptor::from(config);
    let listener = TcpListener::bind(opts.listen).await?;
    ready(listener.local_addr()?);
    let shared = Arc::new(Shared {
        cert_fp: super::fingerprint(&cert),
        host: hostname(),
        opts,
        failures: Mutex::new((Instant::now(), 0)),
    });
    let slots = Arc::new(Semaphore::new(MAX_SESSIONS));
    loop {
        let permit = slots.clone().acquire_owned().await?;
        let (tcp, peer) = match listener.accept().await {
            Ok(a) => a,
            Err(e) => {
                tracing::warn!("accept: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let (acceptor, shared) = (acceptor.clone(), shared.clone());
        tokio::spawn(async move {
            if let Err(e) = session(tcp, acceptor, shared).await {
                tracing::info!("session from {peer}: {e}");
            }
            drop(permit);
        });
    }
}

async fn session(
    tcp: TcpStream,
    acceptor: tokio_rustls::TlsAcceptor,
    shared: Arc<Shared>,
) -> anyhow::Result<()> {
    super::keepalive(&tcp);
    let authed = tokio::time::timeout(AUTH_TIMEOUT, async {
        let tls = acceptor.accept(tcp).await?;
        let (r, mut w) = tokio::io::split(tls);
        let mut r = BufReader::new(r);
        if shared.locked_out() {
            let message = "too many failed authentications; try later".into();
            write_msg(&mut w, &FromAgent::Refused { message }).await?;
            anyhow::bail!("locked out");
        }
        let ours = super::nonce()?;
        let hello = FromAgent::Hello {
            nonce: hex::encode(ours),
        };
        write_msg(&mut w, &hello).await?;
        let auth = super::read_bounded(&mut r, super::MAX_AUTH_LINE).await?;
        let Some(ToAgent::Auth { nonce, proof }) = auth else {
            anyhow::bail!("no authentication");
        };
        let theirs = hex::decode(&nonce).unwrap_or_default();
        let proof = hex::decode(&proof).unwrap_or_default();
        let fp = &shared.cert_fp;
        let token = &shared.opts.token;
        if theirs.len() != 32 || !super::verify(token, "driver", &ours, &theirs, fp, &proof) {
            shared.failed();
            tokio::time::sleep(FAIL_DELAY).await;
            let message = "authentication failed".into();
            let _ = write_msg(&mut w, &FromAgent::Refused { message }).await;
            let _ = w.shutdown().await;
            anyhow::bail!("wrong token");
        }
        let mine = super::proof(token, "agent", &ours, &theirs, fp);
        let proof = hex::encode(mine.as_ref());
        let host = shared.host.clone();
        write_msg(&mut w, &FromAgent::Welcome { proof, host }).await?;
        anyhow::Ok((r, w))
    })
    .await;
    let (mut r, mut w) = authed.map_err(|_| anyhow::anyhow!("authentication timed out"))??;
    // Authenticated: measurements, or one child.
    loop {
        let Some(msg) = read_msg::<_, ToAgent>(&mut r).await? else {
            return Ok(());
        };
        match msg {
            ToAgent::Ping => write_msg(&mut w, &FromAgent::Pong).await?,
            ToAgent::Probe { addr, count } => {
                let ms = probe(addr, count.min(20)).await;
                write_msg(&mut w, &FromAgent::Rtt { ms }).await?;
            }
            ToAgent::Spawn {
                sub,
                args,
                cert,
                key,
            } => return run_child(&shared, r, w, sub, args, cert, key).await,
            _ => {
                let message = "unexpected message".into();
                write_msg(&mut w, &FromAgent::Refused { message }).await?;
                return Ok(());
            }
        }
    }
}

/// TCP connect times to `addr` in milliseconds: one round trip each.
pub(super) async fn probe(addr: SocketAddr, count: u32) -> Vec<f64> {
    let mut ms = Vec::new();
    for _ in 0..count {
        let t = Instant::now();
        if let Ok(Ok(s)) =
            tokio::time::timeout(Duration::from_secs(2), TcpStream::connect(addr)).await
        {
            ms.push(t.elapsed().as_secs_f64() * 1e3);
            drop(s);
        }
    }
    ms
}

/// A per-session directory for the lab certificate and key, removed on drop.
struct Dir(PathBuf);

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[allow(clippy::too_many_arguments)]
async fn run_child<R, W>(
    shared: &Shared,
    mut r: BufReader<R>,
    mut w: W,
    sub: String,
    mut args: Vec<String>,
    cert: String,
    key: Option<String>,
) -> anyhow::Result<()>
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
    W: tokio::io::AsyncWrite + Unpin,
{
    let refuse = |m: &str| FromAgent::Refused { message: m.into() };
    if !super::ALLOWED.contains(&sub.as_str()) {
        write_msg(&mut w, &refuse("only lab-server and lab-client run here")).await?;
        return Ok(());
    }
    if args
        .iter()
        .any(|a| a.starts_with("--cert=") || a.starts_with("--key="))
    {
        write_msg(&mut w, &refuse("--cert and --key take separate values")).await?;
        return Ok(());
    }
    // A stack with a lab program of its own (quic-go) runs that program, as
    // found on this host; the adapter registry names it, never the driver.
    let proto = args
        .iter()
        .position(|a| a == "--proto")
        .and_then(|i| args.get(i + 1));
    let program = match proto
        .and_then(|p| crate::adapter::find(p))
        .and_then(|a| a.external_child())
    {
        None => shared.opts.exe.clone(),
        Some(x) => match x.locate(&shared.opts.exe) {
            Ok(p) => p,
            Err(why) => {
                write_msg(&mut w, &refuse(&why)).await?;
                return Ok(());
            }
        },
    };
    let n = super::nonce()?;
    let dir = Dir(std::env::temp_dir().join(format!("quark-agent-{}", hex::encode(&n[..8]))));
    std::fs::create_dir_all(&dir.0)?;
    let files = [("--cert", Some(cert)), ("--key", key)];
    for (flag, data) in files {
        let Some(data) = data else { continue };
        let path = dir.0.join(&flag[2..]);
        std::fs::write(&path, hex::decode(data)?)?;
        for i in 0..args.len().saturating_sub(1) {
            if args[i] == flag {
                args[i + 1] = path.display().to_string();
            }
        }
    }
    let spawned = Command::new(&program)
        .arg(&sub)
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env(crate::child::PARENT_ENV, std::process::id().to_string())
        .kill_on_drop(true)
        .spawn();
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            let why = format!("cannot start {}: {e}", program.display());
            write_msg(&mut w, &refuse(&why)).await?;
            return Ok(());
        }
    };
    let (Some(stdout), Some(stderr), Some(stdin)) =
        (child.stdout.take(), child.stderr.take(), child.stdin.take())
    else {
        anyhow::bail!("no pipes");
    };
    write_msg(&mut w, &FromAgent::Spawned).await?;
    let tail = Arc::new(Mutex::new(VecDeque::new()));
    let t = tail.clone();
    tokio::spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if let Ok(mut t) = t.lock() {
                if t.len() == 5 {
                    t.pop_front();
                }
                t.push_back(line);
            }
        }
    });
    // Both inputs through channels, so the loop below only awaits cancel-safe receives.
    let (out_tx, mut out_rx) = mpsc::channel::<String>(64);
    tokio::spawn(async move {
        let mut lines = BufReader::new(stdout).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if out_tx.send(line).await.is_err() {
                return;
            }
        }
    });
    let (in_tx, mut in_rx) = mpsc::channel::<Option<ToAgent>>(64);
    tokio::spawn(async move {
        loop {
            let m = read_msg::<_, ToAgent>(&mut r).await.ok().flatten();
            let end = m.is_none();
            if in_tx.send(m).await.is_err() || end {
                return;
            }
        }
    });
    let mut stdin = Some(stdin);
    loop {
        tokio::select! {
            line = out_rx.recv() => match line {
                Some(line) => {
                    if write_msg(&mut w, &FromAgent::Out { line }).await.is_err() {
                        break; // driver gone: kill below
                    }
                }
                None => {
                    let status = match tokio::time::timeout(Duration::from_secs(2), child.wait()).await {
                        Ok(Ok(s)) => s.to_string(),
                        _ => "stdout closed, killed".into(),
                    };
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    let stderr = tail.lock().map(|t| t.iter().cloned().collect()).unwrap_or_default();
                    let _ = write_msg(&mut w, &FromAgent::Exit { status, stderr }).await;
                    let _ = w.shutdown().await;
                    return Ok(());
                }
            },
            m = in_rx.recv() => match m.flatten() {
                Some(ToAgent::In { line }) => {
                    if let Some(s) = stdin.as_mut() {
                        let _ = s.write_all(format!("{line}\n").as_bytes()).await;
                        let _ = s.flush().await;
                    }
                }
                Some(ToAgent::Kill) => {
                    let _ = child.start_kill();
                }
                Some(_) => {}
                None => {
                    // The driver closed (or lost) the session: the child's
                    // stdin closes and it exits; the kill is the backstop.
                    drop(stdin.take());
                    if tokio::time::timeout(Duration::from_secs(2), child.wait()).await.is_err() {
                        let _ = child.start_kill();
                    }
                    let _ = child.wait().await;
                    return Ok(());
                }
            },
        }
    }
    let _ = child.start_kill();
    let _ = child.wait().await;
    Ok(())
}
