//! Terminal output: one line per finished phase, the results table and the
//! per-protocol summary with ratios to the reference.

use std::fmt::Write;

use crate::results::{Metrics, Report, Status};

/// `12.3 Gbit/s`.
pub fn fmt_bps(bps: f64) -> String {
    match bps {
        b if b >= 1e9 => format!("{:.2} Gbit/s", b / 1e9),
        b if b >= 1e6 => format!("{:.1} Mbit/s", b / 1e6),
        b => format!("{:.1} kbit/s", b / 1e3),
    }
}

/// `153µs`, `2.31ms`, `1.20s`.
pub fn fmt_secs(s: f64) -> String {
    match s {
        s if s >= 1.0 => format!("{s:.2}s"),
        s if s >= 1e-3 => format!("{:.2}ms", s * 1e3),
        s => format!("{:.0}µs", s * 1e6),
    }
}

/// `12.0 MiB`.
pub fn fmt_bytes(b: f64) -> String {
    match b {
        b if b >= (1u64 << 30) as f64 => format!("{:.1} GiB", b / (1u64 << 30) as f64),
        b if b >= (1u64 << 20) as f64 => format!("{:.1} MiB", b / (1u64 << 20) as f64),
        b if b >= 1024.0 => format!("{:.1} KiB", b / 1024.0),
        b => format!("{b:.0} B"),
    }
}

/// One line for a finished phase.
pub fn phase_line(scenario: &str, proto: &str, label: &str, m: &Metrics) -> String {
    let mut s = format!("{scenario} {proto} {label}: {}", fmt_bps(m.goodput_bps));
    if m.requests > 1 {
        let _ = write!(s, ", {:.0} req/s", m.requests_per_s);
    }
    if let Some(l) = &m.latency_s {
        let _ = write!(s, ", p50 {} p99 {}", fmt_secs(l.p50), fmt_secs(l.p99));
    }
    if let Some(c) = m.cpu_s_per_gb {
        let _ = write!(s, ", {:.2} CPU s/GB", c.total);
    }
    if let Some(d) = m.datagrams {
        let _ = write!(s, ", {:.2}% lost", d.loss_ratio * 100.0);
    }
    if !m.client_thread_cpu_s.is_empty() && m.elapsed_s > 0.0 {
        // Each client thread's share of its core: which side set the pace.
        let busy: Vec<String> = m
            .client_thread_cpu_s
            .iter()
            .map(|c| format!("{:.0}%", 100.0 * c / m.elapsed_s))
            .collect();
        let _ = write!(s, ", client threads {}", busy.join("/"));
    }
    for w in &m.warnings {
        let _ = write!(s, " [warning: {w}]");
    }
    s
}

/// The results table and the summary.
pub fn render(report: &Report) -> String {
    let header = [
        "scenario",
        "protocol",
        "size",
        "goodput",
        "req/s",
        "p50",
        "p99",
        "connect p50",
        "CPU c+s s",
        "CPU s/GB",
        "CPU s/1k req",
        "RSS c/s",
    ];
    let mut rows: Vec<Vec<String>> = vec![header.iter().map(|s| s.to_string()).collect()];
    for r in &report.results {
        let mut row = vec![r.scenario.clone(), r.protocol.clone(), r.label.clone()];
        match (&r.status, &r.metrics) {
            (Status::Ok, Some(m)) => {
                let opt = |v: Option<String>| v.unwrap_or_else(|| "-".into());
                row.push(fmt_bps(m.goodput_bps));
                row.push(if m.requests > 1 {
                    format!("{:.0}", m.requests_per_s)
                } else {
                    "-".into()
                });
                row.push(opt(m.latency_s.as_ref().map(|l| fmt_secs(l.p50))));
                row.push(opt(m.latency_s.as_ref().map(|l| fmt_secs(l.p99))));
                row.push(opt(m.connect_s.as_ref().map(|l| fmt_secs(l.p50))));
                row.push(format!("{:.2}+{:.2}", m.cpu_s.client, m.cpu_s.server));
                row.push(opt(m.cpu_s_per_gb.map(|c| format!("{:.2}", c.total))));
                row.push(opt(m
                    .cpu_s_per_1000_requests
                    .map(|c| format!("{:.3}", c.total))));
                row.push(format!(
                    "{}/{}",
                    fmt_bytes(m.client.peak_rss_bytes as f64),
                    fmt_bytes(m.server.peak_rss_bytes as f64)
                ));
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
        rows.push(row);
    }
    let mut out = align(&rows, header.len());
    if report.config.repeat > 1 {
        let _ = writeln!(
            out,
            "(medians of {} runs per cell, the protocols taking turns; every run is in the JSON)",
            report.config.repeat
        );
    }
    out.push_str(&summary(report));
    if let Some(cloud) = &report.cloud {
        out.push_str(&crate::experiment::cloud_table::render(cloud));
    }
    // Figures compare only within one kind of build: name it when it is not
    // the plain release build that the README's command makes.
    if let Some(build) = report.versions.get("build").filter(|b| *b != "release") {
        let _ = writeln!(out, "\nbuild: {build}");
    }
    out
}

/// One line per protocol, with the reference's ratios to it.
pub fn summary(report: &Report) -> String {
    let mut out = String::new();
    // Ratios come from goodput and rps; other scenarios stand in the table alone.
    let any = report
        .summary
        .iter()
        .any(|s| s.goodput_bps.is_some() || s.requests_per_s.is_some());
    if !any {
        return out;
    }
    let reference = &report.config.reference;
    let _ = writeln!(
        out,
        "\nsummary (reference: {reference}; ratio = {reference} / protocol)"
    );
    for s in &report.summary {
        let mut line = format!("{:<10}", s.protocol);
        if let (Some(g), Some(l)) = (s.goodput_bps, &s.goodput_label) {
            let _ = write!(line, "  goodput {} ({l})", fmt_bps(g));
        }
        if let Some(c) = s.cpu_s_per_gb {
            let _ = write!(line, "  {c:.2} CPU s/GB");
        }
        if let Some(r) = s.requests_per_s {
            let _ = write!(line, "  {r:.0} req/s");
        }
        if s.protocol != *reference {
            if let Some(r) = s.ref_goodput_ratio {
                let _ = write!(line, "  | {reference} goodput {r:.2}x");
            }
            if let Some(r) = s.ref_cpu_per_gb_ratio {
                let _ = write!(line, ", CPU/GB {r:.2}x");
            }
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    out
}

/// Rows as text columns two spaces apart, each as wide as its widest cell
/// among the full rows (of `cols` cells); shorter rows (errors) run on.
pub(crate) fn align(rows: &[Vec<String>], cols: usize) -> String {
    let mut width = vec![0; cols];
    for row in rows.iter().filter(|r| r.len() == cols) {
        for (w, c) in width.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    for row in rows {
        let line: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(i, c)| {
                if i + 1 < row.len() {
                    format!("{c:<w$}", w = width[i])
                } else {
                    c.clone()
                }
            })
            .collect();
        let _ = writeln!(out, "{}", line.join("  ").trim_end());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(fmt_bps(12.345e9), "12.35 Gbit/s");
        assert_eq!(fmt_bps(5e6), "5.0 Mbit/s");
        assert_eq!(fmt_secs(0.000153), "153µs");
        assert_eq!(fmt_secs(0.00231), "2.31ms");
        assert_eq!(fmt_bytes(12.0 * 1048576.0), "12.0 MiB");
    }
}
