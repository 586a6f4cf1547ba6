//! `quark xdp`: the AF_XDP test bed, two network namespaces joined by a veth pair
//! with static neighbours, and a file transfer across it with `quark serve` and
//! `quark get` over AF_XDP (or kernel UDP, to compare).
//!
//! ```text
//!  namespace <name>-a                       namespace <name>-b
//!  veth-a 10.77.0.1/24 02:51:00:00:00:01 <-> veth-b 10.77.0.2/24 02:51:00:00:00:02
//! ```
//!
//! `serve` and `get` pick AF_XDP up from the `QUARK_XDP` environment variable
//! (`QUARK_XDP=veth-a` in namespace a). `quark serve --workers N` serves a queue
//! per worker: make the pair with `setup --queues N`. Needs root; see `quark_udp::xdp` for what
//! AF_XDP needs from the kernel.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use quark_udp::netns::{self, Side, VethPair};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// The AF_XDP test bed: namespaces joined by veth, and transfers across them.
#[derive(Args, Debug)]
pub(crate) struct XdpArgs {
    #[command(subcommand)]
    command: XdpCommand,
}

#[derive(Subcommand, Debug)]
enum XdpCommand {
    /// Create namespaces <name>-a and <name>-b joined by veth, and leave them.
    Setup(SetupArgs),
    /// Delete the namespaces of `setup`.
    Teardown(Name),
    /// Serve a file in <name>-a, fetch it from <name>-b, compare, clean up.
    Transfer(TransferArgs),
}

#[derive(Args, Debug)]
struct Name {
    /// Prefix of the namespace names.
    #[arg(long, default_value = "quark")]
    name: String,
}

#[derive(Args, Debug)]
struct SetupArgs {
    #[command(flatten)]
    name: Name,
    /// Queues on each veth end: `quark serve --workers N` over AF_XDP serves
    /// one per worker, so it needs N.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    queues: u32,
}

#[derive(Args, Debug)]
struct TransferArgs {
    #[command(flatten)]
    name: Name,
    /// Size of the file, in MiB.
    #[arg(long, default_value_t = 100)]
    mib: u64,
    /// The server uses kernel UDP instead of AF_XDP.
    #[arg(long)]
    udp_server: bool,
    /// The client uses kernel UDP instead of AF_XDP.
    #[arg(long)]
    udp_client: bool,
    /// Extra settings for both AF_XDP sockets, e.g. `attach=generic,csum=off`.
    #[arg(long, default_value = "")]
    xdp_options: String,
    /// Server worker threads (`quark serve --workers`), each on its own veth
    /// queue.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=64))]
    workers: u16,
}

pub(crate) async fn run(args: XdpArgs) -> anyhow::Result<()> {
    if let Some(why) = netns::unavailable() {
        bail!("quark xdp {why}");
    }
    match args.command {
        XdpCommand::Setup(SetupArgs { name: n, queues }) => {
            let pair = VethPair::with_queues(&n.name, queues)?;
            for side in [&pair.a, &pair.b] {
                println!(
                    "namespace {}: {} {}/24 {}",
                    side.netns,
                    side.interface,
                    side.ip,
                    side.mac_string()
                );
            }
            println!(
                "e.g.: ip netns exec {} env QUARK_XDP={} quark serve --listen {}:4433 --root DIR",
                pair.a.netns, pair.a.interface, pair.a.ip
            );
            println!(
                "      ip netns exec {} env QUARK_XDP={} quark get --insecure https://{}:4433/FILE",
                pair.b.netns, pair.b.interface, pair.a.ip
            );
            println!("remove with: quark xdp teardown --name {}", n.name);
            pair.keep();
            Ok(())
        }
        XdpCommand::Teardown(n) => {
            netns::remove(&n.name);
            Ok(())
        }
        XdpCommand::Transfer(t) => {
            // Everything created below is removed on every way out: the pair and
            // the directory by their guards, the processes by `kill_on_drop`.
            tokio::select! {
                result = transfer(&t) => result,
                _ = tokio::signal::ctrl_c() => bail!("interrupted"),
            }
        }
    }
}

/// Removes a directory tree when dropped.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

async fn transfer(t: &TransferArgs) -> anyhow::Result<()> {
    let pair = VethPair::with_queues(&t.name.name, u32::from(t.workers))?;
    let dir = TempDir(std::env::temp_dir().join(format!("quark-xdp-{}", std::process::id())));
    let (root, out) = (dir.0.join("root"), dir.0.join("out"));
    std::fs::create_dir_all(&root)?;
    std::fs::create_dir_all(&out)?;
    let file = root.join("file.bin");
    write_file(&file, t.mib << 20)?;

    let exe = std::env::current_exe()?;
    let listen = format!("{}:4433", pair.a.ip);
    let server_xdp = (!t.udp_server).then(|| xdp_env(&pair.a, &t.xdp_options));
    let mut server = quark_in(&pair.a, &exe, server_xdp.as_deref())
        .args(["serve", "--listen", &listen, "--root"])
        .arg(&root)
        .args(["--workers", &t.workers.to_string()])
        .stderr(Stdio::piped())
        .spawn()
        .context("starting quark serve")?;
    wait_for_serving(&mut server).await?;

    let url = format!("https://{listen}/file.bin");
    let client_xdp = (!t.udp_client).then(|| xdp_env(&pair.b, &t.xdp_options));
    let start = Instant::now();
    let status = quark_in(&pair.b, &exe, client_xdp.as_deref())
        .args(["get", "--insecure", "-o"])
        .arg(&out)
        .arg(&url)
        .status()
        .await
        .context("running quark get")?;
    let elapsed = start.elapsed();
    let _ = server.kill().await;
    if !status.success() {
        bail!("quark get failed ({status})");
    }
    let same = std::fs::read(&file)? == std::fs::read(out.join("file.bin"))?;
    if !same {
        bail!("the file fetched differs from the file served");
    }
    let backend = |xdp: &Option<String>| {
        xdp.as_ref()
            .map_or("UDP".to_string(), |x| format!("AF_XDP ({x})"))
    };
    println!(
        "{} MiB in {:.2} s ({:.0} Mbit/s), identical; server {} with {} worker(s), client {}",
        t.mib,
        elapsed.as_secs_f64(),
        (t.mib << 23) as f64 / elapsed.as_secs_f64() / 1e6,
        backend(&server_xdp),
        t.workers,
        backend(&client_xdp),
    );
    Ok(())
}

/// The `QUARK_XDP` value for one side.
fn xdp_env(side: &Side, options: &str) -> String {
    if options.is_empty() {
        side.interface.clone()
    } else {
        format!("{},{options}", side.interface)
    }
}

/// `quark` run in the namespace of `side`, with `QUARK_XDP` set to `xdp` (or
/// unset: kernel UDP).
fn quark_in(side: &Side, exe: &Path, xdp: Option<&str>) -> Command {
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", &side.netns])
        .arg(exe)
        .kill_on_drop(true);
    match xdp {
        Some(value) => cmd.env(quark_udp::XDP_ENV, value),
        None => cmd.env_remove(quark_udp::XDP_ENV),
    };
    cmd
}

/// Waits for `quark serve` to say it is serving, passing its stderr on.
async fn wait_for_serving(server: &mut Child) -> anyhow::Result<()> {
    let stderr = server.stderr.take().context("no stderr")?;
    let mut lines = BufReader::new(stderr).lines();
    let ready = async {
        while let Some(line) = lines.next_line().await? {
            eprintln!("server: {line}");
            if line.starts_with("serving ") {
                return Ok(());
            }
        }
        bail!("quark serve exited before serving")
    };
    tokio::time::timeout(Duration::from_secs(10), ready)
        .await
        .context("quark serve did not start within 10 s")??;
    // Keep passing the server's messages on.
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            eprintln!("server: {line}");
        }
    });
    Ok(())
}

/// Writes `len` pseudo-random bytes (xorshift) to `path`.
fn write_file(path: &Path, len: u64) -> anyhow::Result<()> {
    use std::io::Write;
    let mut w = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut left = len;
    while left > 0 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let n = left.min(8) as usize;
        w.write_all(&x.to_le_bytes()[..n])?;
        left -= n as u64;
    }
    w.flush()?;
    Ok(())
}
