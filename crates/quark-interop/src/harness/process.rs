//! Child processes: free ports, a server that is killed when dropped, and a
//! client run with a hang guard.

use std::collections::HashSet;
use std::fs::File;
use std::io;
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How often children are polled.
const POLL: Duration = Duration::from_millis(20);

/// A UDP port on 127.0.0.1 that was free a moment ago and that this process
/// has not handed out before.
pub fn free_port() -> io::Result<u16> {
    static GIVEN: Mutex<Option<HashSet<u16>>> = Mutex::new(None);
    let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    let given = given.get_or_insert_with(HashSet::new);
    for _ in 0..100 {
        let port = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))?
            .local_addr()?
            .port();
        if given.insert(port) {
            return Ok(port);
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AddrNotAvailable,
        "no fresh UDP port",
    ))
}

/// A child process that is killed (and reaped) when dropped, so a failing
/// or panicking test leaves no orphans.
#[derive(Debug)]
pub struct Guard {
    child: Child,
    /// Where its stdout and stderr go.
    pub log: PathBuf,
}

impl Guard {
    /// Starts `cmd` with stdin closed and stdout + stderr appended to `log`.
    pub fn spawn(mut cmd: Command, log: &Path) -> io::Result<Guard> {
        let out = File::options().create(true).append(true).open(log)?;
        let err = out.try_clone()?;
        let child = cmd
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("cannot start {:?}: {e}", cmd.get_program()),
                )
            })?;
        Ok(Guard {
            child,
            log: log.to_path_buf(),
        })
    }

    /// The exit status, if it has exited.
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        self.child.try_wait()
    }

    /// Waits up to `limit` for the exit; `None` if it had to be killed.
    pub fn wait_for(&mut self, limit: Duration) -> io::Result<Option<ExitStatus>> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait()? {
                return Ok(Some(status));
            }
            if Instant::now() >= deadline {
                self.kill();
                return Ok(None);
            }
            std::thread::sleep(POLL);
        }
    }

    /// What it has written so far.
    pub fn output(&self) -> String {
        std::fs::read(&self.log)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.kill();
        }
    }
}

/// How waiting for a server to listen ended.
#[derive(Debug)]
pub enum Start {
    /// It is listening.
    Ready,
    /// It exited first.
    Exited(ExitStatus),
    /// Neither happened in time.
    TimedOut,
}

/// Waits until the server says `marker` on its output, or failing that has
/// held `addr` for a second while staying alive (should its wording change).
pub fn wait_listening(
    server: &mut Guard,
    marker: &str,
    addr: SocketAddr,
    limit: Duration,
) -> io::Result<Start> {
    let deadline = Instant::now() + limit;
    let mut bound_since = None;
    loop {
        if let Some(status) = server.try_wait()? {
            return Ok(Start::Exited(status));
        }
        if server.output().contains(marker) {
            return Ok(Start::Ready);
        }
        if port_taken(addr) {
            let since = *bound_since.get_or_insert_with(Instant::now);
            if since.elapsed() >= Duration::from_secs(1) {
                return Ok(Start::Ready);
            }
        } else {
            bound_since = None;
        }
        if Instant::now() >= deadline {
            return Ok(Start::TimedOut);
        }
        std::thread::sleep(POLL);
    }
}

fn port_taken(addr: SocketAddr) -> bool {
    matches!(UdpSocket::bind(addr), Err(e) if e.kind() == io::ErrorKind::AddrInUse)
}

/// The last `n` lines of `text`.
pub fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_not_handed_out_twice() {
        let ports: HashSet<u16> = (0..20).map(|_| free_port().unwrap()).collect();
        assert_eq!(ports.len(), 20);
    }

    #[cfg(unix)]
    #[test]
    fn guard_kills_on_drop() {
        let log =
            std::env::temp_dir().join(format!("quark-interop-guard-{}.log", std::process::id()));
        let mut cmd = Command::new("sleep");
        cmd.arg("600");
        let guard = Guard::spawn(cmd, &log).unwrap();
        let pid = guard.child.id();
        drop(guard);
        // Reaped: the pid no longer names our child (kill -0 fails).
        let alive = Command::new("kill")
            .args(["-0", &pid.to_string()])
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(!alive.success());
        let _ = std::fs::remove_file(&log);
    }

    #[cfg(unix)]
    #[test]
    fn detects_early_exit_and_marker() {
        let dir = std::env::temp_dir();
        let addr: SocketAddr = (Ipv4Addr::LOCALHOST, free_port().unwrap()).into();
        let log = dir.join(format!("quark-interop-exit-{}.log", std::process::id()));
        let mut g = Guard::spawn(Command::new("false"), &log).unwrap();
        assert!(matches!(
            wait_listening(&mut g, "never", addr, Duration::from_secs(30)).unwrap(),
            Start::Exited(_)
        ));
        let log2 = dir.join(format!("quark-interop-ready-{}.log", std::process::id()));
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo 'x listening on y' >&2; sleep 600"]);
        let mut g = Guard::spawn(cmd, &log2).unwrap();
        assert!(matches!(
            wait_listening(&mut g, "listening on", addr, Duration::from_secs(30)).unwrap(),
            Start::Ready
        ));
        assert_eq!(tail("a\nb\nc", 2), "b\nc");
        let _ = std::fs::remove_file(&log);
        let _ = std::fs::remove_file(&log2);
    }
}
