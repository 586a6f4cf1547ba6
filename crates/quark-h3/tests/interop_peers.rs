//! Interoperation with two more HTTP/3 stacks, run as child processes:
//! aioquic (`interop/aioquic/h3_peer.py` in the `.venv` Python) and quic-go's
//! http3 package (`${CARGO_TARGET_DIR:-target}/interop/quicgo-h3`), both
//! installed by `interop/setup.sh`. Each one's client against quark-h3's
//! server, and quark-h3's client against each one's server: `GET /bytes/<n>`
//! for several sizes and a `POST /echo`, every body checked by SHA-256.
//!
//! A missing peer fails its tests unless `QUARK_INTEROP_OPTIONAL=1`, which
//! skips them (prints `SKIP: ...`). Overrides: `QUARK_INTEROP_PYTHON` (a
//! Python with aioquic), `QUICGO_H3_BIN`, `CARGO_TARGET_DIR`. A failed test
//! keeps its certificates and the peers' stderr under the system temp dir
//! (`quark-h3-interop-*`), and says where on stderr.

mod common;

use std::fs::File;
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use common::*;
use quark::Endpoint;
use quark::tls::{self, Identity};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::time::timeout;

/// The longest any step may take (a server starting, a client's requests).
const LIMIT: Duration = Duration::from_secs(60);
/// Attempts at starting a server whose port was taken in the meantime.
const START_ATTEMPTS: usize = 5;
/// `GET /bytes/<n>` for each of these.
const SIZES: [usize; 4] = [0, 1, 5_000, 2_000_000];
/// The `POST /echo` body: `data(ECHO_LEN, ECHO_SEED)`.
const ECHO_LEN: usize = 300_000;
const ECHO_SEED: u32 = 5;
/// H3_NO_ERROR, to close a connection when done.
const H3_NO_ERROR: u64 = 0x100;

/// A third-party HTTP/3 stack.
#[derive(Debug, Clone, Copy)]
enum Peer {
    Aioquic,
    QuicGo,
}

impl Peer {
    /// A command that runs this peer (its mode still to be added), or why
    /// it cannot run.
    async fn command(self) -> Result<Command, String> {
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
    async fn command_or_skip(self) -> Option<Command> {
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
    fn picks_port(self) -> bool {
        matches!(self, Peer::QuicGo)
    }
}

/// A test's scratch directory: removed when the test passes, kept (for the
/// logs in it) when it fails.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
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
struct Certs {
    cert: PathBuf,
    key: PathBuf,
    id: Identity,
}

impl Certs {
    fn generate(dir: &Path) -> Certs {
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
struct Process {
    child: Child,
    /// Where its stderr goes.
    log: PathBuf,
}

impl Process {
    /// Starts `cmd` with stdout piped and stderr to `log`.
    fn spawn(mut cmd: Command, log: PathBuf) -> Process {
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
    fn log_tail(&self) -> String {
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
fn free_port() -> u16 {
    let socket = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    socket.local_addr().unwrap().port()
}

/// Starts `peer`'s server (the two routes) on 127.0.0.1; returns it and its
/// port once it prints `ready PORT`. Retries when it exits first (its port
/// may have been taken since we picked it).
async fn start_server(peer: Peer, scratch: &Scratch, certs: &Certs) -> Option<(Process, u16)> {
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
fn expected_lines() -> Vec<String> {
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
async fn run_client(
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

/// A quark-h3 server of the two routes on 127.0.0.1 (any port) with `id`.
fn quark_h3_server(id: &Identity) -> (Endpoint, QpackStats) {
    let config = tls::server_config(id, &[ALPN]).unwrap();
    let server = Endpoint::server(config, (Ipv4Addr::LOCALHOST, 0).into()).unwrap();
    let stats = spawn_quark_h3_server_stats(&server);
    (server, stats)
}

/// `peer`'s client against a quark-h3 server.
async fn peer_client_against_quark_server(peer: Peer) {
    if peer.command_or_skip().await.is_none() {
        return;
    }
    let scratch = Scratch::new(&format!("{peer:?}-client"));
    let certs = Certs::generate(&scratch.0);
    let (server, stats) = quark_h3_server(&certs.id);
    let port = server.local_addr().unwrap().port();
    let Some(lines) = run_client(peer, &scratch, &certs, port).await else {
        return;
    };
    assert_eq!(lines, expected_lines(), "{peer:?} client's results");
    // Our decoder's table: aioquic's encoder (pylsqpack) fills it, quic-go's
    // has no dynamic table. Recorded once the connection has ended.
    let deadline = tokio::time::Instant::now() + LIMIT;
    while stats.lock().unwrap().is_empty() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (_, _, theirs) = stats.lock().unwrap()[0];
    match peer {
        Peer::Aioquic => assert!(theirs > 0, "aioquic inserted nothing"),
        Peer::QuicGo => assert_eq!(theirs, 0),
    }
    server.close(0, b"done");
}

/// quark-h3's client against `peer`'s server.
async fn quark_client_against_peer_server(peer: Peer) {
    if peer.command_or_skip().await.is_none() {
        return;
    }
    let scratch = Scratch::new(&format!("{peer:?}-server"));
    let certs = Certs::generate(&scratch.0);
    let Some((server, port)) = start_server(peer, &scratch, &certs).await else {
        return;
    };
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let exchanges = quark_client_exchanges(addr, &certs.id);
    let Ok((ours, acked, theirs)) = timeout(LIMIT, exchanges).await else {
        panic!(
            "quark-h3 client against {peer:?}: hung\n{}",
            server.log_tail()
        );
    };
    // Both ways with aioquic: our :authority went into its table and was
    // acknowledged, and its encoder inserted into ours. quic-go has none.
    match peer {
        Peer::Aioquic => {
            assert!(
                ours > 0 && theirs > 0,
                "inserts: ours {ours}, theirs {theirs}"
            );
            assert_eq!(acked, ours, "aioquic acknowledged our inserts");
        }
        Peer::QuicGo => assert_eq!((ours, theirs), (0, 0)),
    }
}

/// The GETs and the POST, on one connection, each checked by SHA-256.
async fn quark_client_exchanges(addr: SocketAddr, id: &Identity) -> (u64, u64, u64) {
    let client = quark_h3_client(addr, id).await;
    for n in SIZES {
        get_bytes(&client, n).await;
    }
    echo(&client, &data(ECHO_LEN, ECHO_SEED), ECHO_LEN, true).await;
    client.connection().close(H3_NO_ERROR, b"done");
    client.qpack_inserts()
}

#[tokio::test]
async fn aioquic_client_against_quark_server() {
    peer_client_against_quark_server(Peer::Aioquic).await;
}

#[tokio::test]
async fn quark_client_against_aioquic_server() {
    quark_client_against_peer_server(Peer::Aioquic).await;
}

#[tokio::test]
async fn quicgo_client_against_quark_server() {
    peer_client_against_quark_server(Peer::QuicGo).await;
}

#[tokio::test]
async fn quark_client_against_quicgo_server() {
    quark_client_against_peer_server(Peer::QuicGo).await;
}
