//! The results file (`--json`), schema `quark-lab/results` version 1.
//!
//! The JSON Schema is `schema/results-v1.json` in this crate ([`SCHEMA_JSON`]).
//! Times are seconds, sizes bytes, rates per second, CPU user + system seconds.
//! Fields are only ever added within a version; removing or changing one bumps it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::adapter::ServerCounters;
use crate::metrics::{Machine, Summary, Usage};
use crate::workload::Workload;

/// The `schema` field's value.
pub const SCHEMA_ID: &str = "quark-lab/results";
/// The `version` field's value.
pub const SCHEMA_VERSION: u32 = 1;
/// The JSON Schema of this version.
pub const SCHEMA_JSON: &str = include_str!("../schema/results-v1.json");

/// A whole `quark bench` run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Always [`SCHEMA_ID`].
    pub schema: String,
    /// Always [`SCHEMA_VERSION`].
    pub version: u32,
    /// Whether every cell ran (false when interrupted or a cell failed).
    pub complete: bool,
    /// Unix time the run started.
    pub started_unix_s: f64,
    /// Unix time the run ended (or was interrupted).
    pub finished_unix_s: f64,
    /// The exact command line.
    pub command_line: Vec<String>,
    /// Where it ran.
    pub machine: Machine,
    /// Versions of quark-lab, the compiler and the stacks measured.
    pub versions: BTreeMap<String, String>,
    /// Run-wide settings.
    pub config: RunConfig,
    /// One entry per (scenario, protocol, phase), in run order.
    pub results: Vec<CellResult>,
    /// Run-level errors (interruption, bad setup).
    pub errors: Vec<String>,
    /// One line per protocol with ratios to the reference.
    pub summary: Vec<ProtocolSummary>,
    /// The cloud study's rows (`--experiment cloud`; absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cloud: Option<crate::experiment::cloud::CloudSection>,
}

/// Run-wide settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunConfig {
    /// Network profiles as asked (`loopback`, or profiles such as
    /// `rtt{10,30}-loss{0,1}`; see `network` for each one).
    pub net: String,
    /// Protocols in run order.
    pub protocols: Vec<String>,
    /// Scenarios in run order.
    pub scenarios: Vec<String>,
    /// The protocol ratios are relative to.
    pub reference: String,
    /// TLS 1.3 cipher suite.
    pub cipher: String,
    /// The server certificate's key type (`--cert-key`; absent: ecdsa).
    #[serde(default = "ecdsa")]
    pub cert_key: String,
    /// The crypto library of quark and the rustls baselines (`QUARK_CRYPTO`;
    /// absent: ring).
    #[serde(default = "ring")]
    pub crypto: String,
    /// TLS session resumption (`--resumption`; absent: on).
    #[serde(default = "yes")]
    pub resumption: bool,
    /// quark's congestion controller (absent in older files: cubic).
    #[serde(default = "cubic")]
    pub cc: String,
    /// Linux's TCP congestion controller, or `system` (absent in older files).
    #[serde(default = "system")]
    pub tcp_cc: String,
    /// Every process busy-polled instead of sleeping (absent: false).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub busy_poll: bool,
    /// The only QUIC version quark spoke (`--quic-version`; absent: defaults).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quic_version: Option<u32>,
    /// Emulated links ran without NIC offloads (`--no-link-offload`; absent:
    /// false, or a file from before links had them).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_link_offload: bool,
    /// CPUs the server and client were pinned to.
    pub pin: Option<[u32; 2]>,
    /// Runtime threads per process (1 = single-threaded).
    pub threads: u32,
    /// Whether this was the default suite.
    pub suite: bool,
    /// Each network of the run and how it was emulated (absent in older files).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub network: Vec<crate::bench::NetInfo>,
    /// Server worker threads (`--server-workers`); absent: one endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_workers: Option<u32>,
    /// Client sockets connections were spread over.
    #[serde(default = "one")]
    pub client_sockets: u32,
    /// Client threads connections were spread over (`--client-threads`).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub client_threads: u32,
    /// Runs of every cell, protocols taking turns (`--repeat`; absent: 1).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub repeat: u32,
    /// Which host ran each side and the path between them (absent: both here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<crate::agent::Placement>,
}

fn ecdsa() -> String {
    "ecdsa".into()
}

fn ring() -> String {
    "ring".into()
}

fn yes() -> bool {
    true
}

fn one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

/// Outcome of a cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Measured.
    Ok,
    /// Failed; see `error`.
    Error,
    /// Not applicable to this protocol; see `error`.
    Skipped,
}

/// One measured phase of one protocol in one scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellResult {
    /// Scenario name.
    pub scenario: String,
    /// Protocol name.
    pub protocol: String,
    /// Phase label (size, or connections × streams).
    pub label: String,
    /// Outcome.
    pub status: Status,
    /// Why it failed or was skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Exactly what the client was asked to do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<Workload>,
    /// Measurements (status ok).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<Metrics>,
    /// The emulated network profile the cell ran on (absent: loopback).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub net: Option<String>,
    /// Each run's metrics, in run order, when the cell ran more than once
    /// (`--repeat`); `metrics` is then their median, field by field.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<Metrics>,
}

/// Client + server cost split.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Sides {
    /// Client side.
    pub client: f64,
    /// Server side.
    pub server: f64,
    /// Both.
    pub total: f64,
}

/// Datagram accounting (datagram protocols).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Datagrams {
    /// Sent by the client.
    pub sent: u64,
    /// Received by the server.
    pub received: u64,
    /// `sent - received`.
    pub lost: u64,
    /// `lost / sent`.
    pub loss_ratio: f64,
}

/// One category of a CPU breakdown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BreakdownItem {
    /// Category (crypto, send, recv, ack, other).
    pub name: String,
    /// Nanoseconds per unit.
    pub ns: f64,
}

/// One side's breakdown as a child process reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SideBreakdown {
    /// `packet` or `request`.
    pub unit: String,
    /// Nanoseconds per unit by category.
    pub items: Vec<BreakdownItem>,
}

/// Where the CPU went, per packet or per request (from a stack's own counters).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Breakdown {
    /// `packet` or `request`.
    pub unit: String,
    /// Client categories.
    pub client: Vec<BreakdownItem>,
    /// Server categories.
    pub server: Vec<BreakdownItem>,
}

impl Breakdown {
    /// Combines the two sides' reports (`None` when neither side has counters).
    pub fn join(client: Option<SideBreakdown>, server: Option<SideBreakdown>) -> Option<Breakdown> {
        let unit = server.as_ref().or(client.as_ref())?.unit.clone();
        Some(Breakdown {
            unit,
            client: client.map(|c| c.items).unwrap_or_default(),
            server: server.map(|s| s.items).unwrap_or_default(),
        })
    }
}

/// Measurements of a cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// Requests completed (blasts for datagram protocols).
    pub requests: u64,
    /// Connections the client opened during the measurement.
    pub connections: u64,
    /// Application payload moved: response + request bodies (datagram protocols:
    /// payload the server received).
    pub payload_bytes: u64,
    /// Wall time of the measured interval.
    pub elapsed_s: f64,
    /// Payload bits per second. `goodput`: over the sum of download times
    /// (request sent → last byte, connection setup excluded); others: over `elapsed_s`.
    pub goodput_bps: f64,
    /// Requests per second over `elapsed_s`.
    pub requests_per_s: f64,
    /// New connections per second (fresh-connection scenarios).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handshakes_per_s: Option<f64>,
    /// Request time: request sent → last response byte.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_s: Option<Summary>,
    /// Connection establishment time (fresh-connection scenarios).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_s: Option<Summary>,
    /// `[seconds, fraction]` points of the request-time CDF.
    pub latency_cdf: Vec<[f64; 2]>,
    /// `[seconds, fraction]` points of the connect-time CDF.
    pub connect_cdf: Vec<[f64; 2]>,
    /// Most requests in flight at once (client side).
    pub peak_in_flight: u64,
    /// Most connections open at once (client side).
    pub peak_connections: u64,
    /// Client process usage in the interval.
    pub client: Usage,
    /// Server process usage in the interval.
    pub server: Usage,
    /// What the server counted in the interval.
    pub server_counters: ServerCounters,
    /// CPU seconds (user + system).
    pub cpu_s: Sides,
    /// CPU seconds per 10^9 payload bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_s_per_gb: Option<Sides>,
    /// CPU seconds per 1000 requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_s_per_1000_requests: Option<Sides>,
    /// (Peak RSS − RSS before connecting) / peak connections, per side.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_per_connection_bytes: Option<Sides>,
    /// (RSS at the interval start − RSS before connecting) / peak
    /// connections, per side: the connections open, idle after setup.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_memory_per_connection_bytes: Option<Sides>,
    /// Datagram accounting (datagram protocols).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub datagrams: Option<Datagrams>,
    /// CPU breakdown from the stack's internal counters, when it has them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breakdown: Option<Breakdown>,
    /// Disagreements between what the client did and the server saw.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// CPU seconds of each client thread (`--client-threads` above 1).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub client_thread_cpu_s: Vec<f64>,
}

/// A protocol's headline numbers and its ratios to the reference.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProtocolSummary {
    /// Protocol.
    pub protocol: String,
    /// Goodput of the largest goodput size measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goodput_bps: Option<f64>,
    /// Label of that size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goodput_label: Option<String>,
    /// Total CPU seconds per GB in that cell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_s_per_gb: Option<f64>,
    /// Requests per second in the rps scenario.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests_per_s: Option<f64>,
    /// Reference goodput / this goodput.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ref_goodput_ratio: Option<f64>,
    /// Reference CPU per GB / this CPU per GB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ref_cpu_per_gb_ratio: Option<f64>,
}

impl Report {
    /// Reads a results file, checking schema and version.
    pub fn from_json(text: &str) -> anyhow::Result<Report> {
        let v: serde_json::Value = serde_json::from_str(text)?;
        let schema = v.get("schema").and_then(|s| s.as_str()).unwrap_or_default();
        let version = v
            .get("version")
            .and_then(|s| s.as_u64())
            .unwrap_or_default();
        if schema != SCHEMA_ID || version != u64::from(SCHEMA_VERSION) {
            anyhow::bail!(
                "not a {SCHEMA_ID} v{SCHEMA_VERSION} file (schema '{schema}', version {version})"
            );
        }
        Ok(serde_json::from_value(v)?)
    }

    /// Computes the per-protocol summary against `reference`.
    pub fn summarize(&mut self) {
        fn mine<'a>(
            r: &'a [CellResult],
            proto: &'a str,
            scn: &'a str,
        ) -> impl Iterator<Item = &'a CellResult> {
            r.iter()
                .filter(move |c| c.status == Status::Ok && c.protocol == proto && c.scenario == scn)
        }
        let mut out = Vec::new();
        for proto in &self.config.protocols {
            let mine = |scn: &'static str| mine(&self.results, proto, scn);
            let big = mine("goodput")
                .filter_map(|c| Some((c, c.workload.as_ref()?)))
                .max_by_key(|(_, w)| match w {
                    Workload::Fresh { response_len, .. } => *response_len,
                    Workload::Blast { bytes, .. } => *bytes,
                    _ => 0,
                });
            let m = big.and_then(|(c, _)| c.metrics.as_ref().map(|m| (c, m)));
            out.push(ProtocolSummary {
                protocol: proto.clone(),
                goodput_bps: m.map(|(_, m)| m.goodput_bps),
                goodput_label: m.map(|(c, _)| c.label.clone()),
                cpu_s_per_gb: m.and_then(|(_, m)| m.cpu_s_per_gb.map(|s| s.total)),
                requests_per_s: mine("rps")
                    .filter_map(|c| c.metrics.as_ref())
                    .map(|m| m.requests_per_s)
                    .next(),
                ref_goodput_ratio: None,
                ref_cpu_per_gb_ratio: None,
            });
        }
        let reference = out
            .iter()
            .find(|s| s.protocol == self.config.reference)
            .cloned();
        if let Some(r) = reference {
            for s in &mut out {
                let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
                    (Some(a), Some(b)) if b > 0.0 => Some(a / b),
                    _ => None,
                };
                s.ref_goodput_ratio = ratio(r.goodput_bps, s.goodput_bps);
                s.ref_cpu_per_gb_ratio = ratio(r.cpu_s_per_gb, s.cpu_s_per_gb);
            }
        }
        self.summary = out;
    }
}

fn cubic() -> String {
    "cubic".into()
}

fn system() -> String {
    "system".into()
}
