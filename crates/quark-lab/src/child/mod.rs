//! The lab's server and client processes (`quark lab-server`, `quark lab-client`)
//! and the line protocol the orchestrator drives them with.
//!
//! Each child prints one JSON object per line on stdout (events) and reads one
//! word per line on stdin (commands). Logs go to stderr. A child exits when its
//! stdin closes, and asks the kernel to kill it when its parent dies
//! (`PR_SET_PDEATHSIG`), so no child outlives the orchestrator.
//!
//! Server: prints `listening {addr}`; then per phase `mark` (RSS baseline) →
//! `marked`, `start` (reset counters, start CPU/RSS meter) → `started`, `end` →
//! `report {usage, counters}`; `quit` or EOF exits.
//!
//! Client: per phase prints `phase {index}`, waits for `prepare`, warms up and
//! connects, prints `ready`, waits for `go`, runs the measured part (printing
//! `progress {done}` when asked), prints `done {result}` and tears down; after
//! the last phase prints `finished`. Any failure prints `error {message}`.

use std::io::Write;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::adapter::ServerCounters;
use crate::metrics::{Summary, Usage};
use crate::results::SideBreakdown;

mod client;
mod server;
mod threads;
#[cfg(test)]
mod threads_tests;
mod ticker;

pub use client::run_client;
pub use server::run_server;

/// Environment variable carrying the orchestrator's pid to its children.
pub const PARENT_ENV: &str = "QUARK_LAB_PARENT";

/// Events a server prints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum ServerEvent {
    /// Bound and serving.
    Listening {
        /// The bound address.
        addr: String,
    },
    /// RSS baseline taken.
    Marked,
    /// Interval started.
    Started,
    /// Interval ended.
    Report {
        /// Usage in the interval.
        usage: Usage,
        /// Counters in the interval.
        counters: ServerCounters,
        /// The stack's CPU breakdown, when it keeps counters.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        breakdown: Option<SideBreakdown>,
    },
    /// Fatal error.
    Error {
        /// What went wrong.
        message: String,
    },
}

/// What a client measured in one phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientReport {
    /// Requests completed.
    pub requests: u64,
    /// Connections opened in the interval.
    pub connections: u64,
    /// Response payload bytes received.
    pub bytes_in: u64,
    /// Request payload bytes sent.
    pub bytes_out: u64,
    /// Wall time of the interval.
    pub elapsed_s: f64,
    /// Sum of request times.
    pub request_time_s: f64,
    /// Request-time summary.
    pub latency_s: Option<Summary>,
    /// Connect-time summary.
    pub connect_s: Option<Summary>,
    /// Request-time CDF points.
    pub latency_cdf: Vec<[f64; 2]>,
    /// Connect-time CDF points.
    pub connect_cdf: Vec<[f64; 2]>,
    /// Most requests in flight.
    pub peak_in_flight: u64,
    /// Most connections open.
    pub peak_connections: u64,
    /// Datagrams sent (datagram protocols).
    pub datagrams_sent: Option<u64>,
    /// Requests lost for good (udp request/response: no retransmission).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub lost: u64,
    /// Usage in the interval.
    pub usage: Usage,
    /// The stack's CPU breakdown, when it keeps counters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breakdown: Option<SideBreakdown>,
    /// CPU cores the client could use (1 when pinned or single-threaded; 0:
    /// unknown, from an older client).
    #[serde(default)]
    pub cores: u32,
    /// CPU seconds of each client thread in the interval (`--client-threads`
    /// above 1; empty otherwise).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thread_cpu_s: Vec<f64>,
}

/// Events a client prints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum ClientEvent {
    /// A phase begins; waiting for `prepare`.
    Phase {
        /// Phase index.
        index: usize,
    },
    /// Prepared; waiting for `go`.
    Ready,
    /// Units done so far.
    Progress {
        /// Requests, blasts, or elapsed milliseconds (timed workloads).
        done: u64,
    },
    /// Phase measured.
    Done {
        /// The measurement.
        result: Box<ClientReport>,
    },
    /// All phases done.
    Finished,
    /// Fatal error.
    Error {
        /// What went wrong.
        message: String,
    },
}

/// Options shared by both children.
#[derive(Debug, Clone, clap::Args)]
pub struct CommonArgs {
    /// Protocol adapter name.
    #[arg(long)]
    pub proto: String,
    /// Server certificate (DER).
    #[arg(long)]
    pub cert: PathBuf,
    /// TLS 1.3 cipher suite.
    #[arg(long, default_value = "aes128gcm")]
    pub cipher: String,
    /// Pin this process to one CPU.
    #[arg(long)]
    pub cpu: Option<usize>,
    /// Runtime worker threads (1 = single-threaded runtime).
    #[arg(long, default_value_t = 1)]
    pub threads: u32,
    /// quark's congestion controller.
    #[arg(long, default_value = "cubic")]
    pub cc: String,
    /// Linux's TCP congestion controller (`system`: leave the default).
    #[arg(long, default_value = "cubic")]
    pub tcp_cc: String,
    /// Poll instead of sleeping (see `quark bench --busy-poll`).
    #[arg(long)]
    pub busy_poll: bool,
    /// The only QUIC version quark speaks (see `quark bench --quic-version`).
    #[arg(long)]
    pub quic_version: Option<u32>,
    /// No TLS session resumption (see `quark bench --resumption`).
    #[arg(long)]
    pub no_resumption: bool,
}

impl CommonArgs {
    /// Apply the congestion-control choices to this process's adapters.
    pub fn apply_congestion_control(&self) -> anyhow::Result<()> {
        let cc = self.cc.parse().map_err(|e: String| anyhow::anyhow!(e))?;
        crate::adapter::quic::set_congestion_control(cc);
        if let Some(v) = self.quic_version {
            crate::adapter::quic::set_quic_version(v);
        }
        if self.no_resumption {
            crate::adapter::tls::set_resumption(false);
        }
        crate::adapter::tcp::set_tcp_congestion(
            (self.tcp_cc != "system").then(|| self.tcp_cc.clone()),
        );
        Ok(())
    }
}

impl CommonArgs {
    fn to_argv(&self) -> Vec<String> {
        let mut v = vec![
            "--proto".into(),
            self.proto.clone(),
            "--cert".into(),
            self.cert.display().to_string(),
        ];
        v.extend([
            "--cipher".into(),
            self.cipher.clone(),
            "--threads".into(),
            self.threads.to_string(),
            "--cc".into(),
            self.cc.clone(),
            "--tcp-cc".into(),
            self.tcp_cc.clone(),
        ]);
        if let Some(c) = self.cpu {
            v.extend(["--cpu".into(), c.to_string()]);
        }
        if self.busy_poll {
            v.push("--busy-poll".into());
        }
        if let Some(q) = self.quic_version {
            v.extend(["--quic-version".into(), q.to_string()]);
        }
        if self.no_resumption {
            v.push("--no-resumption".into());
        }
        v
    }
}

/// `quark lab-server` options.
#[derive(Debug, Clone, clap::Args)]
pub struct ServerArgs {
    /// Shared options.
    #[command(flatten)]
    pub common: CommonArgs,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: std::net::SocketAddr,
    /// Private key (PKCS#8 DER) for the certificate.
    #[arg(long)]
    pub key: PathBuf,
    /// Fault injection: exit after this many requests.
    #[arg(long)]
    pub die_after: Option<u64>,
    /// Server worker threads: the stack's own (`quic`: SO_REUSEPORT workers), or
    /// for other protocols runtime threads. Absent: one endpoint on the runtime.
    #[arg(long)]
    pub server_workers: Option<usize>,
}

impl ServerArgs {
    /// The arguments after `quark lab-server`.
    pub fn to_argv(&self) -> Vec<String> {
        let mut v = self.common.to_argv();
        v.extend([
            "--listen".into(),
            self.listen.to_string(),
            "--key".into(),
            self.key.display().to_string(),
        ]);
        if let Some(d) = self.die_after {
            v.extend(["--die-after".into(), d.to_string()]);
        }
        if let Some(n) = self.server_workers {
            v.extend(["--server-workers".into(), n.to_string()]);
        }
        v
    }
}

/// `quark lab-client` options.
#[derive(Debug, Clone, clap::Args)]
pub struct ClientArgs {
    /// Shared options.
    #[command(flatten)]
    pub common: CommonArgs,
    /// Server address.
    #[arg(long)]
    pub server: std::net::SocketAddr,
    /// The phases to run, as JSON (a list of `Phase`).
    #[arg(long)]
    pub phases: String,
    /// Print progress this often (0: never).
    #[arg(long, default_value_t = 0)]
    pub progress_ms: u64,
    /// Local sockets to spread connections over (protocols that share one).
    #[arg(long, default_value_t = 1)]
    pub client_sockets: usize,
    /// Client threads, each with its own runtime, sockets and share of the
    /// connections (1: the phases run on the process's runtime).
    #[arg(long, default_value_t = 1)]
    pub client_threads: usize,
}

impl ClientArgs {
    /// The arguments after `quark lab-client`.
    pub fn to_argv(&self) -> Vec<String> {
        let mut v = self.common.to_argv();
        v.extend([
            "--server".into(),
            self.server.to_string(),
            "--phases".into(),
            self.phases.clone(),
        ]);
        v.extend(["--progress-ms".into(), self.progress_ms.to_string()]);
        v.extend(["--client-sockets".into(), self.client_sockets.to_string()]);
        // Only when asked: external clients (quic-go's) do not know it.
        if self.client_threads > 1 {
            v.extend(["--client-threads".into(), self.client_threads.to_string()]);
        }
        v
    }
}

/// Prints one event line and flushes.
fn emit<T: Serialize>(event: &T) {
    let mut out = std::io::stdout().lock();
    if let Ok(line) = serde_json::to_string(event) {
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }
}

/// The busy-poll window of stacks that poll themselves (`--busy-poll`): several
/// loopback exchanges of 32 KiB, so a hiccup on one side (a timer tick) does
/// not let the other fall asleep; 50 µs did (see `quark::Endpoint::set_busy_poll`).
const BUSY_POLL: std::time::Duration = std::time::Duration::from_micros(200);

/// Child-process setup: die with the parent, optionally pin, build the runtime.
fn setup(common: &CommonArgs) -> anyhow::Result<tokio::runtime::Runtime> {
    #[cfg(target_os = "linux")]
    {
        nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)?;
        // The parent may have died before the call above took effect.
        if let Some(parent) = std::env::var(PARENT_ENV)
            .ok()
            .and_then(|p| p.parse::<i32>().ok())
            && nix::unistd::getppid().as_raw() != parent
        {
            anyhow::bail!("orchestrator {parent} is gone");
        }
    }
    if let Some(cpu) = common.cpu {
        crate::metrics::pin_to_cpu(cpu)?;
    }
    // Many connections need many descriptors (TCP: one each).
    let nofile = crate::scale::raise_nofile();
    tracing::debug!(nofile, "open-file limit");
    let rt = match common.threads {
        0 | 1 => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?,
        n => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(n as usize)
            .enable_all()
            .build()?,
    };
    if common.busy_poll {
        let native = crate::adapter::find(&common.proto).is_some_and(|a| a.busy_poll(BUSY_POLL));
        if !native {
            // A task that always yields: the runtime then polls epoll with a
            // zero timeout instead of sleeping in it (tokio checks for I/O
            // before it runs a yielded task again).
            rt.spawn(async {
                loop {
                    tokio::task::yield_now().await;
                }
            });
        }
    }
    Ok(rt)
}

/// Reads command lines from stdin; exits the process when stdin closes.
fn commands() -> tokio::sync::mpsc::UnboundedReceiver<String> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    // A plain thread: tokio's stdin would keep a blocking-pool thread anyway.
    std::thread::spawn(move || {
        let mut line = String::new();
        loop {
            line.clear();
            match std::io::stdin().read_line(&mut line) {
                Ok(0) | Err(_) => std::process::exit(0),
                Ok(_) => {
                    if tx.send(line.trim().to_string()).is_err() {
                        return;
                    }
                }
            }
        }
    });
    rx
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
