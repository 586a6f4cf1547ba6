//! `quark bench`: the orchestrator. For every scenario and protocol it starts a
//! lab server and a lab client process, drives them phase by phase, merges
//! their reports and writes the results.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, anyhow, bail};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Deserialize;

use crate::adapter::{CertKey, Cipher, Identity, ServerCounters, find};
use crate::child::{ClientArgs, ClientReport, CommonArgs, ServerArgs};
use crate::metrics::{Machine, Usage};
use crate::results::{CellResult, Report, RunConfig, SCHEMA_ID, SCHEMA_VERSION, Status};
use crate::scenario::{Params, Scenario};
use crate::workload::Phase;

mod agents;
mod merge;
pub mod net;
mod procs;
pub mod repeat;

pub use agents::Agents;
pub use merge::merge;
pub use net::{NetInfo, NetMode, NetModeChoice};
use procs::{CellError, Procs, Side, Signals};

/// Network profiles by name: `loopback` (no emulation); `veth` and `veth-xdp`
/// (two namespaces joined by veth, no emulation; the second puts quark on
/// AF_XDP); quark-netem's named profiles; the grammar
/// `rtt<ms>-loss<pct>[-reorder<pct>][-rate<mbit>]` adds the rest.
pub const NET_PROFILES: &[&str] = &[
    "loopback",
    "veth",
    "veth-xdp",
    "lan",
    "interop",
    "blackhole",
    "reorder0.1",
    "reorder1",
    "rtt<ms>-loss<pct>[-reorder<pct>][-rate<mbit>]",
];

/// Everything `quark bench` was asked to do.
#[derive(Debug, Clone)]
pub struct BenchConfig {
    /// The `quark` binary to run children from.
    pub exe: PathBuf,
    /// Protocols, in order.
    pub protocols: Vec<String>,
    /// Scenarios with their parameters, in order.
    pub scenarios: Vec<(Scenario, Params)>,
    /// Whether this is the default suite.
    pub suite: bool,
    /// Network profiles, comma-separated, braces expanded
    /// (`loopback`, `rtt{10,30}-loss{0,1}`, `interop`, ...).
    pub net: String,
    /// How emulated profiles are run.
    pub net_mode: NetModeChoice,
    /// CPUs for server and client.
    pub pin: Option<(usize, usize)>,
    /// Runtime threads per child.
    pub threads: u32,
    /// TLS cipher suite.
    pub cipher: Cipher,
    /// The server certificate's key type.
    pub cert_key: CertKey,
    /// TLS session resumption on (tickets) or off (full handshakes only).
    pub resumption: bool,
    /// quark's congestion controller.
    pub cc: quark::CcAlgorithm,
    /// Linux's TCP congestion controller (`system` leaves the default).
    pub tcp_cc: String,
    /// Every process polls instead of sleeping (`--busy-poll`).
    pub busy_poll: bool,
    /// The only QUIC version quark speaks (`--quic-version`); `None`: quark's
    /// defaults (clients start in v1, servers accept v1 and v2).
    pub quic_version: Option<u32>,
    /// Emulated links' TUN devices have NIC offloads (TSO/USO, checksums, GRO).
    pub link_offload: bool,
    /// Protocol the ratios compare against.
    pub reference: String,
    /// Address the servers listen on (port 0: any free port).
    pub listen: SocketAddr,
    /// Longest wait for any one step of a phase.
    pub timeout: Duration,
    /// Draw progress bars (stderr is a terminal).
    pub progress: bool,
    /// The exact command line, for the record.
    pub command_line: Vec<String>,
    /// Write results here after every cell.
    pub json: Option<PathBuf>,
    /// Fault injection: servers exit after this many requests.
    pub die_after: Option<u64>,
    /// Server worker threads (see `ServerArgs::server_workers`).
    pub server_workers: Option<usize>,
    /// Client sockets to spread connections over (see `ClientArgs::client_sockets`).
    pub client_sockets: usize,
    /// Client threads, each with its own sockets and share of the connections
    /// (see `ClientArgs::client_threads`); the same for every protocol.
    pub client_threads: usize,
    /// Runs of every cell, the protocols taking turns (see `repeat`).
    pub repeat: u32,
    /// Sides placed on other hosts' agents (`--server-agent`, `--client-agent`).
    pub agents: Agents,
    /// The experiment's results section (`--experiment cloud`), rows empty.
    pub cloud: Option<crate::experiment::cloud::CloudSection>,
}

impl BenchConfig {
    /// Checks the configuration before anything starts.
    pub fn validate(&self) -> anyhow::Result<()> {
        net::validate(&net::expand(&self.net)?)?;
        if self.net_mode == NetModeChoice::Link
            && let Some(why) = net::link_unavailable()
        {
            bail!("--net-mode link: cannot make network namespaces ({why})");
        }
        for p in &self.protocols {
            if find(p).is_none() {
                bail!(
                    "unknown protocol '{p}' (available: {})",
                    crate::adapter::registry()
                        .iter()
                        .map(|a| a.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
        }
        if self.protocols.is_empty() || self.scenarios.is_empty() {
            bail!("nothing to run");
        }
        if let Some(n) = self.server_workers
            && !(1..=255).contains(&n)
        {
            bail!("--server-workers must be between 1 and 255");
        }
        if self.server_workers.is_some_and(|n| n > 1) && self.pin.is_some() {
            bail!("--pin puts the whole server on one CPU: leave it out with --server-workers");
        }
        if !(1..=1000).contains(&self.repeat) {
            bail!("--repeat must be between 1 and 1000");
        }
        if !(1..=1024).contains(&self.client_sockets) {
            bail!("--client-sockets must be between 1 and 1024");
        }
        if !(1..=256).contains(&self.client_threads) {
            bail!("--client-threads must be between 1 and 256");
        }
        if self.client_threads > 1 && self.pin.is_some() {
            bail!("--pin puts the whole client on one CPU: leave it out with --client-threads");
        }
        if self.client_threads > 1 {
            // Every protocol gets the same client threads, or none runs.
            for p in &self.protocols {
                if find(p).is_some_and(|a| a.external_child().is_some()) {
                    bail!(
                        "--client-threads: {p}'s lab client is a program of its own \
                         and runs one thread"
                    );
                }
            }
        }
        // Over AF_XDP a queue carries each client socket's datagrams to the
        // server worker of that queue, and the veth has one per worker.
        let workers = self.server_workers.unwrap_or(1);
        if self.client_sockets > workers
            && net::expand(&self.net)?.iter().any(|n| n == net::VETH_XDP)
        {
            bail!(
                "--net veth-xdp: --client-sockets ({}) can't exceed --server-workers ({workers}): \
                 each AF_XDP client socket serves a veth queue, one per worker",
                self.client_sockets
            );
        }
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        if let Some((s, c)) = self.pin
            && (s >= cores || c >= cores)
        {
            bail!("cannot pin to CPUs {s} and {c}: this machine has {cores}");
        }
        for (s, p) in &self.scenarios {
            let zero = p.requests == 0
                || p.clients == 0
                || p.connections == 0
                || p.in_flight == 0
                || p.streams == 0;
            if zero || p.runs == 0 || p.duration_ms == 0 || p.datagram == 0 || p.sizes.is_empty() {
                bail!(
                    "{}: counts, sizes and durations must be at least 1",
                    s.name()
                );
            }
            if p.datagram as usize > crate::adapter::udp::MAX_PAYLOAD {
                bail!(
                    "datagram size {} above the UDP limit {}",
                    p.datagram,
                    crate::adapter::udp::MAX_PAYLOAD
                );
            }
        }
        if self.agents.any() && net::expand(&self.net)? != [net::LOOPBACK] {
            bail!("with agents the network is the hosts' own: leave out --net");
        }
        self.agents.check(self.listen)?;
        if self.listen.port() != 0 && self.agents.server.is_none() {
            // A clear error up front instead of one per cell.
            std::net::TcpListener::bind(self.listen)
                .with_context(|| format!("port {} is not available", self.listen.port()))?;
            std::net::UdpSocket::bind(self.listen)
                .with_context(|| format!("port {} is not available", self.listen.port()))?;
        }
        Ok(())
    }
}

/// The result of a run and the process exit code it calls for.
#[derive(Debug)]
pub struct Outcome {
    /// Everything measured (partial when interrupted).
    pub report: Report,
    /// 0 all good, 1 some cell failed, 130 interrupted.
    pub exit_code: i32,
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Removes the run's temporary directory (certificate and key) on every exit path.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs the whole benchmark. `log` receives one line per finished phase.
pub async fn run(cfg: BenchConfig, mut log: impl FnMut(&str)) -> anyhow::Result<Outcome> {
    cfg.validate()?;
    let mut signals = Signals::install()?;
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let dir =
        TempDir(std::env::temp_dir().join(format!("quark-lab-{}-{nanos}", std::process::id())));
    std::fs::create_dir_all(&dir.0)?;
    let (cert, key) = (dir.0.join("cert.der"), dir.0.join("key.der"));
    Identity::generate_with(cfg.cert_key)?.save(&cert, &key)?;

    let mut report = Report {
        schema: SCHEMA_ID.into(),
        version: SCHEMA_VERSION,
        complete: false,
        started_unix_s: unix_now(),
        finished_unix_s: 0.0,
        command_line: cfg.command_line.clone(),
        machine: Machine::detect(),
        versions: crate::versions(),
        config: RunConfig {
            net: cfg.net.clone(),
            protocols: cfg.protocols.clone(),
            scenarios: cfg
                .scenarios
                .iter()
                .map(|(s, _)| s.name().to_string())
                .collect(),
            reference: cfg.reference.clone(),
            cipher: cfg.cipher.name().into(),
            cert_key: cfg.cert_key.name().into(),
            // The children inherit QUARK_CRYPTO and choose as this process does.
            crypto: quark::tls::crypto().name().into(),
            resumption: cfg.resumption,
            cc: cfg.cc.to_string(),
            tcp_cc: cfg.tcp_cc.clone(),
            busy_poll: cfg.busy_poll,
            quic_version: cfg.quic_version,
            no_link_offload: !cfg.link_offload,
            pin: cfg.pin.map(|(s, c)| [s as u32, c as u32]),
            threads: cfg.threads,
            suite: cfg.suite,
            network: Vec::new(),
            server_workers: cfg.server_workers.map(|n| n as u32),
            client_sockets: cfg.client_sockets as u32,
            client_threads: cfg.client_threads as u32,
            repeat: cfg.repeat,
            placement: None,
        },
        results: Vec::new(),
        errors: Vec::new(),
        summary: Vec::new(),
        cloud: cfg.cloud.clone(),
    };
    if cfg.agents.any() {
        let p = cfg.agents.placement().await?;
        log(&format!(
            "server on {}, client on {}, path RTT {}",
            p.server.host,
            p.client.host,
            p.rtt_ms.map_or("unknown".into(), |r| format!("{r:.3} ms"))
        ));
        report.config.placement = Some(p);
    }
    let mut exit_code = 0;
    let nets = net::expand(&cfg.net)?;
    let mut infos = Vec::new();
    for name in &nets {
        let mode = net::mode_for(name, cfg.net_mode)?;
        let info = net::info(name, mode);
        if mode != NetMode::Loopback {
            let how = match mode {
                NetMode::Link => "layer-3 link between network namespaces".to_string(),
                NetMode::Veth | NetMode::VethXdp => "a fresh pair per cell".to_string(),
                _ => format!(
                    "UDP relay (UDP protocols only: {})",
                    net::link_unavailable().unwrap_or_else(|| "asked for".into())
                ),
            };
            log(&format!("network {}; {how}", info.description));
        }
        infos.push(info);
    }
    report.config.network = infos.clone();
    // Where the current scenario's results start (folded after its rounds).
    let mut first = 0;
    'cells: for info in &infos {
        for (scenario, params) in &cfg.scenarios {
            first = report.results.len();
            for round in 1..=cfg.repeat {
                if cfg.repeat > 1 {
                    log(&format!(
                        "{} round {round} of {}",
                        scenario.name(),
                        cfg.repeat
                    ));
                }
                for proto in &cfg.protocols {
                    let adapter = find(proto).ok_or_else(|| anyhow!("unknown protocol {proto}"))?;
                    let suffix = net_suffix(&nets, info);
                    let phases = if info.mode == NetMode::Relay && !net::carried_by_relay(proto) {
                        Err(format!(
                            "{proto} runs over TCP and the UDP relay carries only UDP ({})",
                            net::link_unavailable().map_or_else(
                                || "--net-mode relay".to_string(),
                                |w| format!("network namespaces unavailable: {w}")
                            )
                        ))
                    } else if let Some(why) = adapter.unavailable() {
                        Err(why)
                    } else {
                        scenario.phases_for(params, adapter)
                    };
                    let phases = match phases {
                        Ok(mut p) => {
                            for phase in &mut p {
                                phase.label.push_str(&suffix);
                            }
                            p
                        }
                        // Said and recorded once, not once per round.
                        Err(_) if round > 1 => continue,
                        Err(why) => {
                            log(&format!(
                                "{} {proto}{suffix}: skipped ({why})",
                                scenario.name()
                            ));
                            report.results.push(CellResult {
                                scenario: scenario.name().into(),
                                protocol: proto.clone(),
                                label: format!("-{suffix}"),
                                status: Status::Skipped,
                                error: Some(why),
                                workload: None,
                                metrics: None,
                                net: net_field(info),
                                runs: Vec::new(),
                            });
                            continue;
                        }
                    };
                    let cell = Cell {
                        cfg: &cfg,
                        scenario: *scenario,
                        proto,
                        phases: &phases,
                        cert: &cert,
                        key: &key,
                        net: info,
                    };
                    // The children are quark's, or a program of the stack's own.
                    // With both sides on agents, each finds its own.
                    let both_remote = cfg.agents.server.is_some() && cfg.agents.client.is_some();
                    let program = match adapter.external_child() {
                        Some(x) if !both_remote => x.locate(&cfg.exe),
                        _ => Ok(cfg.exe.clone()),
                    };
                    let exe = program.as_deref().unwrap_or(&cfg.exe);
                    let mut procs = Procs::new(exe, &mut signals, cfg.timeout);
                    let mut emulator = None;
                    let before = report.results.len();
                    let res = match &program {
                        Ok(_) => {
                            cell.run(&mut procs, &mut emulator, &mut report.results, &mut log)
                                .await
                        }
                        Err(missing) => Err(CellError::Failed(missing.clone())),
                    };
                    let res = match res {
                        Ok(()) => {
                            procs.shutdown().await;
                            Ok(())
                        }
                        Err(e) => {
                            procs.kill().await;
                            Err(e)
                        }
                    };
                    if let Some(e) = emulator.take() {
                        net::Emulator::stop(e).await;
                    }
                    match res {
                        Ok(()) => {}
                        Err(CellError::Failed(msg)) => {
                            exit_code = 1;
                            // The phases this cell finished before failing.
                            let done = report.results.len() - before;
                            let phase = phases.get(done.min(phases.len().saturating_sub(1)));
                            log(&format!(
                                "{} {proto} {}: error: {msg}",
                                scenario.name(),
                                phase.map_or("-", |p| &p.label)
                            ));
                            report.results.push(CellResult {
                                scenario: scenario.name().into(),
                                protocol: proto.clone(),
                                label: phase.map_or("-".into(), |p| p.label.clone()),
                                status: Status::Error,
                                error: Some(msg),
                                workload: phase.map(|p| p.workload.clone()),
                                metrics: None,
                                net: net_field(info),
                                runs: Vec::new(),
                            });
                        }
                        Err(CellError::Interrupted(sig)) => {
                            exit_code = 130;
                            report
                                .errors
                                .push(format!("interrupted by {sig}; results are partial"));
                            break 'cells;
                        }
                    }
                    drop(procs);
                    report.summarize();
                    save(&cfg, &mut report)?;
                }
            }
            if cfg.repeat > 1 {
                repeat::fold_rounds(&mut report.results, first);
                for line in repeat::lines(&report.results, first, &cfg.reference) {
                    log(&line);
                }
            }
        }
    }
    if exit_code == 130 && cfg.repeat > 1 {
        repeat::fold_rounds(&mut report.results, first);
    }
    report.complete = exit_code == 0;
    report.summarize();
    save(&cfg, &mut report)?;
    Ok(Outcome { report, exit_code })
}

/// ` @profile` after phase labels when the run has an emulated network.
fn net_suffix(nets: &[String], info: &NetInfo) -> String {
    if nets.len() == 1 && info.mode == NetMode::Loopback {
        String::new()
    } else {
        format!(" @{}", info.profile)
    }
}

fn net_field(info: &NetInfo) -> Option<String> {
    (info.mode != NetMode::Loopback).then(|| info.profile.clone())
}

fn save(cfg: &BenchConfig, report: &mut Report) -> anyhow::Result<()> {
    report.finished_unix_s = unix_now();
    crate::experiment::cloud::update(report);
    if let Some(path) = &cfg.json {
        let text = serde_json::to_string_pretty(report)?;
        std::fs::write(path, text + "\n").with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

#[derive(Deserialize)]
struct Listening {
    addr: SocketAddr,
}

#[derive(Deserialize)]
struct Done {
    result: ClientReport,
}

#[derive(Deserialize)]
struct ServerReport {
    usage: Usage,
    counters: ServerCounters,
    #[serde(default)]
    breakdown: Option<crate::results::SideBreakdown>,
}

#[derive(Deserialize)]
struct Ignore {}

struct Cell<'a> {
    cfg: &'a BenchConfig,
    scenario: Scenario,
    proto: &'a str,
    phases: &'a [Phase],
    cert: &'a std::path::Path,
    key: &'a std::path::Path,
    net: &'a NetInfo,
}

impl Cell<'_> {
    fn common(&self, cpu: Option<usize>) -> CommonArgs {
        CommonArgs {
            proto: self.proto.into(),
            cert: self.cert.into(),
            cipher: self.cfg.cipher.name().into(),
            cpu,
            threads: self.cfg.threads,
            cc: self.cfg.cc.to_string(),
            tcp_cc: self.cfg.tcp_cc.clone(),
            busy_poll: self.cfg.busy_poll,
            quic_version: self.cfg.quic_version,
            no_resumption: !self.cfg.resumption,
        }
    }

    async fn run(
        &self,
        procs: &mut Procs<'_>,
        emulator: &mut Option<net::Emulator>,
        results: &mut Vec<CellResult>,
        log: &mut impl FnMut(&str),
    ) -> Result<(), CellError> {
        let cfg = self.cfg;
        // Link mode: a fresh link per cell (the same seed, so the same
        // impairments, and blackholes timed from the cell's first packet).
        let prefix = format!("qlab{}", std::process::id() % 1_000_000);
        let (listen, netns) = if self.net.mode == NetMode::Link {
            let e = net::Emulator::link(&cfg.exe, &self.net.profile, &prefix, cfg.link_offload)
                .await
                .map_err(|e| CellError::Failed(format!("{e:#}")))?;
            *emulator = Some(e);
            let ip = IpAddr::from(net::LINK_SERVER_ADDR);
            (SocketAddr::new(ip, cfg.listen.port()), Some(prefix))
        } else if matches!(self.net.mode, NetMode::Veth | NetMode::VethXdp) {
            // A queue per server worker: over AF_XDP each serves one (see
            // `quark::WorkerGroup`), and client socket `i` sends on queue `i`.
            let queues = cfg.server_workers.unwrap_or(1);
            let (e, server) = net::Emulator::veth(&prefix, queues as u32)
                .map_err(|e| CellError::Failed(format!("{e:#}")))?;
            *emulator = Some(e);
            (
                SocketAddr::new(server.ip(), cfg.listen.port()),
                Some(prefix),
            )
        } else {
            (cfg.listen, None)
        };
        // veth-xdp: quark's endpoints (only) open AF_XDP sockets on the veth.
        let xdp = [true, false].map(|server| match (self.net.mode, emulator.as_ref()) {
            (NetMode::VethXdp, Some(e)) if self.proto == "quic" => e.veth_interface(server),
            _ => None,
        });
        let [server_xdp, client_xdp] = xdp;
        let server = ServerArgs {
            common: self.common(cfg.pin.map(|p| p.0)),
            listen,
            key: self.key.into(),
            die_after: cfg.die_after,
            server_workers: cfg.server_workers,
        };
        let ns = |side: &str| netns.as_ref().map(|p| format!("{p}-{side}"));
        if let Some(agent) = &cfg.agents.server {
            let files = (self.cert, Some(self.key));
            let argv = server.to_argv();
            procs
                .spawn_remote(agent, Side::Server, "lab-server", &argv, files)
                .await?;
        } else {
            procs.spawn_in(
                ns("a"),
                server_xdp,
                Side::Server,
                "lab-server",
                &server.to_argv(),
            )?;
        }
        let Listening { addr } = procs.expect(Side::Server, "listening").await?;
        let addr = match (addr.ip(), &cfg.agents.server) {
            // A wildcard listener on an agent is reached at the agent's address.
            (ip, Some(a)) if ip.is_unspecified() => SocketAddr::new(a.addr.ip(), addr.port()),
            // A wildcard listener is reached over loopback.
            (ip, None) if ip.is_unspecified() => {
                SocketAddr::new(IpAddr::from([127, 0, 0, 1]), addr.port())
            }
            _ => addr,
        };
        let addr = if self.net.mode == NetMode::Relay {
            let (e, relay) = net::Emulator::relay(&cfg.exe, &self.net.profile, addr)
                .await
                .map_err(|e| CellError::Failed(format!("{e:#}")))?;
            *emulator = Some(e);
            relay
        } else {
            addr
        };
        let phases =
            serde_json::to_string(self.phases).map_err(|e| CellError::Failed(e.to_string()))?;
        let client = ClientArgs {
            common: self.common(cfg.pin.map(|p| p.1)),
            server: addr,
            phases,
            progress_ms: if cfg.progress { 100 } else { 0 },
            client_sockets: cfg.client_sockets,
            client_threads: cfg.client_threads,
        };
        if let Some(agent) = &cfg.agents.client {
            let argv = client.to_argv();
            procs
                .spawn_remote(agent, Side::Client, "lab-client", &argv, (self.cert, None))
                .await?;
        } else {
            procs.spawn_in(
                ns("b"),
                client_xdp,
                Side::Client,
                "lab-client",
                &client.to_argv(),
            )?;
        }
        for phase in self.phases {
            procs.rearm();
            let _: Ignore = procs.expect(Side::Client, "phase").await?;
            procs.send(Side::Server, "mark").await?;
            let _: Ignore = procs.expect(Side::Server, "marked").await?;
            procs.send(Side::Client, "prepare").await?;
            let _: Ignore = procs.expect(Side::Client, "ready").await?;
            procs.send(Side::Server, "start").await?;
            let _: Ignore = procs.expect(Side::Server, "started").await?;
            procs.bar = cfg.progress.then(|| self.bar(phase));
            procs.send(Side::Client, "go").await?;
            let done: Result<Done, _> = procs.expect(Side::Client, "done").await;
            if let Some(bar) = procs.bar.take() {
                bar.finish_and_clear();
            }
            let Done { result } = done?;
            procs.send(Side::Server, "end").await?;
            let s: ServerReport = procs.expect(Side::Server, "report").await?;
            let mut metrics = merge(
                self.scenario,
                &phase.workload,
                &result,
                &s.usage,
                &s.counters,
            );
            // With client and server on one CPU, waking the peer inside a send
            // system call often runs it right there, so the call's time (what the
            // counters take for its CPU) holds the peer's work too: no breakdown.
            let shared_cpu = cfg.pin.is_some_and(|(server, client)| server == client);
            metrics.breakdown = crate::results::Breakdown::join(result.breakdown, s.breakdown)
                .filter(|_| !shared_cpu);
            log(&crate::table::phase_line(
                self.scenario.name(),
                self.proto,
                &phase.label,
                &metrics,
            ));
            results.push(CellResult {
                scenario: self.scenario.name().into(),
                protocol: self.proto.into(),
                label: phase.label.clone(),
                status: Status::Ok,
                error: None,
                workload: Some(phase.workload.clone()),
                metrics: Some(metrics),
                net: net_field(self.net),
                runs: Vec::new(),
            });
        }
        let _: Ignore = procs.expect(Side::Client, "finished").await?;
        Ok(())
    }

    fn bar(&self, phase: &Phase) -> ProgressBar {
        let bar = ProgressBar::with_draw_target(
            Some(phase.workload.progress_total()),
            ProgressDrawTarget::stderr(),
        );
        let unit = if phase.workload.is_timed() { "ms" } else { "" };
        let template = format!("{{prefix:>28}} [{{bar:30}}] {{pos}}/{{len}}{unit} {{elapsed}}");
        if let Ok(style) = ProgressStyle::with_template(&template) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_prefix(format!(
            "{} {} {}",
            self.scenario.name(),
            self.proto,
            phase.label
        ));
        bar
    }
}
