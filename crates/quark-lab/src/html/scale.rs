//! The `scale` scenario's charts: each metric against the connection count,
//! one line per protocol (log x axis, 100 → 100 000 connections).

use crate::results::{CellResult, Metrics};
use crate::scale::connections;
use crate::table::{fmt_bytes, fmt_secs};

use super::metrics;
use super::svg::{Axis, Frame};

type Pick = fn(&Metrics) -> Option<f64>;
type Format = fn(f64) -> String;
/// Chart id, title, y label, the value, whether the y axis is logarithmic, its format.
type Chart = (&'static str, &'static str, &'static str, Pick, bool, Format);

/// What is charted.
const CHARTS: [Chart; 9] = [
    (
        "scale-rps",
        "Requests per second vs connections",
        "req/s",
        |m| Some(m.requests_per_s),
        false,
        |v| format!("{v:.0}"),
    ),
    (
        "scale-p50",
        "Median request time vs connections",
        "p50",
        |m| m.latency_s.as_ref().map(|s| s.p50),
        true,
        fmt_secs,
    ),
    (
        "scale-p99",
        "p99 request time vs connections",
        "p99",
        |m| m.latency_s.as_ref().map(|s| s.p99),
        true,
        fmt_secs,
    ),
    (
        "scale-p999",
        "p99.9 request time vs connections",
        "p99.9",
        |m| m.latency_s.as_ref().map(|s| s.p999),
        true,
        fmt_secs,
    ),
    (
        "scale-cpu-server",
        "Server CPU per request vs connections",
        "CPU / request",
        |m| m.cpu_s_per_1000_requests.map(|c| c.server / 1000.0),
        false,
        fmt_secs,
    ),
    (
        "scale-cpu-client",
        "Client CPU per request vs connections",
        "CPU / request",
        |m| m.cpu_s_per_1000_requests.map(|c| c.client / 1000.0),
        false,
        fmt_secs,
    ),
    (
        "scale-mem-server",
        "Server memory per connection (peak RSS delta / connections)",
        "bytes",
        |m| m.memory_per_connection_bytes.map(|s| s.server),
        false,
        fmt_bytes,
    ),
    (
        "scale-mem-idle-server",
        "Server memory per idle connection (RSS with the connections open, before the requests)",
        "bytes",
        |m| m.idle_memory_per_connection_bytes.map(|s| s.server),
        false,
        fmt_bytes,
    ),
    (
        "scale-mem-client",
        "Client memory per connection (peak RSS delta / connections)",
        "bytes",
        |m| m.memory_per_connection_bytes.map(|s| s.client),
        false,
        fmt_bytes,
    ),
];

/// Draws the scale charts, or nothing when the run has no `scale` results.
pub(super) fn charts(
    out: &mut String,
    ok: &[&CellResult],
    protos: &[String],
    color: &dyn Fn(&str) -> &'static str,
) {
    let cells: Vec<(&CellResult, f64)> = ok
        .iter()
        .filter(|c| c.scenario == "scale")
        .filter_map(|c| Some((*c, f64::from(connections(c.workload.as_ref()?)?))))
        .collect();
    if cells.is_empty() {
        return;
    }
    out.push_str("<h2>Scaling with connections</h2>\n");
    for (id, title, ylabel, pick, log, fmt_y) in CHARTS {
        let values = || cells.iter().filter_map(|(c, _)| pick(metrics(c)));
        if values().next().is_none() {
            continue;
        }
        let f = Frame {
            w: 760.0,
            h: 320.0,
            x: Axis::fit(cells.iter().map(|(_, n)| *n), true),
            y: Axis::fit(values(), log),
        };
        f.open(
            out,
            id,
            title,
            "connections",
            ylabel,
            &|v| format!("{v:.0}"),
            &fmt_y,
        );
        for (i, p) in protos.iter().enumerate() {
            let mut pts: Vec<(f64, f64)> = cells
                .iter()
                .filter(|(c, _)| c.protocol == *p)
                .filter_map(|(c, n)| Some((*n, pick(metrics(c))?)))
                .collect();
            if pts.is_empty() {
                continue;
            }
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            f.line(out, color(p), p, &pts, true);
            f.legend(out, i, color(p), p);
        }
        f.close(out);
    }
}
