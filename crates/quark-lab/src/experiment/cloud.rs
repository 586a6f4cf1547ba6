//! The cloud study as one command (`quark bench --experiment cloud`, issue #29).
//!
//! Seed 004 measured nine protocols on Kubernetes (EKS, m6i.xlarge) with
//! persistent, ephemeral and parallel (100 in flight) clients, request =
//! response = 2/8/32/128/512 KiB, 10 000 requests, client and server on one
//! node ("Local"), two nodes of one zone ("Single-AZ") and two zones
//! ("Multi-AZ"), reporting p90 latency and throughput, CPU and memory.
//!
//! Here the placements are emulated: `same-host` is loopback, `same-zone` two
//! network namespaces joined by veth (the kernel's own path, tens of µs RTT:
//! this machine has no netem to add more), `cross-zone` the two namespaces
//! joined through quark's emulator with [`CROSS_ZONE_NET`] (delay only). With
//! agents the placement is whatever the hosts are, named by `--placement-label`.
//! Every cell becomes a [`CloudRow`] with the costs the study asked about and
//! ratios against `tcp+tls` of the same placement, scenario and size.

use serde::{Deserialize, Serialize};

use crate::results::{CellResult, Report, Status};
use crate::scenario::{Overrides, Params, Scenario};
use crate::workload::Workload;

/// The study's nine protocols, in its order (quark for QUIC and HTTP/3).
pub const PROTOCOLS: [&str; 9] = [
    "udp",
    "tcp",
    "tcp+tls",
    "quic",
    "http1",
    "http1+tls",
    "http2",
    "http2+tls",
    "h3",
];
/// The study's client kinds.
pub const SCENARIOS: [Scenario; 3] = [
    Scenario::Persistent,
    Scenario::Ephemeral,
    Scenario::Parallel,
];
/// What every row's ratios compare with (same placement, scenario, size).
pub const REFERENCE: &str = "tcp+tls";
/// The study's instance, m6i.xlarge, on demand in us-east-1: $0.192 an hour
/// for 4 vCPUs, i.e. $0.048 per vCPU-hour (AWS price list, 2024-2026).
pub const DEFAULT_VCPU_HOUR_PRICE: f64 = 0.048;
/// Where [`DEFAULT_VCPU_HOUR_PRICE`] comes from, recorded in the results.
pub const DEFAULT_PRICE_SOURCE: &str =
    "AWS m6i.xlarge on-demand us-east-1, $0.192/h for 4 vCPU (the seed's instance type)";
/// The cross-zone network: 1.5 ms RTT, no loss (AWS inter-AZ RTTs are ~1-2 ms).
pub const CROSS_ZONE_NET: &str = "rtt1.5-loss0";
/// Sizes of `--quick` (the seed's smallest and second largest).
pub const QUICK_SIZES: [u64; 2] = [2 << 10, 128 << 10];
/// Requests per phase in `--quick`.
pub const QUICK_REQUESTS: u64 = 100;
/// Requests in flight for `parallel` in `--quick` (the seed: 100).
pub const QUICK_IN_FLIGHT: u32 = 20;

/// Where client and server run, as emulated here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Same node: loopback.
    SameHost,
    /// Two nodes of one zone: veth between two namespaces.
    SameZone,
    /// Two zones: the namespaces joined through quark's emulator.
    CrossZone,
}

impl Placement {
    /// All three, in the study's order from near to far.
    pub const ALL: [Placement; 3] = [
        Placement::SameHost,
        Placement::SameZone,
        Placement::CrossZone,
    ];

    /// `--placements` name.
    pub fn name(self) -> &'static str {
        match self {
            Placement::SameHost => "same-host",
            Placement::SameZone => "same-zone",
            Placement::CrossZone => "cross-zone",
        }
    }

    /// The seed's name for it.
    pub fn seed_name(self) -> &'static str {
        match self {
            Placement::SameHost => "Local",
            Placement::SameZone => "Single-AZ",
            Placement::CrossZone => "Multi-AZ",
        }
    }

    /// The `--net` profile that emulates it.
    pub fn net(self) -> &'static str {
        match self {
            Placement::SameHost => crate::bench::net::LOOPBACK,
            Placement::SameZone => crate::bench::net::VETH,
            Placement::CrossZone => CROSS_ZONE_NET,
        }
    }

    /// Parses `same-host,same-zone,cross-zone`.
    pub fn parse_list(s: &str) -> anyhow::Result<Vec<Placement>> {
        let mut out = Vec::new();
        for name in s.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let p = Placement::ALL
                .into_iter()
                .find(|p| p.name() == name)
                .ok_or_else(|| {
                    anyhow::anyhow!(
                        "unknown placement '{name}' (available: same-host, same-zone, cross-zone)"
                    )
                })?;
            if !out.contains(&p) {
                out.push(p);
            }
        }
        if out.is_empty() {
            anyhow::bail!("--placements is empty");
        }
        Ok(out)
    }
}

/// What the command line asked of the experiment.
#[derive(Debug, Clone)]
pub struct CloudOptions {
    /// Emulated placements (ignored with agents).
    pub placements: Vec<Placement>,
    /// Price per vCPU-hour in USD.
    pub vcpu_hour_price: f64,
    /// Few sizes and short runs.
    pub quick: bool,
    /// With agents: the name of the hosts' placement.
    pub placement_label: Option<String>,
    /// Sides run on agents.
    pub agents: bool,
}

/// The experiment turned into what `quark bench` runs.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Protocols when the command line gave none.
    pub protocols: Vec<String>,
    /// The three scenarios with the study's (or quick) parameters.
    pub scenarios: Vec<(Scenario, Params)>,
    /// The `--net` list.
    pub net: String,
    /// The results section, rows filled as cells finish.
    pub section: CloudSection,
}

/// Builds the run: the user's overrides (`--sizes`, `--requests`, ...) win
/// over the quick form's, which win over the study's.
pub fn plan(o: &CloudOptions, user: &Overrides) -> anyhow::Result<Plan> {
    if !(o.vcpu_hour_price.is_finite() && o.vcpu_hour_price > 0.0 && o.vcpu_hour_price < 1e6) {
        anyhow::bail!("--vcpu-hour-price must be a positive number of USD");
    }
    let mut ov = user.clone();
    if o.quick {
        ov.sizes.get_or_insert_with(|| QUICK_SIZES.to_vec());
        ov.requests.get_or_insert(QUICK_REQUESTS);
        ov.in_flight.get_or_insert(QUICK_IN_FLIGHT);
    }
    let scenarios = SCENARIOS
        .into_iter()
        .map(|s| (s, s.defaults().with(s, &ov)))
        .collect();
    let placements: Vec<PlacementInfo> = if o.agents {
        vec![PlacementInfo {
            name: o.placement_label.clone().unwrap_or_else(|| "agents".into()),
            net: crate::bench::net::LOOPBACK.into(),
            emulated: false,
            seed_name: None,
            rtt_ms: None,
        }]
    } else {
        o.placements
            .iter()
            .map(|p| PlacementInfo {
                name: p.name().into(),
                net: p.net().into(),
                emulated: true,
                seed_name: Some(p.seed_name().into()),
                rtt_ms: None,
            })
            .collect()
    };
    let net = placements
        .iter()
        .map(|p| p.net.as_str())
        .collect::<Vec<_>>()
        .join(",");
    Ok(Plan {
        protocols: PROTOCOLS.iter().map(|p| p.to_string()).collect(),
        scenarios,
        net,
        section: CloudSection {
            experiment: "cloud".into(),
            vcpu_hour_price_usd: o.vcpu_hour_price,
            price_source: if o.vcpu_hour_price == DEFAULT_VCPU_HOUR_PRICE {
                DEFAULT_PRICE_SOURCE.into()
            } else {
                "--vcpu-hour-price".into()
            },
            quick: o.quick,
            reference: REFERENCE.into(),
            placements,
            rows: Vec::new(),
        },
    })
}

/// The experiment's part of the results file (`cloud`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CloudSection {
    /// Always `cloud`.
    pub experiment: String,
    /// USD per vCPU-hour the costs use.
    pub vcpu_hour_price_usd: f64,
    /// Where that price comes from.
    pub price_source: String,
    /// The `--quick` form.
    pub quick: bool,
    /// The protocol ratios compare with.
    pub reference: String,
    /// Each placement and the network that emulated it.
    pub placements: Vec<PlacementInfo>,
    /// One row per (placement, scenario, protocol, size), in run order.
    pub rows: Vec<CloudRow>,
}

/// One placement of the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlacementInfo {
    /// `same-host`, `same-zone`, `cross-zone`, or the `--placement-label`.
    pub name: String,
    /// The network profile its cells ran on.
    pub net: String,
    /// Emulated on this machine (false: real hosts through agents).
    pub emulated: bool,
    /// The seed's name for it (Local, Single-AZ, Multi-AZ).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed_name: Option<String>,
    /// Measured RTT: median TCP connect time of the `tcp` ephemeral cells (or
    /// the agents' probe); absent when nothing measured it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_ms: Option<f64>,
}

/// One cell in the study's terms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CloudRow {
    /// Placement name.
    pub placement: String,
    /// persistent, ephemeral or parallel.
    pub scenario: String,
    /// Protocol.
    pub protocol: String,
    /// Request = response size in bytes.
    pub size_bytes: u64,
    /// The cell's status.
    pub status: Status,
    /// Why it failed or was skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Measured values (status ok).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values: Option<CloudValues>,
}

/// What the study reports of a cell, plus the cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CloudValues {
    /// Request time percentiles, seconds.
    pub latency_p50_s: f64,
    /// 90th percentile (the study's figure).
    pub latency_p90_s: f64,
    /// 99th percentile.
    pub latency_p99_s: f64,
    /// Connection setup percentiles, seconds (ephemeral: a connection per
    /// request, whose request time above starts after the handshake).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_p50_s: Option<f64>,
    /// See `connect_p50_s`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_p90_s: Option<f64>,
    /// Payload (requests + responses) bits per second over the interval.
    pub throughput_bps: f64,
    /// Client + server CPU seconds per request.
    pub cpu_s_per_request: f64,
    /// Client + server CPU seconds per 10^9 payload bytes.
    pub cpu_s_per_gb: f64,
    /// Peak RSS of the client and the server, bytes.
    pub client_rss_bytes: u64,
    /// See `client_rss_bytes`.
    pub server_rss_bytes: u64,
    /// CPU cost of a million requests at the section's price, USD.
    pub usd_per_million_requests: f64,
    /// CPU cost of moving 10^12 payload bytes, USD.
    pub usd_per_tb: f64,
    /// This p90 / the reference's p90 (absent for the reference or without one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p90_vs_ref: Option<f64>,
    /// This CPU per request / the reference's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_vs_ref: Option<f64>,
}

/// Refills `report.cloud.rows` from the results (called after every cell).
pub fn update(report: &mut Report) {
    let Some(section) = report.cloud.as_mut() else {
        return;
    };
    let price = section.vcpu_hour_price_usd;
    let mut rows: Vec<CloudRow> = Vec::new();
    for r in &report.results {
        let Some(placement) = placement_of(section, r) else {
            continue;
        };
        if !SCENARIOS.iter().any(|s| s.name() == r.scenario) {
            continue;
        }
        let size_bytes = match &r.workload {
            Some(Workload::Fresh { response_len, .. })
            | Some(Workload::Persistent { response_len, .. }) => *response_len,
            // Skipped cells carry no workload: the label has the size.
            _ => {
                crate::size::parse_size(r.label.split(' ').next().unwrap_or("")).unwrap_or_default()
            }
        };
        rows.push(CloudRow {
            placement,
            scenario: r.scenario.clone(),
            protocol: r.protocol.clone(),
            size_bytes,
            status: r.status,
            error: r.error.clone(),
            values: values(r, price),
        });
    }
    ratios(&mut rows, &section.reference);
    for p in &mut section.placements {
        p.rtt_ms = measured_rtt(&report.results, p).or(p.rtt_ms);
    }
    if let (Some(p), [only]) = (&report.config.placement, section.placements.as_mut_slice()) {
        only.rtt_ms = p.rtt_ms.or(only.rtt_ms);
    }
    section.rows = rows;
}

/// The placement whose network a cell ran on.
fn placement_of(section: &CloudSection, r: &CellResult) -> Option<String> {
    let net = r.net.as_deref().unwrap_or(crate::bench::net::LOOPBACK);
    section
        .placements
        .iter()
        .find(|p| p.net == net)
        .map(|p| p.name.clone())
}

fn values(r: &CellResult, price: f64) -> Option<CloudValues> {
    let m = r.metrics.as_ref().filter(|_| r.status == Status::Ok)?;
    let l = m.latency_s.as_ref()?;
    let requests = m.requests.max(1) as f64;
    let cpu_per_request = m.cpu_s.total / requests;
    let cpu_s_per_gb = m.cpu_s_per_gb.map_or(0.0, |c| c.total);
    Some(CloudValues {
        latency_p50_s: l.p50,
        latency_p90_s: l.p90,
        latency_p99_s: l.p99,
        connect_p50_s: m.connect_s.as_ref().map(|c| c.p50),
        connect_p90_s: m.connect_s.as_ref().map(|c| c.p90),
        throughput_bps: m.goodput_bps,
        cpu_s_per_request: cpu_per_request,
        cpu_s_per_gb,
        client_rss_bytes: m.client.peak_rss_bytes,
        server_rss_bytes: m.server.peak_rss_bytes,
        usd_per_million_requests: cpu_per_request * 1e6 / 3600.0 * price,
        usd_per_tb: cpu_s_per_gb * 1e3 / 3600.0 * price,
        p90_vs_ref: None,
        cpu_vs_ref: None,
    })
}

/// Fills each row's ratios against the reference of the same cell coordinates.
fn ratios(rows: &mut [CloudRow], reference: &str) {
    let refs: Vec<(String, String, u64, f64, f64)> = rows
        .iter()
        .filter(|r| r.protocol == reference)
        .filter_map(|r| {
            let v = r.values.as_ref()?;
            Some((
                r.placement.clone(),
                r.scenario.clone(),
                r.size_bytes,
                v.latency_p90_s,
                v.cpu_s_per_request,
            ))
        })
        .collect();
    for row in rows.iter_mut().filter(|r| r.protocol != reference) {
        let found = refs.iter().find(|(p, s, b, ..)| {
            *p == row.placement && *s == row.scenario && *b == row.size_bytes
        });
        if let (Some((.., p90, cpu)), Some(v)) = (found, row.values.as_mut()) {
            v.p90_vs_ref = (*p90 > 0.0).then(|| v.latency_p90_s / p90);
            v.cpu_vs_ref = (*cpu > 0.0).then(|| v.cpu_s_per_request / cpu);
        }
    }
}

/// One TCP connect is one round trip: the median of the `tcp` ephemeral cells'
/// connect-time medians.
fn measured_rtt(results: &[CellResult], p: &PlacementInfo) -> Option<f64> {
    let mut v: Vec<f64> = results
        .iter()
        .filter(|r| r.protocol == "tcp" && r.scenario == "ephemeral" && r.status == Status::Ok)
        .filter(|r| r.net.as_deref().unwrap_or(crate::bench::net::LOOPBACK) == p.net)
        .filter_map(|r| r.metrics.as_ref()?.connect_s.as_ref().map(|c| c.p50 * 1e3))
        .collect();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied()
}

#[cfg(test)]
#[path = "cloud_tests.rs"]
mod tests;
