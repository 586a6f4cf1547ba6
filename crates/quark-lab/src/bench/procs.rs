//! The orchestrator's side of a cell: a server and a client process, their
//! event streams, deadlines, signals and clean-up.

use std::collections::VecDeque;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use indicatif::ProgressBar;
use serde::de::DeserializeOwned;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::agent::{Remote, RemoteAgent};
use crate::child::PARENT_ENV;

/// Why a cell stopped early.
#[derive(Debug)]
pub(super) enum CellError {
    /// SIGINT or SIGTERM: stop the whole run.
    Interrupted(&'static str),
    /// This cell failed; the run goes on.
    Failed(String),
}

impl From<std::io::Error> for CellError {
    fn from(e: std::io::Error) -> Self {
        CellError::Failed(e.to_string())
    }
}

/// SIGINT and SIGTERM, handled instead of killing the orchestrator.
pub(super) struct Signals {
    int: Signal,
    term: Signal,
}

impl Signals {
    /// Installs the handlers.
    pub(super) fn install() -> std::io::Result<Signals> {
        Ok(Signals {
            int: signal(SignalKind::interrupt())?,
            term: signal(SignalKind::terminate())?,
        })
    }

    async fn recv(&mut self) -> &'static str {
        tokio::select! {
            _ = self.int.recv() => "SIGINT",
            _ = self.term.recv() => "SIGTERM",
        }
    }
}

/// Which child.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Side {
    /// The lab server.
    Server,
    /// The lab client.
    Client,
}

impl Side {
    fn name(self) -> &'static str {
        match self {
            Side::Server => "server",
            Side::Client => "client",
        }
    }
}

enum Proc {
    /// A child process of ours.
    Local {
        // Boxed: the enum stays small (two per cell, so the box costs nothing).
        child: Box<Child>,
        stdin: Option<ChildStdin>,
        stderr: Arc<Mutex<VecDeque<String>>>,
    },
    /// A child on an agent (`quark agent`), relayed over its control channel.
    Remote(Remote),
}

/// A server and a client process and their merged event stream.
pub(super) struct Procs<'a> {
    exe: &'a Path,
    server: Option<Proc>,
    client: Option<Proc>,
    tx: mpsc::UnboundedSender<(Side, Option<String>)>,
    rx: mpsc::UnboundedReceiver<(Side, Option<String>)>,
    signals: &'a mut Signals,
    deadline: Instant,
    timeout: Duration,
    /// Events that arrived from one side while waiting for the other.
    stash: VecDeque<(Side, serde_json::Value)>,
    /// Progress bar fed by the client's progress events.
    pub(super) bar: Option<ProgressBar>,
}

impl<'a> Procs<'a> {
    /// No processes yet; children will be `exe`; every wait ends at `timeout`
    /// after [`Procs::rearm`].
    pub(super) fn new(exe: &'a Path, signals: &'a mut Signals, timeout: Duration) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        Procs {
            exe,
            server: None,
            client: None,
            tx,
            rx,
            signals,
            deadline: Instant::now() + timeout,
            timeout,
            stash: VecDeque::new(),
            bar: None,
        }
    }

    /// Restarts the deadline.
    pub(super) fn rearm(&mut self) {
        self.deadline = Instant::now() + self.timeout;
    }

    /// Spawns `<exe> <sub> <args>` as `side` (`exe`: quark, or a stack's own
    /// lab program), inside network namespace `netns` if given (`ip netns
    /// exec` replaces itself with the program: same process), on AF_XDP over
    /// interface `xdp` if given (the `veth-xdp` profile).
    pub(super) fn spawn_in(
        &mut self,
        netns: Option<String>,
        xdp: Option<String>,
        side: Side,
        sub: &str,
        args: &[String],
    ) -> Result<(), CellError> {
        let mut cmd = match &netns {
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns]).arg(self.exe);
                c
            }
            None => Command::new(self.exe),
        };
        if let Some(ifname) = xdp {
            cmd.env(quark_udp::XDP_ENV, ifname);
        }
        cmd.arg(sub)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .env(PARENT_ENV, std::process::id().to_string())
            // Own process group: a terminal's Ctrl-C reaches only the
            // orchestrator, which then stops the children in order.
            .process_group(0)
            .kill_on_drop(true);
        let mut child = cmd
            .spawn()
            .map_err(|e| CellError::Failed(format!("cannot start {}: {e}", self.exe.display())))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| CellError::Failed("no stdout".into()))?;
        let stderr = child
            .stderr
            .take()
            .ok_or_else(|| CellError::Failed("no stderr".into()))?;
        let tx = self.tx.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let _ = tx.send((side, Some(line)));
            }
            let _ = tx.send((side, None));
        });
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let t = tail.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if let Ok(mut t) = t.lock() {
                    if t.len() == 20 {
                        t.pop_front();
                    }
                    t.push_back(line);
                }
            }
        });
        let p = Proc::Local {
            stdin: child.stdin.take(),
            child: Box::new(child),
            stderr: tail,
        };
        match side {
            Side::Server => self.server = Some(p),
            Side::Client => self.client = Some(p),
        }
        Ok(())
    }

    /// Starts `quark <sub> <args>` as `side` on `agent`, handing it the lab
    /// certificate (and the key, for servers) to write on its host.
    pub(super) async fn spawn_remote(
        &mut self,
        agent: &RemoteAgent,
        side: Side,
        sub: &str,
        args: &[String],
        files: (&Path, Option<&Path>),
    ) -> Result<(), CellError> {
        let read = |p: &Path| {
            std::fs::read(p).map_err(|e| CellError::Failed(format!("{}: {e}", p.display())))
        };
        let cert = read(files.0)?;
        let key = files.1.map(read).transpose()?;
        let tx = self.tx.clone();
        let remote = agent
            .spawn(sub, args, &cert, key.as_deref(), move |line| {
                let _ = tx.send((side, line));
            })
            .await
            .map_err(|e| CellError::Failed(format!("{}: {e:#}", side.name())))?;
        match side {
            Side::Server => self.server = Some(Proc::Remote(remote)),
            Side::Client => self.client = Some(Proc::Remote(remote)),
        }
        Ok(())
    }

    fn proc(&mut self, side: Side) -> Option<&mut Proc> {
        match side {
            Side::Server => self.server.as_mut(),
            Side::Client => self.client.as_mut(),
        }
    }

    /// Sends a command line to a child.
    pub(super) async fn send(&mut self, side: Side, cmd: &str) -> Result<(), CellError> {
        let ok = match self.proc(side) {
            Some(Proc::Local {
                stdin: Some(stdin), ..
            }) => {
                stdin.write_all(format!("{cmd}\n").as_bytes()).await.is_ok()
                    && stdin.flush().await.is_ok()
            }
            Some(Proc::Remote(r)) => r.send(cmd),
            _ => false,
        };
        if ok {
            Ok(())
        } else {
            Err(CellError::Failed(self.died(side).await))
        }
    }

    /// Whether the server process exited (waiting briefly for it to finish dying).
    async fn server_exited(&mut self) -> bool {
        match self.server.as_mut() {
            Some(Proc::Local { child, .. }) => {
                tokio::time::timeout(Duration::from_millis(500), child.wait())
                    .await
                    .is_ok()
            }
            Some(Proc::Remote(r)) => r.exit(Duration::from_millis(500)).await.is_some(),
            None => false,
        }
    }

    /// Describes a child that stopped talking: exit status and its last stderr line.
    async fn died(&mut self, side: Side) -> String {
        let (child, stderr) = match self.proc(side) {
            None => return format!("{} not running", side.name()),
            Some(Proc::Remote(r)) => {
                let why = r.exit(Duration::from_secs(3)).await;
                let why = why.unwrap_or_else(|| "stopped talking (agent unresponsive)".into());
                return format!("{} {why}", side.name());
            }
            Some(Proc::Local { child, stderr, .. }) => (child, stderr.clone()),
        };
        let status = match tokio::time::timeout(Duration::from_secs(2), child.wait()).await {
            Ok(Ok(s)) => s.to_string(),
            _ => "still running, killed".to_string(),
        };
        // Let the stderr reader catch up with the child's last words.
        tokio::time::sleep(Duration::from_millis(20)).await;
        let last = stderr
            .lock()
            .ok()
            .and_then(|t| t.back().cloned())
            .unwrap_or_default();
        let mut msg = format!("{} exited unexpectedly ({status})", side.name());
        if !last.is_empty() {
            msg.push_str(": ");
            msg.push_str(&last);
        }
        msg
    }

    /// Waits for event `want` from `side`, handling progress and failures.
    pub(super) async fn expect<T: DeserializeOwned>(
        &mut self,
        side: Side,
        want: &str,
    ) -> Result<T, CellError> {
        if let Some(i) = self.stash.iter().position(|(from, _)| *from == side) {
            let (_, v) = self
                .stash
                .remove(i)
                .unwrap_or((side, serde_json::Value::Null));
            let event = v
                .get("event")
                .and_then(|e| e.as_str())
                .unwrap_or_default()
                .to_string();
            if event != want {
                return Err(CellError::Failed(format!(
                    "unexpected '{event}' from {} (waiting for '{want}')",
                    side.name()
                )));
            }
            return serde_json::from_value(v)
                .map_err(|e| CellError::Failed(format!("bad '{want}' event: {e}")));
        }
        loop {
            let (from, line) = tokio::select! {
                m = self.rx.recv() => m.ok_or_else(|| CellError::Failed("event channel closed".into()))?,
                sig = self.signals.recv() => return Err(CellError::Interrupted(sig)),
                _ = tokio::time::sleep_until(self.deadline) => {
                    return Err(CellError::Failed(format!("timed out after {:?} waiting for {} '{want}'", self.timeout, side.name())));
                }
            };
            let Some(line) = line else {
                return Err(CellError::Failed(self.died(from).await));
            };
            let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) else {
                continue; // not an event: ignore stray output
            };
            let event = v.get("event").and_then(|e| e.as_str()).unwrap_or_default();
            match event {
                "error" => {
                    let msg = v
                        .get("message")
                        .and_then(|m| m.as_str())
                        .unwrap_or("unknown error");
                    // A client error is often the symptom: name a dead server as the cause.
                    if from == Side::Client && self.server_exited().await {
                        let cause = self.died(Side::Server).await;
                        return Err(CellError::Failed(format!("{cause}; client: {msg}")));
                    }
                    return Err(CellError::Failed(format!("{}: {msg}", from.name())));
                }
                "progress" if from == Side::Client => {
                    if let (Some(bar), Some(done)) =
                        (&self.bar, v.get("done").and_then(|d| d.as_u64()))
                    {
                        bar.set_position(done);
                    }
                }
                e if e == want && from == side => {
                    return serde_json::from_value(v)
                        .map_err(|e| CellError::Failed(format!("bad '{want}' event: {e}")));
                }
                _ if from != side => self.stash.push_back((from, v)),
                e => {
                    return Err(CellError::Failed(format!(
                        "unexpected '{e}' from {} (waiting for '{want}')",
                        from.name()
                    )));
                }
            }
        }
    }

    /// Stops both children: closes their stdin, waits briefly, then kills.
    pub(super) async fn shutdown(&mut self) {
        for p in [self.client.take(), self.server.take()]
            .into_iter()
            .flatten()
        {
            match p {
                Proc::Local {
                    mut child, stdin, ..
                } => {
                    drop(stdin);
                    if tokio::time::timeout(Duration::from_secs(2), child.wait())
                        .await
                        .is_err()
                    {
                        let _ = child.start_kill();
                        let _ = child.wait().await;
                    }
                }
                Proc::Remote(r) => r.close(false).await,
            }
        }
    }

    /// Kills both children at once (interrupt path).
    pub(super) async fn kill(&mut self) {
        for p in [self.client.take(), self.server.take()]
            .into_iter()
            .flatten()
        {
            match p {
                Proc::Local { mut child, .. } => {
                    let _ = child.start_kill();
                    let _ = child.wait().await;
                }
                Proc::Remote(r) => r.close(true).await,
            }
        }
    }
}
