//! `quark agent`: runs lab servers and clients on its host for a remote
//! `quark bench`, so a cell's two sides can sit on two machines.
//!
//! The control channel is TLS (the agent's certificate is self-signed and made
//! at start) over TCP, one JSON message per line, every line bounded. Each
//! session is authenticated both ways with a shared token before anything
//! else: the agent sends a nonce, the driver answers with
//! HMAC-SHA256(token, "driver" | agent nonce | driver nonce | SHA-256 of the
//! agent's certificate as the driver saw it) and the agent proves itself with
//! the same MAC over "agent". The token never crosses the wire, and a relay in
//! the middle (which must show its own certificate) cannot reuse either proof:
//! that channel binding is why the driver needs no pinned certificate.
//!
//! After authentication a session either measures (`ping`, `probe`) or runs
//! one lab child (`spawn`: only `lab-server` and `lab-client`), relaying its
//! stdin and stdout lines: the orchestrator drives a remote child with the
//! same line protocol as a local one ([`crate::child`]). When the session
//! ends the child's stdin closes (it exits); a lost session kills it.

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};

mod client;
mod server;
mod tls;

pub use client::{Placement, Remote, RemoteAgent, SideHost, probe_rtt};
pub use server::{AgentOptions, hostname, serve};

/// Longest control line: a client's `spawn` carries its phases as JSON.
pub const MAX_LINE: usize = 1 << 20;

/// Longest line before authentication (the `auth` message is ~200 bytes).
const MAX_AUTH_LINE: usize = 1024;

/// Shortest token accepted.
pub const MIN_TOKEN: usize = 16;

/// Protocol label bound into every MAC.
const LABEL: &[u8] = b"quark-agent-v1";

/// Children the agent may start: nothing else runs.
pub const ALLOWED: &[&str] = &["lab-server", "lab-client"];

/// Messages from the agent.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "kebab-case")]
pub enum FromAgent {
    /// First message: a fresh nonce.
    Hello {
        /// 32 random bytes, hex.
        nonce: String,
    },
    /// The driver's proof was right; the agent's own proof and who it is.
    Welcome {
        /// HMAC, hex.
        proof: String,
        /// The agent host's name.
        host: String,
    },
    /// Refused (wrong token, bad request); the session then closes.
    Refused {
        /// Why.
        message: String,
    },
    /// The child started.
    Spawned,
    /// A line the child printed on stdout.
    Out {
        /// The line.
        line: String,
    },
    /// The child exited.
    Exit {
        /// Exit status.
        status: String,
        /// Its last stderr lines.
        stderr: Vec<String>,
    },
    /// Answer to a ping.
    Pong,
    /// TCP connect times to a probed address, milliseconds.
    Rtt {
        /// One per attempt that connected.
        ms: Vec<f64>,
    },
}

/// Messages from the driver.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "kebab-case")]
pub enum ToAgent {
    /// The driver's nonce and proof.
    Auth {
        /// 32 random bytes, hex.
        nonce: String,
        /// HMAC, hex.
        proof: String,
    },
    /// Start a lab child.
    Spawn {
        /// `lab-server` or `lab-client`.
        sub: String,
        /// Its arguments; `--cert` and `--key` are replaced by files the agent
        /// writes from `cert` and `key`.
        args: Vec<String>,
        /// The lab certificate (DER, hex).
        cert: String,
        /// The lab key (PKCS#8 DER, hex), servers only.
        key: Option<String>,
    },
    /// A line for the child's stdin.
    In {
        /// The line.
        line: String,
    },
    /// Kill the child now.
    Kill,
    /// Round trip over the control channel.
    Ping,
    /// Time TCP connects from the agent's host to `addr` (the path RTT).
    Probe {
        /// Where to.
        addr: std::net::SocketAddr,
        /// Attempts (at most 20).
        count: u32,
    },
}

/// The MAC one side sends: over the side's name, both nonces and the
/// certificate fingerprint.
fn proof(token: &[u8], side: &str, agent: &[u8], driver: &[u8], cert_fp: &[u8]) -> ring::hmac::Tag {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, token);
    let mut ctx = ring::hmac::Context::with_key(&key);
    for part in [LABEL, side.as_bytes(), agent, driver, cert_fp] {
        ctx.update(&(part.len() as u32).to_be_bytes());
        ctx.update(part);
    }
    ctx.sign()
}

/// Checks a proof in constant time.
fn verify(
    token: &[u8],
    side: &str,
    agent: &[u8],
    driver: &[u8],
    cert_fp: &[u8],
    got: &[u8],
) -> bool {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, token);
    let mut msg = Vec::new();
    for part in [LABEL, side.as_bytes(), agent, driver, cert_fp] {
        msg.extend_from_slice(&(part.len() as u32).to_be_bytes());
        msg.extend_from_slice(part);
    }
    ring::hmac::verify(&key, &msg, got).is_ok()
}

fn fingerprint(cert: &[u8]) -> Vec<u8> {
    ring::digest::digest(&ring::digest::SHA256, cert)
        .as_ref()
        .to_vec()
}

fn nonce() -> std::io::Result<[u8; 32]> {
    let mut n = [0u8; 32];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut n)
        .map_err(|_| std::io::Error::other("no randomness"))?;
    Ok(n)
}

/// Reads a token file: its trimmed contents, at least [`MIN_TOKEN`] bytes.
pub fn read_token(path: &std::path::Path) -> anyhow::Result<Vec<u8>> {
    let text = std::fs::read(path)
        .map_err(|e| anyhow::anyhow!("reading token file {}: {e}", path.display()))?;
    use std::os::unix::fs::PermissionsExt;
    if std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o077 != 0) {
        tracing::warn!(
            "token file {} is readable by others (chmod 600 it)",
            path.display()
        );
    }
    let token = text.trim_ascii().to_vec();
    if token.len() < MIN_TOKEN {
        anyhow::bail!(
            "token in {} is shorter than {MIN_TOKEN} bytes",
            path.display()
        );
    }
    Ok(token)
}

/// TCP keepalive on a control connection: a peer host that vanishes without
/// a reset (power, network) is noticed in about 10 s, not at the cell timeout.
fn keepalive(tcp: &tokio::net::TcpStream) {
    let ka = socket2::TcpKeepalive::new()
        .with_time(std::time::Duration::from_secs(4))
        .with_interval(std::time::Duration::from_secs(2))
        .with_retries(3);
    let _ = socket2::SockRef::from(tcp).set_tcp_keepalive(&ka);
    let _ = tcp.set_nodelay(true);
}

/// Reads one bounded line and parses it; `None` at end of stream.
async fn read_msg<R: AsyncRead + Unpin, T: for<'de> Deserialize<'de>>(
    r: &mut BufReader<R>,
) -> std::io::Result<Option<T>> {
    read_bounded(r, MAX_LINE).await
}

/// Reads one line of at most `max` bytes and parses it; `None` at end of stream.
async fn read_bounded<R: AsyncRead + Unpin, T: for<'de> Deserialize<'de>>(
    r: &mut BufReader<R>,
    max: usize,
) -> std::io::Result<Option<T>> {
    let mut buf = Vec::new();
    let n = (&mut *r)
        .take(max as u64 + 1)
        .read_until(b'\n', &mut buf)
        .await?;
    if n == 0 {
        return Ok(None);
    }
    if buf.last() != Some(&b'\n') {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "control line too long or cut short",
        ));
    }
    serde_json::from_slice(&buf)
        .map(Some)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// Writes one message line and flushes.
async fn write_msg<W: AsyncWrite + Unpin, T: Serialize>(w: &mut W, msg: &T) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(msg).map_err(std::io::Error::other)?;
    line.push(b'\n');
    w.write_all(&line).await?;
    w.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn long_or_bad_lines_are_errors() {
        let long = vec![b'x'; MAX_LINE + 10];
        let mut r = BufReader::new(&long[..]);
        assert!(read_msg::<_, ToAgent>(&mut r).await.is_err());
        let mut r = BufReader::new(&b"{\"t\":\"rm -rf\"}\n"[..]);
        assert!(read_msg::<_, ToAgent>(&mut r).await.is_err());
        let mut r = BufReader::new(&b"{\"t\":\"ping\"}\n"[..]);
        assert!(matches!(read_msg(&mut r).await, Ok(Some(ToAgent::Ping))));
        assert!(read_msg::<_, ToAgent>(&mut r).await.unwrap().is_none());
    }

    #[test]
    fn proofs_bind_side_nonces_and_certificate() {
        let t = b"0123456789abcdef";
        let p = proof(t, "driver", b"a", b"d", b"fp");
        assert!(verify(t, "driver", b"a", b"d", b"fp", p.as_ref()));
        assert!(!verify(t, "agent", b"a", b"d", b"fp", p.as_ref()));
        assert!(!verify(t, "driver", b"a", b"d", b"other", p.as_ref()));
        assert!(!verify(t, "driver", b"b", b"d", b"fp", p.as_ref()));
        assert!(!verify(
            b"0123456789abcdeX",
            "driver",
            b"a",
            b"d",
            b"fp",
            p.as_ref()
        ));
    }
}
