//! `quark serve`'s fleet options: QUIC-LB connection IDs, keys shared from a
//! key file (reloaded on SIGHUP), and `--processes N`, a launcher that runs N
//! server processes on one port with datagrams steered to the process that
//! owns their connection (docs/FLEET.md).

use std::ffi::OsString;
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, bail};
use clap::Args;
use quark::fleet::KeyFile;
use quark::fleet::quic_lb::{CidEncoder, LbConfig};
use quark::{Endpoint, EndpointConfig, ServerConfig};
use quark_udp::reuseport::{self, CidSteering, Steering};

/// Fleet options of `quark serve`.
#[derive(Args, Debug, Clone)]
pub(crate) struct FleetArgs {
    /// Shared keys (stateless reset, Retry/NEW_TOKEN tokens, TLS session
    /// tickets) from FILE: lines `KIND ID HEX`, the first line of a kind is
    /// current, later ones are still accepted (rotation). Servers with the
    /// same file accept each other's tokens and tickets. SIGHUP reloads the
    /// token and ticket keys. Format: docs/FLEET.md.
    #[arg(long, value_name = "FILE")]
    pub(crate) key_file: Option<PathBuf>,
    /// Write a new key file with random keys to FILE (mode 0600) and exit.
    #[arg(long, value_name = "FILE")]
    pub(crate) write_key_file: Option<PathBuf>,
    /// Issue QUIC-LB connection IDs (draft-ietf-quic-load-balancers) naming
    /// this server ID (hex, 1..15 bytes), for a CID-aware load balancer.
    #[arg(long, value_name = "HEX")]
    pub(crate) quic_lb_server_id: Option<String>,
    /// QUIC-LB: 16-byte AES-128 key (hex) shared with the load balancer:
    /// encrypted IDs. Without it the IDs are plaintext (anyone on the path
    /// sees the server ID).
    #[arg(long, value_name = "HEX")]
    pub(crate) quic_lb_key: Option<String>,
    /// QUIC-LB: nonce bytes per ID (4..; server ID + nonce <= 19).
    #[arg(long, default_value_t = 8)]
    pub(crate) quic_lb_nonce_len: usize,
    /// QUIC-LB: config rotation codepoint (0..6), the IDs' first three bits.
    #[arg(long, default_value_t = 0)]
    pub(crate) quic_lb_rotation: u8,
    /// Run N server processes on the --listen port (SO_REUSEPORT), each
    /// datagram steered to the process that owns its connection by the
    /// server ID in its connection ID (an eBPF program, classic BPF without
    /// root), so clients whose address changes (NAT rebinding) stay with
    /// their process. The processes share keys (--key-file, or fresh ones)
    /// and a certificate; no TCP side.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=255))]
    pub(crate) processes: u16,
    /// Internal (--processes): serve on this inherited socket descriptor.
    #[arg(long, hide = true)]
    pub(crate) inherit_socket: Option<i32>,
}

fn hex(s: &str, what: &str) -> anyhow::Result<Vec<u8>> {
    if s.len() % 2 != 0 || !s.is_ascii() {
        bail!("{what}: '{s}' is not hex");
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).with_context(|| format!("{what}: '{s}'")))
        .collect()
}

/// The QUIC-LB encoder the options ask for.
fn quic_lb(args: &FleetArgs) -> anyhow::Result<Option<Arc<CidEncoder>>> {
    let Some(sid) = &args.quic_lb_server_id else {
        if args.quic_lb_key.is_some() {
            bail!("--quic-lb-key needs --quic-lb-server-id");
        }
        return Ok(None);
    };
    let sid = hex(sid, "--quic-lb-server-id")?;
    let key = match &args.quic_lb_key {
        Some(k) => Some(
            <[u8; 16]>::try_from(hex(k, "--quic-lb-key")?)
                .map_err(|_| anyhow::anyhow!("--quic-lb-key must be 16 bytes (32 hex digits)"))?,
        ),
        None => None,
    };
    let config = LbConfig::new(
        args.quic_lb_rotation,
        sid.len(),
        args.quic_lb_nonce_len,
        key,
    )?;
    Ok(Some(Arc::new(CidEncoder::new(config, &sid)?)))
}

/// Applies the fleet options to the endpoint's and server's configuration;
/// returns the key file read, if any.
pub(crate) fn apply(
    args: &FleetArgs,
    workers: u16,
    endpoint: &mut EndpointConfig,
    server: &mut ServerConfig,
) -> anyhow::Result<Option<KeyFile>> {
    endpoint.quic_lb = quic_lb(args)?;
    if endpoint.quic_lb.is_some() && workers > 1 {
        bail!("--quic-lb-server-id and --workers: use --processes instead of --workers");
    }
    let Some(path) = &args.key_file else {
        return Ok(None);
    };
    if server.zero_rtt {
        // Shared tickets are stateless: one could be replayed to each server
        // of the fleet, and 0-RTT data with it (SECURITY.md).
        bail!("--0rtt and --key-file together are not supported (replayable early data)");
    }
    let keys = KeyFile::load(path).with_context(|| format!("--key-file {}", path.display()))?;
    keys.apply(endpoint, server);
    Ok(Some(keys))
}

/// `--key-file`: on SIGHUP read the file again and accept new connections
/// with its token and ticket keys (the reset key stays until a restart).
pub(crate) fn reload_on_sighup(args: &FleetArgs, endpoint: Endpoint, base: ServerConfig) {
    let Some(path) = args.key_file.clone() else {
        return;
    };
    let Ok(mut hup) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) else {
        return;
    };
    tokio::spawn(async move {
        while hup.recv().await.is_some() {
            match KeyFile::load(&path) {
                Ok(keys) => {
                    let mut config = base.clone();
                    keys.apply_server(&mut config);
                    endpoint.set_server_config(config);
                    eprintln!("reloaded keys from {} ({keys:?})", path.display());
                }
                Err(e) => eprintln!("key file not reloaded: {e}"),
            }
        }
    });
}

/// `--write-key-file`.
pub(crate) fn write_key_file(path: &Path) -> anyhow::Result<()> {
    write_private(path, &KeyFile::generate())?;
    eprintln!("wrote new keys to {}", path.display());
    Ok(())
}

fn write_private(path: &Path, text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    file.write_all(text.as_bytes())?;
    Ok(())
}

/// The socket to serve on when this process is one of a `--processes` fleet.
pub(crate) fn inherited_socket(args: &FleetArgs) -> anyhow::Result<Option<quark_udp::UdpSocket>> {
    let Some(fd) = args.inherit_socket else {
        return Ok(None);
    };
    // One of a launcher's processes: end with the launcher, even if it is
    // killed outright (SIGKILL gives it no chance to stop us).
    nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGTERM)?;
    if nix::unistd::getppid().as_raw() == 1 {
        bail!("--inherit-socket: the launcher is gone");
    }
    let socket = reuseport::inherited_udp_socket(fd).context("--inherit-socket")?;
    Ok(Some(quark_udp::UdpSocket::from_std(socket)?))
}

/// Arguments without `flag` (and its value when `value`).
fn without(args: &[OsString], flag: &str, value: bool) -> Vec<OsString> {
    let mut out = Vec::new();
    let mut skip = false;
    for a in args {
        if std::mem::take(&mut skip) {
            continue;
        }
        let s = a.to_string_lossy();
        if s == flag {
            skip = value;
            continue;
        }
        if value && s.starts_with(&format!("{flag}=")) {
            continue;
        }
        out.push(a.clone());
    }
    out
}

/// `--processes N`: binds N sockets on the address, attaches the steering
/// program, and runs `quark serve` N times, process I on socket I with
/// QUIC-LB server ID I (plaintext, one byte: the program reads it). Ends
/// when one of them does (stopping the others), or on SIGTERM/Ctrl-C.
pub(crate) async fn launch(
    args: &crate::serve::ServeArgs,
    listen: std::net::SocketAddr,
) -> anyhow::Result<()> {
    let fleet = &args.fleet;
    if fleet.quic_lb_server_id.is_some() || fleet.quic_lb_key.is_some() {
        bail!("--processes gives each process its QUIC-LB server ID (plaintext, one byte)");
    }
    if args.workers > 1 || fleet.inherit_socket.is_some() {
        bail!("--processes runs single-threaded processes: drop --workers");
    }
    let n = fleet.processes;
    let sockets = quark_udp::bind_std_reuseport(listen, usize::from(n))
        .with_context(|| format!("cannot listen on {listen}"))?;
    let addr = sockets[0].local_addr()?;
    // The server ID is the DCID's byte 1 (after the first octet).
    let steer = CidSteering {
        dcid_byte: 1,
        sockets: n as u8,
    };
    // QUARK_FLEET_STEERING=off leaves the kernel's 4-tuple hash in charge: a
    // control for tests and measurements (rebound clients then get lost).
    let how = if std::env::var_os("QUARK_FLEET_STEERING").is_some_and(|v| v == "off") {
        None
    } else {
        Some(reuseport::attach(sockets[0].as_fd(), steer).context("steering program")?)
    };
    // One certificate and one key file for all: a private directory for them.
    let dir = std::env::temp_dir().join(format!("quark-fleet-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))?;
    let _cleanup = RemoveDir(dir.clone());
    let mut base: Vec<OsString> = std::env::args_os().skip(1).collect();
    base = without(&base, "--processes", true);
    base = without(&base, "--write-cert", true);
    base = without(&base, "--listen", true);
    if args.cert.is_none() {
        let identity = quark::tls::Identity::self_signed(&["localhost", "127.0.0.1", "::1"])?;
        eprintln!(
            "certificate SHA-256 fingerprint: {}",
            identity.fingerprint()
        );
        let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
        write_private(&cert, &identity.cert_pem())?;
        write_private(&key, &identity.key_pem())?;
        base.extend(["--cert".into(), cert.into(), "--key".into(), key.into()]);
        if let Some(path) = &args.write_cert {
            std::fs::write(path, identity.cert_pem())
                .with_context(|| format!("--write-cert {}", path.display()))?;
        }
    }
    if fleet.key_file.is_none() {
        let keys = dir.join("fleet.keys");
        write_private(&keys, &KeyFile::generate())?;
        base.extend(["--key-file".into(), keys.into()]);
    }
    if !args.no_tcp {
        base.push("--no-tcp".into());
    }
    let how = match how {
        Some(Steering::Ebpf) => "steered by connection ID (eBPF)",
        Some(Steering::Classic) => "steered by connection ID (classic BPF)",
        None => "NOT steered: QUARK_FLEET_STEERING=off",
    };
    eprintln!("fleet of {n} processes on {addr}, {how}");
    let exe = std::env::current_exe()?;
    let mut children = Vec::new();
    for (i, socket) in sockets.iter().enumerate() {
        // Only this child inherits this socket: inheritable just for its spawn.
        reuseport::set_inheritable(socket.as_fd(), true)?;
        let child = tokio::process::Command::new(&exe)
            .args(&base)
            .arg("--listen")
            .arg(addr.to_string())
            .arg("--inherit-socket")
            .arg(socket.as_raw_fd().to_string())
            .arg("--quic-lb-server-id")
            .arg(format!("{i:02x}"))
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn();
        reuseport::set_inheritable(socket.as_fd(), false)?;
        let mut child = child.context("cannot start a server process")?;
        if let Some(err) = child.stderr.take() {
            tokio::spawn(forward_lines(err));
        }
        children.push(child);
    }
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let waits = children.iter_mut().map(|c| Box::pin(c.wait()));
    let first = tokio::select! {
        (status, i, _) = futures_select_all(waits) => Some((i, status)),
        _ = tokio::signal::ctrl_c() => None,
        _ = term.recv() => None,
    };
    for child in &children {
        if let Some(pid) = child.id() {
            // Our own children, by pid.
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
        }
    }
    for child in &mut children {
        let _ = child.wait().await;
    }
    if let Some((i, status)) = first {
        bail!("server process {i} ended: {status:?}");
    }
    Ok(())
}

/// Copies a child's stderr to ours a whole line per write, so the lines of
/// several processes never interleave mid-line.
async fn forward_lines(err: tokio::process::ChildStderr) {
    use std::io::Write;
    use tokio::io::AsyncBufReadExt;
    let mut lines = tokio::io::BufReader::new(err).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let _ = std::io::stderr()
            .lock()
            .write_all(format!("{line}\n").as_bytes());
    }
}

/// Resolves when the first of `futures` does, with its output and index.
async fn futures_select_all<F: std::future::Future + Unpin>(
    futures: impl Iterator<Item = F>,
) -> (F::Output, usize, ()) {
    let mut futures: Vec<F> = futures.collect();
    std::future::poll_fn(|cx| {
        for (i, f) in futures.iter_mut().enumerate() {
            if let std::task::Poll::Ready(out) = std::pin::Pin::new(f).poll(cx) {
                return std::task::Poll::Ready((out, i, ()));
            }
        }
        std::task::Poll::Pending
    })
    .await
}

/// Removes the launcher's private directory when it ends.
struct RemoveDir(PathBuf);

impl Drop for RemoveDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_flags_with_values() {
        let args: Vec<OsString> = ["serve", "--processes", "3", "--root", "x", "--processes=2"]
            .into_iter()
            .map(Into::into)
            .collect();
        let out = without(&args, "--processes", true);
        assert_eq!(out, ["serve", "--root", "x"].map(OsString::from));
    }

    #[test]
    fn quic_lb_options() {
        let mut args = FleetArgs {
            key_file: None,
            write_key_file: None,
            quic_lb_server_id: Some("0a0b".into()),
            quic_lb_key: Some("00112233445566778899aabbccddeeff".into()),
            quic_lb_nonce_len: 6,
            quic_lb_rotation: 1,
            processes: 1,
            inherit_socket: None,
        };
        let lb = quic_lb(&args).unwrap().unwrap();
        assert_eq!(lb.cid_len(), 9);
        assert!(lb.config().is_encrypted());
        args.quic_lb_key = Some("0011".into());
        assert!(quic_lb(&args).is_err());
        args.quic_lb_key = None;
        args.quic_lb_server_id = Some("zz".into());
        assert!(quic_lb(&args).is_err());
    }
}
