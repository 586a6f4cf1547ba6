//! Emulated networks for `quark bench --net PROFILE`: quark-netem's engine
//! between the lab's server and client, either at layer 3 (`quark link up`:
//! the server in one network namespace, the client in another, so TCP and QUIC
//! cross identical impairments) or, where namespaces can't be made, as a UDP
//! relay (`quark relay`) for the UDP-based protocols only.

use std::net::SocketAddr;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use quark_netem::Profile;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::child::PARENT_ENV;

/// No emulation: straight over loopback.
pub const LOOPBACK: &str = "loopback";
/// No emulation: two namespaces joined by a veth pair, every side on the kernel.
pub const VETH: &str = "veth";
/// Like [`VETH`], with quark's endpoints on AF_XDP (other protocols stay on the kernel).
pub const VETH_XDP: &str = "veth-xdp";
/// Address of the server's namespace in link mode.
pub const LINK_SERVER_ADDR: [u8; 4] = [10, 77, 0, 1];
/// Seed of every emulated link: each cell replays the same impairments.
pub const SEED: u64 = 1;

/// How a profile is emulated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NetMode {
    /// Plain loopback, no emulation.
    Loopback,
    /// Two network namespaces joined by TUN devices through the emulator.
    Link,
    /// A UDP relay through the emulator (UDP-based protocols only).
    Relay,
    /// Two namespaces joined by a veth pair, no emulation.
    Veth,
    /// The same, with quark on AF_XDP.
    #[serde(rename = "veth-xdp")]
    VethXdp,
}

/// How `--net-mode` asks for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NetModeChoice {
    /// The layer-3 link when namespaces can be made, else the UDP relay.
    #[default]
    Auto,
    /// The layer-3 link or fail.
    Link,
    /// The UDP relay.
    Relay,
}

impl NetModeChoice {
    /// `auto`, `link` or `relay`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "auto" => Some(Self::Auto),
            "link" => Some(Self::Link),
            "relay" => Some(Self::Relay),
            _ => None,
        }
    }
}

/// One network of a run, as recorded in the results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NetInfo {
    /// Profile name (`loopback`, `rtt30-loss1`, ...).
    pub profile: String,
    /// How it was emulated.
    pub mode: NetMode,
    /// The impairments, for people.
    pub description: String,
    /// Seed of the emulator's random stream.
    pub seed: u64,
}

/// Expands `a{1,2}-b{x,y}` shell-style (the shell does it when unquoted) and
/// splits top-level commas: `rtt{10,30}-loss0,reorder1` → 3 names.
pub fn expand(spec: &str) -> anyhow::Result<Vec<String>> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in spec.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth = depth
                    .checked_sub(1)
                    .ok_or_else(|| anyhow!("unbalanced braces in '{spec}'"))?
            }
            ',' if depth == 0 => {
                out.extend(braces(&spec[start..i])?);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        bail!("unbalanced braces in '{spec}'");
    }
    out.extend(braces(&spec[start..])?);
    let out: Vec<String> = out.into_iter().map(|s| s.trim().to_string()).collect();
    if out.iter().any(|s| s.is_empty()) || out.len() > 1000 {
        bail!("bad network list '{spec}'");
    }
    Ok(out)
}

fn braces(s: &str) -> anyhow::Result<Vec<String>> {
    let Some(open) = s.find('{') else {
        return Ok(vec![s.to_string()]);
    };
    let close = s[open..]
        .find('}')
        .map(|i| open + i)
        .ok_or_else(|| anyhow!("unbalanced braces in '{s}'"))?;
    if s[open + 1..close].contains('{') {
        bail!("nested braces in '{s}'");
    }
    let mut out = Vec::new();
    for alt in s[open + 1..close].split(',') {
        for rest in braces(&s[close + 1..])? {
            out.push(format!("{}{alt}{rest}", &s[..open]));
        }
        if out.len() > 1000 {
            bail!("'{s}' expands to too many networks");
        }
    }
    Ok(out)
}

/// Checks every name is `loopback` or a profile quark-netem knows.
pub fn validate(names: &[String]) -> anyhow::Result<()> {
    for n in names {
        if n == VETH || n == VETH_XDP {
            if let Some(why) = quark_udp::netns::unavailable() {
                bail!("--net {n}: {why}");
            }
        } else if n != LOOPBACK {
            Profile::parse(n).map_err(|e| anyhow!("{e}"))?;
        }
    }
    Ok(())
}

/// Why the layer-3 link can't be used here, if it can't.
pub fn link_unavailable() -> Option<String> {
    if !nix::unistd::geteuid().is_root() {
        return Some("not root".into());
    }
    if !std::path::Path::new("/dev/net/tun").exists() {
        return Some("no /dev/net/tun".into());
    }
    match std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
    {
        Ok(o) if o.status.success() => None,
        Ok(o) => Some(format!(
            "ip netns: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(e) => Some(format!("no `ip` command: {e}")),
    }
}

/// Whether `quark relay` can carry a protocol (it relays UDP only).
pub fn carried_by_relay(proto: &str) -> bool {
    matches!(
        proto,
        "quic"
            | "quinn"
            | "s2n-quic"
            | "quic-go"
            | "h3"
            | "h3-on-quark"
            | "h3-quinn"
            | "udp"
            | "quic-dgram"
    )
}

/// The mode a profile runs in.
pub fn mode_for(name: &str, choice: NetModeChoice) -> anyhow::Result<NetMode> {
    match name {
        LOOPBACK => return Ok(NetMode::Loopback),
        VETH => return Ok(NetMode::Veth),
        VETH_XDP => return Ok(NetMode::VethXdp),
        _ => {}
    }
    match choice {
        NetModeChoice::Relay => Ok(NetMode::Relay),
        NetModeChoice::Link => match link_unavailable() {
            None => Ok(NetMode::Link),
            Some(why) => bail!("--net-mode link: cannot make network namespaces ({why})"),
        },
        NetModeChoice::Auto => Ok(if link_unavailable().is_none() {
            NetMode::Link
        } else {
            NetMode::Relay
        }),
    }
}

/// The record of one network.
pub fn info(name: &str, mode: NetMode) -> NetInfo {
    let description = match (mode, Profile::parse(name)) {
        (NetMode::Veth, _) => "veth between two namespaces, no emulation".into(),
        (NetMode::VethXdp, _) => {
            "veth between two namespaces, no emulation, quark on AF_XDP".into()
        }
        (NetMode::Link | NetMode::Relay, Ok(p)) => p.describe(),
        _ => "no emulation".into(),
    };
    NetInfo {
        profile: name.into(),
        mode,
        description,
        seed: SEED,
    }
}

/// A running `quark link up` or `quark relay`, or a veth pair.
pub enum Emulator {
    /// `quark link up` (namespaces `{prefix}-a`, `-b`) or `quark relay` (no prefix).
    Process {
        child: Child,
        link_prefix: Option<String>,
        exe: std::path::PathBuf,
    },
    /// A veth pair, deleted on drop.
    Veth(quark_udp::netns::VethPair),
}

impl Emulator {
    /// Starts `quark link up` with namespaces `{prefix}-a` (server) and `-b`.
    /// `offload: false` gives its devices no NIC offloads (`--no-offload`).
    pub async fn link(
        exe: &std::path::Path,
        profile: &str,
        prefix: &str,
        offload: bool,
    ) -> anyhow::Result<Self> {
        let seed = SEED.to_string();
        let mut args = vec![
            "link",
            "up",
            "--profile",
            profile,
            "--seed",
            &seed,
            "--prefix",
            prefix,
        ];
        if !offload {
            args.push("--no-offload");
        }
        let (child, _) = start(exe, &args, "link up").await?;
        Ok(Emulator::Process {
            child,
            link_prefix: Some(prefix.into()),
            exe: exe.into(),
        })
    }

    /// Starts `quark relay` in front of `server`; returns it and the address
    /// clients should use.
    pub async fn relay(
        exe: &std::path::Path,
        profile: &str,
        server: SocketAddr,
    ) -> anyhow::Result<(Self, SocketAddr)> {
        let listen = SocketAddr::new(server.ip(), 0).to_string();
        let to = server.to_string();
        let args = [
            "relay",
            "--listen",
            &listen,
            "--to",
            &to,
            "--profile",
            profile,
            "--seed",
            &SEED.to_string(),
        ];
        let (child, line) = start(exe, &args, "listening ").await?;
        let addr = line
            .trim_start_matches("listening ")
            .trim()
            .parse()
            .with_context(|| format!("relay said '{line}'"))?;
        let relay = Emulator::Process {
            child,
            link_prefix: None,
            exe: exe.into(),
        };
        Ok((relay, addr))
    }

    /// Creates namespaces `{prefix}-a` (server) and `-b` joined by veth with
    /// `queues` queues (AF_XDP serves one socket per queue); returns them with
    /// the server's address.
    pub fn veth(prefix: &str, queues: u32) -> anyhow::Result<(Self, SocketAddr)> {
        let pair = quark_udp::netns::VethPair::with_queues(prefix, queues)?;
        let server = SocketAddr::new(pair.a.ip.into(), 0);
        Ok((Emulator::Veth(pair), server))
    }

    /// The veth interface of side `a` or `b`, in veth mode.
    pub fn veth_interface(&self, server: bool) -> Option<String> {
        let Emulator::Veth(pair) = self else {
            return None;
        };
        Some(if server { &pair.a } else { &pair.b }.interface.clone())
    }

    /// Stops it (SIGTERM, so a link removes its namespaces), waiting for it.
    pub async fn stop(self) {
        let Emulator::Process {
            mut child,
            link_prefix,
            exe,
        } = self
        else {
            return; // a veth pair goes with the drop
        };
        if let Some(pid) = child.id() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
        }
        if tokio::time::timeout(Duration::from_secs(5), child.wait())
            .await
            .is_err()
        {
            let _ = child.start_kill();
            let _ = child.wait().await;
        }
        if let Some(prefix) = &link_prefix {
            // Belt and braces: nothing may outlive the run.
            let _ = Command::new(&exe)
                .args(["link", "down", "--prefix", prefix])
                .stderr(Stdio::null())
                .status()
                .await;
        }
    }
}

/// Spawns `exe args` and waits for a stdout line starting with `ready`.
async fn start(
    exe: &std::path::Path,
    args: &[&str],
    ready: &str,
) -> anyhow::Result<(Child, String)> {
    let mut child = Command::new(exe)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env(PARENT_ENV, std::process::id().to_string())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("cannot start {}", exe.display()))?;
    let stdout = child.stdout.take().ok_or_else(|| anyhow!("no stdout"))?;
    let mut lines = BufReader::new(stdout).lines();
    let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line()).await;
    match line {
        Ok(Ok(Some(l))) if l.starts_with(ready) => {
            // Keep draining so the emulator never blocks on a full pipe.
            tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
            if let Some(err) = child.stderr.take() {
                tokio::spawn(async move {
                    let mut l = BufReader::new(err).lines();
                    while let Ok(Some(_)) = l.next_line().await {}
                });
            }
            Ok((child, l))
        }
        _ => {
            let _ = child.start_kill();
            let mut msg = String::new();
            if let Some(mut err) = child.stderr.take() {
                use tokio::io::AsyncReadExt;
                let _ = tokio::time::timeout(Duration::from_secs(2), err.read_to_string(&mut msg))
                    .await;
            }
            let _ = child.wait().await;
            bail!(
                "quark {} did not start: {}",
                args.first().copied().unwrap_or_default(),
                msg.lines().last().unwrap_or("no output")
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_grids() {
        assert_eq!(expand("loopback").unwrap(), ["loopback"]);
        let grid = expand("rtt{10,30,100}-loss{0,0.1,1}").unwrap();
        assert_eq!(grid.len(), 9);
        assert_eq!(grid[0], "rtt10-loss0");
        assert_eq!(grid[1], "rtt10-loss0.1");
        assert_eq!(grid[8], "rtt100-loss1");
        assert_eq!(
            expand("rtt{10,30}-loss0,reorder1").unwrap(),
            ["rtt10-loss0", "rtt30-loss0", "reorder1"]
        );
        for bad in ["rtt{10", "rtt10}", "a,,b", "x{{1}}", ""] {
            assert!(expand(bad).is_err(), "{bad}");
        }
        validate(&grid).unwrap();
        assert!(validate(&["wifi".into()]).is_err());
    }
}
