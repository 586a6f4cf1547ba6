//! `quark serve`'s fleet options: QUIC-LB connection IDs, keys shared from a
//! key file (reloaded on SIGHUP), and `--processes N`, a launcher that runs N
//! server processes on one port with datagrams steered to the process that
//! owns their connection (docs/FLEET.md).

mod launch;

pub(crate) use launch::launch;

use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, bail};
use clap::Args;
use quark::fleet::KeyFile;
use quark::fleet::quic_lb::{CidEncoder, LbConfig};
use quark::{Endpoint, EndpointConfig, ServerConfig};
use quark_udp::reuseport;

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

pub(super) fn write_private(path: &Path, text: &str) -> anyhow::Result<()> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
