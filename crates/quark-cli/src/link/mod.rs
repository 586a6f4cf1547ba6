//! `quark link up` / `quark link down`: an emulated layer-3 link. Two network
//! namespaces (`quark-a` with 10.77.0.1, `quark-b` with 10.77.0.2) are joined by
//! two TUN devices, with quark-netem's engine between them, so TCP and QUIC
//! cross identical impairments:
//!
//! ```text
//! ip netns exec quark-a quark serve --listen 10.77.0.1:4433 …
//! ip netns exec quark-b quark get https://10.77.0.1:4433/file …
//! ```
//!
//! The devices are created in the root namespace (where this process opens
//! /dev/net/tun) and then moved into the namespaces; the descriptors stay
//! valid. Namespaces and devices are removed on exit, on Ctrl-C / SIGTERM /
//! SIGHUP, on panics, and by `quark link down` should a run be killed outright.

mod forward;
mod netns;

use crate::impair::ImpairArgs;

/// The server side's address (namespace a).
pub(crate) const A_ADDR: &str = "10.77.0.1";
/// The client side's address (namespace b).
pub(crate) const B_ADDR: &str = "10.77.0.2";

/// Options of `quark link`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, clap::Subcommand)]
enum Action {
    /// Create the namespaces and forward between them until Ctrl-C or SIGTERM.
    Up(Box<UpArgs>),
    /// Delete namespaces and devices a killed `link up` left behind.
    Down(DownArgs),
}

#[derive(Debug, clap::Args)]
struct UpArgs {
    /// Names: namespaces and devices PREFIX-a (10.77.0.1) and PREFIX-b (10.77.0.2).
    #[arg(long, default_value = "quark")]
    prefix: String,
    /// Devices without offloads: the kernel segments every TCP and UDP batch
    /// before the link, and receivers get packets one by one (no GRO).
    #[arg(long)]
    no_offload: bool,
    #[command(flatten)]
    impair: ImpairArgs,
}

#[derive(Debug, clap::Args)]
struct DownArgs {
    /// Names: as given to `link up`.
    #[arg(long, default_value = "quark")]
    prefix: String,
}

/// Runs `quark link`; returns the exit code.
pub(crate) fn run(args: Args) -> i32 {
    match args.action {
        Action::Up(a) => up(*a),
        Action::Down(a) => {
            if let Err(e) = netns::check_prefix(&a.prefix) {
                eprintln!("error: {e:#}");
                return 2;
            }
            let gone = netns::delete(&a.prefix);
            if gone.is_empty() {
                eprintln!("nothing to remove");
            } else {
                eprintln!("removed {}", gone.join(", "));
            }
            0
        }
    }
}

fn up(args: UpArgs) -> i32 {
    let imp = match netns::check_prefix(&args.prefix).and_then(|()| args.impair.build(0)) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("error: {e:#}");
            return 2;
        }
    };
    if !nix::unistd::geteuid().is_root() {
        eprintln!("error: quark link needs root (network namespaces and TUN devices)");
        return 1;
    }
    // Started by `quark bench`: go (cleaning up) when it dies.
    if std::env::var_os(quark_lab::child::PARENT_ENV).is_some() {
        let _ = nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGTERM);
    }
    let prefix = args.prefix;
    crate::run_async(async move {
        let (a, b) = netns::names(&prefix);
        let spaces = netns::Namespaces::create(&prefix)?;
        let tun_a = device(&a, !args.no_offload)?;
        let tun_b = device(&b, !args.no_offload)?;
        let offloads = tun_a.offloads() && tun_b.offloads();
        spaces.attach(&a, &a, A_ADDR, B_ADDR)?;
        spaces.attach(&b, &b, B_ADDR, A_ADDR)?;
        println!("link up {a} {A_ADDR} <-> {b} {B_ADDR}");
        eprintln!(
            "link up: {a} ({A_ADDR}) <-> {b} ({B_ADDR}): {}{}; Ctrl-C to stop",
            imp.describe(),
            if offloads { "" } else { ", no offloads" }
        );
        let out = forward::forward(tun_a, tun_b, &imp).await;
        drop(spaces);
        let out = out?;
        eprintln!("link down ({}); namespaces {a} and {b} removed", out.why);
        eprintln!("  {b} -> {a}: {}", out.up);
        eprintln!("  {a} -> {b}: {}", out.down);
        if out.write_errors > 0 {
            eprintln!("  {} writes to the devices failed", out.write_errors);
        }
        if offloads {
            eprintln!("  offloads: {}", out.offloads);
        }
        Ok(())
    })
}

/// Creates TUN device `name`, with offloads (TSO, USO, checksums; the link
/// does GRO) unless told otherwise or the kernel refuses them.
fn device(name: &str, offload: bool) -> anyhow::Result<quark_udp::tun::Tun> {
    use quark_udp::tun::Tun;
    let plain =
        || Tun::create(name).map_err(|e| anyhow::anyhow!("cannot create TUN device {name}: {e}"));
    if !offload {
        return plain();
    }
    match Tun::create_offloaded(name) {
        Ok(t) => Ok(t),
        Err(e) => {
            eprintln!("warning: {name}: no offloads ({e}); packets cross one by one");
            plain()
        }
    }
}
