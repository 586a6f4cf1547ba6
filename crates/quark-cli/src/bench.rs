//! `quark bench`: command-line options → `quark_lab::bench::BenchConfig`.

use std::io::IsTerminal;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{anyhow, bail};
use quark_lab::adapter::{CertKey, Cipher, default_protocols, default_reference, registry};
use quark_lab::agent::RemoteAgent;
use quark_lab::bench::{Agents, BenchConfig, NET_PROFILES, NetModeChoice};
use quark_lab::experiment::cloud::{self, REFERENCE};
use quark_lab::scenario::{Overrides, Scenario, default_suite};
use quark_lab::size::parse_size_list;

/// Options of `quark bench`. Without `--scenario` it runs the default suite
/// (goodput, rps, persistent with reduced counts; under a minute on loopback).
#[derive(Debug, clap::Args)]
#[command(after_help = after_help())]
pub(crate) struct Args {
    /// Protocols, comma-separated, or `all` [default: quic (quark), quinn, s2n-quic, tcp and tcp+tls; quic-go needs Go: `interop/setup.sh`].
    #[arg(long, short, value_delimiter = ',')]
    proto: Vec<String>,
    /// Scenarios, comma-separated, or `all` [default: the quick suite].
    #[arg(long, short, value_delimiter = ',')]
    scenario: Vec<String>,
    /// Sizes, e.g. `2KB,2MB` (KB/MB/GB = 1000^n, KiB/MiB/GiB = 1024^n).
    #[arg(long, allow_hyphen_values = true)]
    sizes: Option<String>,
    /// Requests to measure (response-time, rps, persistent, ephemeral, parallel).
    #[arg(long)]
    requests: Option<u64>,
    /// Concurrent clients on fresh connections (response-time, ephemeral).
    #[arg(long)]
    clients: Option<u32>,
    /// Long-lived connections (rps, streams; scale: that one count).
    #[arg(long)]
    connections: Option<u32>,
    /// Requests in flight per connection (parallel).
    #[arg(long)]
    in_flight: Option<u32>,
    /// Streams per connection (streams).
    #[arg(long)]
    streams: Option<u32>,
    /// Seconds to run timed scenarios (streams).
    #[arg(long)]
    duration: Option<f64>,
    /// Unmeasured runs first (goodput) or warm-up requests (scale: per
    /// connection, all connections at once; default 2).
    #[arg(long)]
    warmup: Option<u32>,
    /// Measured runs per size (goodput; the thesis used 30).
    #[arg(long)]
    runs: Option<u32>,
    /// Run every cell N times, the protocols taking turns (A B A B ...), and
    /// report each metric's median; the JSON keeps every run, and a line per
    /// cell gives the ranges and how often its p99 was at or below the
    /// reference's in the same round.
    #[arg(long, value_name = "N", default_value_t = 1)]
    repeat: u32,
    /// UDP payload bytes per datagram.
    #[arg(long)]
    datagram_size: Option<u32>,
    /// Connection counts for the scale scenario, e.g. `100,1000,5000` (one
    /// phase each; `--connections N` alone runs just N).
    #[arg(long, value_delimiter = ',')]
    scale_connections: Vec<u32>,
    /// Network profiles, run one after the other: `loopback` (no emulation),
    /// `veth` / `veth-xdp` (two namespaces joined by veth, no emulation; quark on
    /// kernel UDP / AF_XDP; root), lan, interop, blackhole, reorder0.1, reorder1
    /// or rtt<ms>-loss<pct>[-reorder<pct>][-rate<mbit>];
    /// comma- or space-separated, braces expanded (`rtt{10,30,100}-loss{0,0.1,1}`).
    #[arg(long, num_args = 1.., default_value = "loopback")]
    net: Vec<String>,
    /// How emulated networks run: `link` (server and client in two network
    /// namespaces joined through the emulator: every protocol), `relay` (a UDP
    /// relay: UDP protocols only) or `auto` (link when root, else relay).
    #[arg(long, default_value = "auto")]
    net_mode: String,
    /// Pin server and client to CPUs (`--pin` = 0,1). `--pin 0,0` runs both on
    /// one CPU: a request/response then waits for no wake-up of another CPU
    /// (on a VM, tens of microseconds each way), so each stack's own cost shows
    /// (quark's per-packet breakdown is then left out: see BENCHMARKS.md).
    #[arg(long, num_args = 0..=1, default_missing_value = "0,1", value_name = "SERVER,CLIENT")]
    pin: Option<String>,
    /// Runtime threads per process (1 = single-threaded runtimes).
    #[arg(long, default_value_t = 1)]
    threads: u32,
    /// Server worker threads: `quic` runs N SO_REUSEPORT workers (a socket, an
    /// endpoint and a runtime each); other protocols get an N-thread server
    /// runtime. Unset: one endpoint on the server's runtime.
    #[arg(long, value_name = "N")]
    server_workers: Option<usize>,
    /// Client sockets to spread connections over (`quic`); use many with
    /// `--server-workers`, since the kernel spreads load by 4-tuple.
    #[arg(long, default_value_t = 1, value_name = "N")]
    client_sockets: usize,
    /// Client threads for every protocol whose lab client quark runs (not
    /// quic-go's): each its own runtime, sockets and share of the connections,
    /// results merged exactly; the report names a thread at its core's limit.
    #[arg(long, default_value_t = 1, value_name = "N")]
    client_threads: usize,
    /// TLS 1.3 cipher suite: aes128gcm, aes256gcm or chacha20.
    #[arg(long, default_value = "aes128gcm")]
    cipher: String,
    /// The server certificate's key: ecdsa (P-256, default), ed25519 or rsa
    /// (2048 bits; made with the `openssl` command). Every protocol uses it.
    #[arg(long, default_value = "ecdsa")]
    cert_key: String,
    /// TLS session resumption for every protocol on rustls: on (default,
    /// rustls's defaults: tickets issued and kept) or off (every connection a
    /// full handshake: no tickets, no session cache).
    #[arg(long, default_value = "on")]
    resumption: String,
    /// quark's congestion controller: newreno, cubic (default), bbr or bbr1 (BBR v1 alone).
    #[arg(long, default_value = "cubic")]
    cc: String,
    /// Linux's TCP congestion controller for the TCP protocols (cubic by default,
    /// like the papers; `system` keeps the machine's default).
    #[arg(long, default_value = "cubic")]
    tcp_cc: String,
    /// Every process polls instead of sleeping: quark's endpoints busy-poll 200 µs
    /// after work, the other protocols' runtimes never sleep in epoll. Measures
    /// the stacks' own latency without the wake-up of a sleeping thread (costs a
    /// core per process while it runs).
    #[arg(long)]
    busy_poll: bool,
    /// The QUIC version quark speaks, 1 (RFC 9000) or 2 (RFC 9369): its
    /// clients start in it and its servers accept only it. Default: quark's
    /// defaults (clients start in 1, servers accept 1 and 2).
    #[arg(long, value_parser = crate::options::parse_quic_version)]
    quic_version: Option<u32>,
    /// Emulated links (`--net` in link mode) without NIC offloads: the kernel
    /// segments every TCP and UDP batch before the link and receivers get
    /// packets one by one, as before the link had them.
    #[arg(long)]
    no_link_offload: bool,
    /// Reference protocol for the summary's ratios [default: quic, else quinn].
    #[arg(long = "ref")]
    reference: Option<String>,
    /// Listen port for the servers (0 = any free port).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Listen address for the servers [default: 127.0.0.1; 0.0.0.0 with --server-agent].
    #[arg(long)]
    addr: Option<IpAddr>,
    /// Run every cell's server on this `quark agent` (HOST:PORT); servers
    /// listen on `--addr` there (0.0.0.0: reached at the agent's address).
    #[arg(long, value_name = "HOST:PORT", requires = "token_file")]
    server_agent: Option<String>,
    /// Run every cell's client on this `quark agent` (HOST:PORT).
    #[arg(long, value_name = "HOST:PORT", requires = "token_file")]
    client_agent: Option<String>,
    /// The agents' shared token (see `quark agent --help`).
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// Seconds any one step of a phase may take before the cell fails.
    #[arg(long, default_value_t = 300.0)]
    timeout: f64,
    /// Write results (schema quark-lab/results v1) to this file.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Write an HTML report with charts to this file.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Run an experiment's whole matrix: `cloud` is seed 004's study (the nine
    /// protocols × persistent / ephemeral / parallel × 2-512 KiB × placements,
    /// with p50/p90/p99, throughput, CPU per request and per GB, memory and a
    /// CPU cost; ratios against tcp+tls). `-p`, `--sizes`, `--requests` narrow it.
    #[arg(long, value_name = "NAME", value_parser = ["cloud"])]
    experiment: Option<String>,
    /// Placements of `--experiment cloud`: same-host (loopback), same-zone
    /// (veth between two namespaces), cross-zone (the namespaces joined through
    /// quark's emulator, 1.5 ms RTT, delay only). Namespaces need root.
    #[arg(
        long,
        value_name = "LIST",
        default_value = "same-host,same-zone,cross-zone"
    )]
    placements: String,
    /// With agents, the placement's name in the results (e.g. `cross-zone-aws`).
    #[arg(long, value_name = "NAME")]
    placement_label: Option<String>,
    /// USD per vCPU-hour for `--experiment cloud`'s cost [default: 0.048, AWS
    /// m6i.xlarge on demand in us-east-1, $0.192/h for 4 vCPUs, the seed's instance].
    #[arg(long, value_name = "USD")]
    vcpu_hour_price: Option<f64>,
    /// `--experiment cloud` in brief: 2 and 128 KiB, 100 requests, 20 in flight.
    #[arg(long)]
    quick: bool,
    /// List protocols and scenarios and exit.
    #[arg(long)]
    list: bool,
    /// Fault injection for tests: servers exit after this many requests.
    #[arg(long, hide = true)]
    die_after: Option<u64>,
}

fn after_help() -> String {
    let protos: Vec<_> = registry().iter().map(|a| a.name()).collect();
    let scenarios: Vec<_> = Scenario::ALL.iter().map(|s| s.name()).collect();
    format!(
        "Protocols: {}\nScenarios: {}",
        protos.join(", "),
        scenarios.join(", ")
    )
}

fn positive_secs(name: &str, s: f64) -> anyhow::Result<Duration> {
    if !(s.is_finite() && s > 0.0 && s < 1e7) {
        bail!("--{name} must be a positive number of seconds");
    }
    Ok(Duration::from_secs_f64(s))
}

fn config(a: &Args) -> anyhow::Result<BenchConfig> {
    let protocols: Vec<String> = match a.proto.as_slice() {
        [] => default_protocols().into_iter().map(String::from).collect(),
        [all] if all == "all" => registry().iter().map(|a| a.name().to_string()).collect(),
        list => list.to_vec(),
    };
    let overrides = Overrides {
        sizes: a.sizes.as_deref().map(parse_size_list).transpose()?,
        requests: a.requests,
        clients: a.clients,
        connections: a.connections,
        in_flight: a.in_flight,
        streams: a.streams,
        duration_ms: a
            .duration
            .map(|d| positive_secs("duration", d))
            .transpose()?
            .map(|d| d.as_millis().max(1) as u64),
        warmup: a.warmup,
        runs: a.runs,
        datagram: a.datagram_size,
        scale_connections: (!a.scale_connections.is_empty()).then(|| a.scale_connections.clone()),
    };
    let cloud = cloud_plan(a, &overrides)?;
    let protocols = match (&cloud, a.proto.is_empty()) {
        (Some(plan), true) => plan.protocols.clone(),
        _ => protocols,
    };
    let suite = a.scenario.is_empty() && cloud.is_none();
    let scenarios = match a.scenario.as_slice() {
        [] if cloud.is_some() => cloud.as_ref().map_or(vec![], |p| p.scenarios.clone()),
        [] => default_suite(),
        [all] if all == "all" => Scenario::ALL.iter().map(|&s| (s, s.defaults())).collect(),
        list => list
            .iter()
            .map(|name| {
                let s = Scenario::parse(name).ok_or_else(|| {
                    let all: Vec<_> = Scenario::ALL.iter().map(|s| s.name()).collect();
                    anyhow!("unknown scenario '{name}' (available: {})", all.join(", "))
                })?;
                Ok((s, s.defaults()))
            })
            .collect::<anyhow::Result<_>>()?,
    };
    let scenarios = scenarios
        .into_iter()
        .map(|(s, p)| (s, p.with(s, &overrides)))
        .collect();
    let pin = match &a.pin {
        None => None,
        Some(p) => {
            let (s, c) = p
                .split_once(',')
                .ok_or_else(|| anyhow!("--pin takes SERVER,CLIENT CPU numbers"))?;
            Some((s.trim().parse()?, c.trim().parse()?))
        }
    };
    let cipher = Cipher::parse(&a.cipher).ok_or_else(|| {
        anyhow!(
            "unknown cipher '{}' (available: {})",
            a.cipher,
            Cipher::NAMES.join(", ")
        )
    })?;
    let cert_key = CertKey::parse(&a.cert_key).ok_or_else(|| {
        anyhow!(
            "unknown --cert-key '{}' (available: {})",
            a.cert_key,
            CertKey::NAMES.join(", ")
        )
    })?;
    let resumption = match a.resumption.as_str() {
        "on" => true,
        "off" => false,
        r => bail!("--resumption takes on or off, not '{r}'"),
    };
    let cc: quark::CcAlgorithm = a.cc.parse().map_err(|e: String| anyhow!(e))?;
    if a.tcp_cc != "system" {
        let available =
            std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
                .unwrap_or_default();
        if !available.split_whitespace().any(|c| c == a.tcp_cc) {
            bail!(
                "TCP congestion control '{}' is not available (available: {})",
                a.tcp_cc,
                available.trim()
            );
        }
    }
    let reference = match &a.reference {
        None if cloud.is_some() && protocols.iter().any(|p| p == REFERENCE) => {
            REFERENCE.to_string()
        }
        Some(r) if !protocols.contains(r) => {
            bail!("reference protocol '{r}' is not among the protocols run")
        }
        Some(r) => r.clone(),
        None => default_reference().to_string(),
    };
    if a.threads == 0 || a.threads > 1024 {
        bail!("--threads must be between 1 and 1024");
    }
    Ok(BenchConfig {
        exe: std::env::current_exe()?,
        protocols,
        scenarios,
        suite,
        net: cloud
            .as_ref()
            .map_or_else(|| a.net.join(","), |p| p.net.clone()),
        net_mode: NetModeChoice::parse(&a.net_mode).ok_or_else(|| {
            anyhow!(
                "unknown --net-mode '{}' (available: auto, link, relay)",
                a.net_mode
            )
        })?,
        pin,
        threads: a.threads,
        cipher,
        cert_key,
        resumption,
        cc,
        tcp_cc: a.tcp_cc.clone(),
        busy_poll: a.busy_poll,
        quic_version: a.quic_version,
        link_offload: !a.no_link_offload,
        reference,
        listen: SocketAddr::new(
            a.addr.unwrap_or(match a.server_agent {
                Some(_) => IpAddr::from([0, 0, 0, 0]),
                None => IpAddr::from([127, 0, 0, 1]),
            }),
            a.port,
        ),
        timeout: positive_secs("timeout", a.timeout)?,
        progress: std::io::stderr().is_terminal(),
        command_line: std::env::args().collect(),
        json: a.json.clone(),
        die_after: a.die_after,
        server_workers: a.server_workers,
        client_sockets: a.client_sockets,
        client_threads: a.client_threads,
        repeat: a.repeat,
        agents: agents(a)?,
        cloud: cloud.map(|p| p.section),
    })
}

/// `--experiment cloud` turned into the run, or `None` without it.
fn cloud_plan(a: &Args, overrides: &Overrides) -> anyhow::Result<Option<cloud::Plan>> {
    let Some(_) = &a.experiment else {
        if a.quick || a.vcpu_hour_price.is_some() || a.placement_label.is_some() {
            bail!("--quick, --vcpu-hour-price and --placement-label go with --experiment cloud");
        }
        return Ok(None);
    };
    if let Some(s) = a
        .scenario
        .iter()
        .find(|s| !cloud::SCENARIOS.iter().any(|c| c.name() == s.as_str()))
    {
        bail!("--experiment cloud runs persistent, ephemeral and parallel: not '{s}'");
    }
    if a.net != ["loopback"] {
        bail!("--experiment cloud sets the network from --placements: leave out --net");
    }
    let agents = a.server_agent.is_some() || a.client_agent.is_some();
    if a.placement_label.is_some() && !agents {
        bail!("--placement-label names real hosts' placement: it goes with the agents");
    }
    let opts = cloud::CloudOptions {
        placements: cloud::Placement::parse_list(&a.placements)?,
        vcpu_hour_price: a.vcpu_hour_price.unwrap_or(cloud::DEFAULT_VCPU_HOUR_PRICE),
        quick: a.quick,
        placement_label: a.placement_label.clone(),
        agents,
    };
    Ok(Some(cloud::plan(&opts, overrides)?))
}

/// `--server-agent`, `--client-agent` and their token.
fn agents(a: &Args) -> anyhow::Result<Agents> {
    let Some(file) = &a.token_file else {
        return Ok(Agents::default());
    };
    let token = quark_lab::agent::read_token(file)?;
    let resolve = |s: &Option<String>| -> anyhow::Result<Option<RemoteAgent>> {
        let Some(s) = s else { return Ok(None) };
        let addr = s
            .to_socket_addrs()
            .map_err(|e| anyhow!("agent address '{s}': {e}"))?
            .next()
            .ok_or_else(|| anyhow!("agent address '{s}' resolves to nothing"))?;
        Ok(Some(RemoteAgent::new(addr, token.clone())))
    };
    Ok(Agents {
        server: resolve(&a.server_agent)?,
        client: resolve(&a.client_agent)?,
    })
}

fn list() {
    println!("protocols:");
    for a in registry() {
        let default = if default_protocols().contains(&a.name()) {
            " (default)"
        } else {
            ""
        };
        println!("  {:<10} {}{default}", a.name(), a.about());
    }
    println!("scenarios:");
    for s in Scenario::ALL {
        println!("  {}", s.name());
    }
    println!("network profiles: {}", NET_PROFILES.join(", "));
}

/// Runs `quark bench`; returns the exit code.
pub(crate) fn run(args: Args) -> i32 {
    if args.list {
        list();
        return 0;
    }
    let cfg = match config(&args).and_then(|c| c.validate().map(|()| c)) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e:#}");
            return 2;
        }
    };
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: {e}");
            return 1;
        }
    };
    // The orchestrator runs on this (the main) thread, so children's
    // PR_SET_PDEATHSIG fires exactly when this process dies.
    let outcome = match rt.block_on(quark_lab::bench::run(cfg, |line| eprintln!("{line}"))) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("error: {e:#}");
            return 2;
        }
    };
    print!("{}", quark_lab::table::render(&outcome.report));
    if let Some(out) = &args.html
        && let Err(e) = std::fs::write(out, quark_lab::html::render(&outcome.report))
    {
        eprintln!("error: cannot write {}: {e}", out.display());
        return 1;
    }
    for r in outcome
        .report
        .results
        .iter()
        .filter(|r| r.status == quark_lab::results::Status::Error)
    {
        eprintln!(
            "error: {} {} {}: {}",
            r.scenario,
            r.protocol,
            r.label,
            r.error.as_deref().unwrap_or("")
        );
    }
    for e in &outcome.report.errors {
        eprintln!("error: {e}");
    }
    outcome.exit_code
}
