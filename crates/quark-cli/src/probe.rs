//! `quark probe`: attack a QUIC server on this machine class by class
//! (floods, fragments, slow peers) and judge whether it stayed up: its
//! memory within a bound, a legitimate client's fetches fast, and attack
//! connections closed with the RFC's error where one is due.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args as ClapArgs;
use quark_probe::attacks::{self, Attack};
use quark_probe::{Bounds, Outcome, Scale, Target};

/// Probe a server's resource bounds with attack clients.
#[derive(ClapArgs, Debug)]
pub(crate) struct Args {
    /// The server's UDP address.
    #[arg(long, default_value = "127.0.0.1:4433")]
    target: SocketAddr,
    /// The server's process id, to watch its memory (RSS).
    #[arg(long)]
    server_pid: Option<u32>,
    /// Attacks to run, comma-separated (`--list` names them); all by default.
    #[arg(long, value_delimiter = ',')]
    attacks: Vec<String>,
    /// List the attacks and exit.
    #[arg(long)]
    list: bool,
    /// Run each attack at its full size (tens of seconds each) instead of the
    /// quick form.
    #[arg(long)]
    full: bool,
    /// A file of about 1 MB on the server that a legitimate client fetches
    /// during each attack.
    #[arg(long, default_value = "/probe-1M.bin")]
    fetch: String,
    /// A large file (16 MB or more) that slow peers request.
    #[arg(long, default_value = "/probe-16M.bin")]
    big: String,
    /// The server speaks HTTP/3 (`quark serve --h3`): the legitimate client
    /// fetches over HTTP/3, and the attacks that need hq-interop requests are
    /// replaced by HTTP/3 ones.
    #[arg(long)]
    h3: bool,
    /// Where attacks come from (default: 127.0.0.2 for a loopback target, so
    /// the server sees a different source from the legitimate client).
    #[arg(long)]
    attacker_ip: Option<std::net::IpAddr>,
    /// Most the server's RSS may grow during an attack, in MiB.
    #[arg(long, default_value_t = 64)]
    max_growth_mib: u64,
    /// Most a legitimate fetch may take during an attack, in milliseconds.
    #[arg(long, default_value_t = 1000)]
    max_fetch_ms: u64,
    /// Instead of attacking: open this many connections, hold them idle, and
    /// report the server's memory per connection (needs --server-pid).
    #[arg(long, value_name = "N")]
    idle_connections: Option<usize>,
    /// Write the outcomes here as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
}

pub(crate) fn run(args: Args) -> i32 {
    crate::init_logging();
    match probe(args) {
        Ok(true) => 0,
        Ok(false) => 1,
        Err(e) => {
            eprintln!("error: {e:#}");
            2
        }
    }
}

fn probe(args: Args) -> anyhow::Result<bool> {
    let mut target = Target::new(args.target);
    if args.h3 {
        target.alpn = quark_h3::ALPN.to_vec();
    }
    if args.list {
        for a in attacks::ALL.iter().filter(|a| a.fits(&target)) {
            println!("{:<22} {}", a.name, a.about);
        }
        return Ok(true);
    }
    let chosen: Vec<&Attack> = if args.attacks.is_empty() {
        attacks::ALL.iter().filter(|a| a.fits(&target)).collect()
    } else {
        let chosen = args
            .attacks
            .iter()
            .map(|n| {
                attacks::find(n).with_context(|| format!("no attack named {n:?} (see --list)"))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        if let Some(a) = chosen.iter().find(|a| !a.fits(&target)) {
            bail!(
                "{} does not apply to this server's protocol (see --list, --h3)",
                a.name
            );
        }
        chosen
    };
    target.fetch = args.fetch;
    target.big = args.big;
    target.pid = args.server_pid;
    if let Some(ip) = args.attacker_ip {
        target.attacker_ip = ip;
    }
    if let Some(n) = args.idle_connections {
        let cost = quark_probe::idle::idle_cost(&target, n, 50)?;
        println!(
            "{} idle connections: server RSS {:.1} -> {:.1} MiB, {:.1} KiB per connection",
            cost.connections,
            cost.rss.0 as f64 / 1048576.0,
            cost.rss.1 as f64 / 1048576.0,
            cost.per_connection / 1024.0
        );
        if cost.failed > 0 {
            println!("  {} handshakes failed (left out)", cost.failed);
        }
        println!(
            "  client (this probe) RSS {:.1} -> {:.1} MiB, {:.1} KiB per connection",
            cost.client_rss.0 as f64 / 1048576.0,
            cost.client_rss.1 as f64 / 1048576.0,
            cost.client_per_connection / 1024.0
        );
        if let Some(path) = &args.json {
            std::fs::write(path, serde_json::to_vec_pretty(&cost)?)?;
        }
        return Ok(true);
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    // The server must answer before it is attacked.
    if let Err(e) = runtime.block_on(quark_probe::watch::fetch_once(&target)) {
        bail!("{} does not serve {}: {e}", target.addr, target.fetch);
    }
    let scale = if args.full { Scale::Full } else { Scale::Quick };
    let bounds = Bounds {
        memory: args.max_growth_mib << 20,
        fetch: Duration::from_millis(args.max_fetch_ms),
    };
    println!(
        "{:<22} {:>7} {:>10} {:>10} {:>9} {:>9}  verdict",
        "attack", "seconds", "sent MB", "RSS +MiB", "fetches", "slowest"
    );
    let mut outcomes = Vec::new();
    for (n, attack) in chosen.into_iter().enumerate() {
        let o = quark_probe::run(&target.for_attack(n), attack, scale, &bounds);
        print_row(&o);
        outcomes.push(o);
    }
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_vec_pretty(&outcomes)?)
            .with_context(|| format!("--json {}", path.display()))?;
    }
    let failed = outcomes.iter().filter(|o| !o.failures.is_empty()).count();
    println!(
        "{} of {} attacks passed",
        outcomes.len() - failed,
        outcomes.len()
    );
    Ok(failed == 0)
}

fn print_row(o: &Outcome) {
    let growth = o.rss.map_or("-".to_string(), |(b, p, _)| {
        format!("{:.1}", (p - b) as f64 / 1048576.0)
    });
    let ok = o.fetches.iter().filter(|f| f.is_ok()).count();
    let slowest = o
        .fetches
        .iter()
        .filter_map(|f| f.as_ref().ok())
        .fold(0f64, |a, &b| a.max(b));
    let verdict = if o.failures.is_empty() {
        "pass"
    } else {
        "FAIL"
    };
    println!(
        "{:<22} {:>7.1} {:>10.1} {:>10} {:>4}/{:<4} {:>8.3}s  {verdict}",
        o.attack,
        o.seconds,
        o.report.sent.1 as f64 / 1e6,
        growth,
        ok,
        o.fetches.len(),
        slowest
    );
    for (name, n) in &o.report.closes {
        println!("    closed: {name} x{n}");
    }
    for note in &o.report.notes {
        println!("    {note}");
    }
    for f in &o.failures {
        println!("    ! {f}");
    }
}
