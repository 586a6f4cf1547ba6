//! The cloud study's text table: one block per placement, a line per
//! (scenario, protocol, size), and the ratios to `tcp+tls` of the same cell.

use std::fmt::Write;

use super::cloud::{CloudRow, CloudSection};
use crate::results::Status;
use crate::size::format_size;
use crate::table::{fmt_bps, fmt_bytes, fmt_secs};

/// The header of every block.
pub const HEADER: [&str; 13] = [
    "scenario",
    "protocol",
    "size",
    "p50",
    "p90",
    "p99",
    "connect p90",
    "throughput",
    "CPU ms/req",
    "CPU s/GB",
    "RSS c/s",
    "$/1M req",
    "p90, CPU vs ref",
];

/// The cells of one row, [`HEADER`]'s columns (or fewer, with the reason, when
/// the cell did not run).
pub fn cells(r: &CloudRow) -> Vec<String> {
    let size = if r.size_bytes == 0 {
        "all".to_string()
    } else {
        format_size(r.size_bytes)
    };
    let mut row = vec![r.scenario.clone(), r.protocol.clone(), size];
    match (&r.status, &r.values) {
        (Status::Ok, Some(v)) => {
            row.push(fmt_secs(v.latency_p50_s));
            row.push(fmt_secs(v.latency_p90_s));
            row.push(fmt_secs(v.latency_p99_s));
            row.push(v.connect_p90_s.map_or("-".into(), fmt_secs));
            row.push(fmt_bps(v.throughput_bps));
            row.push(format!("{:.3}", v.cpu_s_per_request * 1e3));
            row.push(format!("{:.2}", v.cpu_s_per_gb));
            row.push(format!(
                "{}/{}",
                fmt_bytes(v.client_rss_bytes as f64),
                fmt_bytes(v.server_rss_bytes as f64)
            ));
            row.push(format!("{:.4}", v.usd_per_million_requests));
            row.push(match (v.p90_vs_ref, v.cpu_vs_ref) {
                (Some(p), Some(c)) => format!("{p:.2}x, {c:.2}x"),
                _ => "-".into(),
            });
        }
        (status, _) => {
            let what = if *status == Status::Skipped {
                "skipped"
            } else {
                "ERROR"
            };
            row.push(format!("{what}: {}", r.error.as_deref().unwrap_or("")));
        }
    }
    row
}

/// The whole section as text.
pub fn render(s: &CloudSection) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\ncloud study: CPU at ${}/vCPU-hour ({}); ratios = protocol / {} of the same placement, scenario and size",
        s.vcpu_hour_price_usd, s.price_source, s.reference
    );
    for p in &s.placements {
        let rtt = p
            .rtt_ms
            .map_or("RTT not measured (tcp ephemeral measures it)".into(), |r| {
                format!("RTT {r:.3} ms")
            });
        let seed = p
            .seed_name
            .as_deref()
            .map_or(String::new(), |n| format!(", the seed's {n}"));
        let how = if p.emulated { "emulated" } else { "real hosts" };
        let _ = writeln!(out, "\n[{}] net {} ({how}{seed}), {rtt}", p.name, p.net);
        let mut rows: Vec<Vec<String>> = vec![HEADER.iter().map(|h| h.to_string()).collect()];
        rows.extend(s.rows.iter().filter(|r| r.placement == p.name).map(cells));
        out.push_str(&crate::table::align(&rows, HEADER.len()));
    }
    out
}
