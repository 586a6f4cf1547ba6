//! Third-party HTTP/3 peers run as child processes (aioquic's
//! `interop/aioquic/h3_peer.py`, quic-go's `quicgo-h3`): starting their
//! servers and running their clients, with certificates and logs in a scratch
//! directory. Shared by quark-h3's and h3-quark's interop tests.

use std::fs::File;
use std::net::{Ipv4Addr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use quark::tls::Identity;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::time::timeout;

use super::{data, sha};

/// The longest any step may take (a server starting, a client's requests).
pub(crate) const LIMIT: Duration = Duration::from_secs(60);
/// Attempts at starting a server whose port was taken in the meantime.
pub(crate) const START_ATTEMPTS: usize = 5;
/// `GET /bytes/<n>` for each of these.
pub(crate) const SIZES: [usize; 4] = [0, 1, 5_000, 2_000_000];
/// The `POST /echo` body: `data(ECHO_LEN, ECHO_SEED)`.
pub(crate) const ECHO_LEN: usize = 300_000;
pub(crate) const ECHO_SEED: u32 = 5;
/// H3_NO_ERROR, to close a connection when done.
pub(crate) const H3_NO_ERROR: u64 = 0x100;

/// A third-party HTTP/3 stack.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Peer {
    Aioquic,
    QuicGo,
}

impl Peer {
    /// A command that runs this peer (its mode still to be added), or why
    /// it cannot run.
    pub(crate) async fn command(self) -> Result<Command, String> {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        match self {
            Peer::Aioquic => {
                let python = std::env::var_os("QUARK_INTEROP_PYTHON")
                    .map_or_else(|| repo.join(".venv/bin/python"), PathBuf::from);
                let imports = Command::new(&python)
                    .args(["-c", "import aioquic"])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .kill_on_drop(true)
                    .status();
                let imports = timeout(LIMIT, imports).await;
                if !matches!(imports, Ok(Ok(s)) if s.success()) {
                    return Err(format!(
                        "{} cannot import aioquic: run interop/setup.sh (or set QUARK_INTEROP_PYTHON)",
                        python.display()
                    ));
                }
                let mut cmd = Command::new(python);
                cmd.arg(repo.join("interop/aioquic/h3_peer.py"));
                Ok(cmd)
            }
            Peer::QuicGo => {
                let target = std::env::var_os("CARGO_TARGET_DIR")
                    .map_or_else(|| repo.join("target"), PathBuf::from);
                let bin = std::env::var_os("QUICGO_H3_BIN")
                    .map_or_else(|| target.join("interop/quicgo-h3"), PathBuf::from);
                if !bin.is_file() {
                    return Err(format!(
                        "no quic-go HTTP/3 peer at {}: run interop/setup.sh (or set QUICGO_H3_BIN)",
                        bin.display()
                    ));
                }
                Ok(Command::new(bin))
            }
        }
    }

    /// The peer's command, or `None` when it is missing and
    /// `QUARK_INTEROP_OPTIONAL=1` (the test then returns). Panics when it is
    /// missing otherwise.
    pub(crate) async fn command_or_skip(self) -> Option<Command> {
        match self.command().await {
            Ok(cmd) => Some(cmd),
            Err(why) if std::env::var("QUARK_INTEROP_OPTIONAL").is_ok_and(|v| v == "1") => {
                println!("SKIP: {self:?}: {why}");
                None
            }
            Err(why) => panic!("{self:?}: {why} (set QUARK_INTEROP_OPTIONAL=1 to skip instead)"),
        }
    }

    /// Whether this peer's server picks its own port (`--port 0`).
    pub(crate) fn picks_port(self) -> bool {
        matches!(self, Peer::QuicGo)
    }
}

/// A test's scratch directory: removed when the test passes, kept (for the
/// logs in it) when it fails.
pub(crate) struct Scratch(pub(crate) PathBuf);

impl Scratch {
    pub(crate) fn new(name: &str) -> Scratch {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!(
            "quark-h3-interop-{}-{n}-{name}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("kept the certificates and logs in {}", self.0.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// A self-signed certificate for `localhost` and 127.0.0.1, as PEM files
/// (the peers') and as a quark identity.
pub(crate) struct Certs {
    pub(crate) cert: PathBuf,
    pub(crate) key: PathBuf,
    pub(crate) id: Identity,
}

impl Certs {
    pub(crate) fn generate(dir: &Path) -> Certs {
        let names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
        let certified = rcgen::generate_simple_self_signed(names).unwrap();
        let cert = dir.join("cert.pem");
        let key = dir.join("key.pem");
        std::fs::write(&cert, certified.cert.pem()).unwrap();
        std::fs::write(&key, certified.signing_key.serialize_pem()).unwrap();
        let id = Identity::from_pem_files(&cert, &key).unwrap();
        Certs { cert, key, id }
    }
}

/// A peer's process: killed when dropped, on every path out of a test.
pub(crate) struct Process {
    pub(crate) child: Child,
    /// Where its stderr goes.
    log: PathBuf,
}

impl Process {
    /// Starts `cmd` with stdout piped and stderr to `log`.
    pub(crate) fn spawn(mut cmd: Command, log: PathBuf) -> Process {
        let stderr = File::create(&log).unwrap();
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {cmd:?}: {e}"));
        Process { child, log }
    }

    /// The end of its stderr, for a failure message.
    pub(crate) fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let start = text.len().saturating_sub(4000);
        let start = (start..text.len())
            .find(|&i| text.is_char_boundary(i))
            .unwrap_or(text.len());
        format!("--- {} ---\n{}", self.log.display(), &text[start..])
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
        // Reap it if it is already gone; tokio reaps it later otherwise.
        let _ = self.child.try_wait();
    }
}

/// A UDP port on 127.0.0.1 that was free a moment ago.
pub(crate) fn free_port() -> u16 {
    let socket = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    socket.local_addr().unwrap().port()
}

/// Starts `peer`'s server (the two routes) on 127.0.0.1; returns it and its
/// port once it prints `ready PORT`. Retries when it exits first (its port
/// may have been taken since we picked it).
pub(crate) async fn start_server(
    peer: Peer,
    scratch: &Scratch,
    certs: &Certs,
) -> Option<(Process, u16)> {
    let mut tails = Vec::new();
    for attempt in 0..START_ATTEMPTS {
        let mut cmd = peer.command_or_skip().await?;
        let port = if peer.picks_port() { 0 } else { free_port() };
        cmd.arg("server")
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .arg("--cert")
            .arg(&certs.cert)
            .arg("--key")
            .arg(&certs.key);
        let log = scratch.0.join(format!("{peer:?}-server-{attempt}.log"));
        let mut server = Process::spawn(cmd, log);
        let stdout = server.child.stdout.take().unwrap();
        let mut line = String::new();
        let mut stdout = BufReader::new(stdout);
        match timeout(LIMIT, stdout.read_line(&mut line)).await {
            Err(_) => panic!(
                "{peer:?} server: not ready within {LIMIT:?}\n{}",
                server.log_tail()
            ),
            Ok(Ok(n)) if n > 0 => {
                let ready = line
                    .trim()
                    .strip_prefix("ready ")
                    .and_then(|p| p.parse().ok());
                let Some(port) = ready else {
                    panic!(
                        "{peer:?} server: said {line:?}, not `ready PORT`\n{}",
                        server.log_tail()
                    );
                };
                return Some((server, port));
            }
            // Its stdout ended: it exited, probably for want of the port.
            Ok(_) => tails.push(server.log_tail()),
        }
    }
    panic!(
        "{peer:?} server: did not start in {START_ATTEMPTS} attempts\n{}",
        tails.join("\n")
    );
}

/// The lines a peer's client prints for our requests (see `run_client`),
/// answered by quark-h3's two routes (its /echo adds the trailer x-sha256).
pub(crate) fn expected_lines() -> Vec<String> {
    let mut lines: Vec<String> = SIZES
        .iter()
        .map(|&n| format!("GET /bytes/{n} 200 {} {n} -", sha(&data(n, n as u32))))
        .collect();
    let echo = sha(&data(ECHO_LEN, ECHO_SEED));
    lines.push(format!("POST /echo 200 {echo} {ECHO_LEN} {echo}"));
    lines
}

/// Runs `peer`'s client against the server on 127.0.0.1:`port` (all the
/// requests on one connection) and returns what it printed, one line per
/// request: `METHOD PATH STATUS SHA256 LENGTH TRAILER`.
pub(crate) async fn run_client(
    peer: Peer,
    scratch: &Scratch,
    certs: &Certs,
    port: u16,
) -> Option<Vec<String>> {
    let mut cmd = peer.command_or_skip().await?;
    cmd.arg("client").arg("--ca").arg(&certs.cert);
    cmd.args(["--timeout", &LIMIT.as_secs().to_string()]);
    for n in SIZES {
        cmd.arg(format!("https://127.0.0.1:{port}/bytes/{n}"));
    }
    cmd.args(["--post", &format!("https://127.0.0.1:{port}/echo")]);
    cmd.args(["--data-len", &ECHO_LEN.to_string()]);
    cmd.args(["--seed", &ECHO_SEED.to_string()]);
    let mut client = Process::spawn(cmd, scratch.0.join(format!("{peer:?}-client.log")));
    let mut stdout = client.child.stdout.take().unwrap();
    let run = async {
        let mut out = String::new();
        stdout.read_to_string(&mut out).await.unwrap();
        (out, client.child.wait().await.unwrap())
    };
    // A little longer than the client's own limit, so it can report first.
    let Ok((out, status)) = timeout(LIMIT + Duration::from_secs(10), run).await else {
        panic!("{peer:?} client: hung\n{}", client.log_tail());
    };
    assert!(
        status.success(),
        "{peer:?} client: {status}; printed {out:?}\n{}",
        client.log_tail()
    );
    Some(out.lines().map(str::to_string).collect())
}
