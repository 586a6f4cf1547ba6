//! `quark serve --processes N`: the launcher of N server processes on one
//! port, steered by connection ID.

use std::ffi::OsString;
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use anyhow::{Context, bail};
use quark::fleet::KeyFile;
use quark_udp::reuseport::{self, CidSteering, Steering};

use super::write_private;

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
}
