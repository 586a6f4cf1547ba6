//! The HTML report: the papers' figures as hand-written SVG — goodput vs size
//! per protocol (log axes), latency CDFs, CPU per GB bars, and a CPU-breakdown
//! stacked bar chart when the results carry breakdown data — plus the table.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::results::{CellResult, Metrics, Report, Status};
use crate::size::format_size;
use crate::table::{fmt_bps, fmt_secs};
use crate::workload::Workload;

mod scale;
pub mod svg;

use svg::{Axis, Frame, PALETTE, esc};

/// Renders the report as one self-contained HTML page (no scripts, no external files).
pub fn render(report: &Report) -> String {
    let mut out = String::new();
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/><title>quark bench report</title>");
    out.push_str(
        "<style>body{font-family:sans-serif;margin:2em;max-width:1100px}table{border-collapse:collapse;font-size:12px}\
         td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}th{background:#eee}td:nth-child(-n+3){text-align:left}\
         .err{color:#b00}.note{color:#666}svg.chart{display:block;margin:1em 0}</style></head><body>\n",
    );
    out.push_str("<h1>quark bench report</h1>\n");
    let m = &report.machine;
    let _ = writeln!(
        out,
        "<p>{} ({} cores), Linux {}, net <b>{}</b>, cipher {}, reference <b>{}</b>{}{}</p>",
        esc(&m.cpu_model),
        m.cores,
        esc(&m.kernel),
        esc(&report.config.net),
        esc(&report.config.cipher),
        esc(&report.config.reference),
        if report.config.busy_poll {
            ", <b>busy polling</b> (no process sleeps)"
        } else {
            ""
        },
        if report.complete {
            ""
        } else {
            " — <span class=\"err\">partial results</span>"
        }
    );
    let _ = writeln!(
        out,
        "<p class=\"note\"><code>{}</code></p>",
        esc(&report.command_line.join(" "))
    );
    let protos = &report.config.protocols;
    let color = |p: &str| PALETTE[protos.iter().position(|x| x == p).unwrap_or(0) % PALETTE.len()];
    let ok: Vec<&CellResult> = report
        .results
        .iter()
        .filter(|r| r.status == Status::Ok && r.metrics.is_some())
        .collect();

    out.push_str("<h2>Goodput</h2>\n");
    goodput_chart(&mut out, &ok, protos, &color);
    out.push_str("<h2>Latency</h2>\n");
    latency_charts(&mut out, &ok, protos, &color);
    out.push_str("<h2>CPU cost</h2>\n");
    cpu_chart(&mut out, &ok, protos, &color);
    scale::charts(&mut out, &ok, protos, &color);
    if let Some(cloud) = &report.cloud {
        crate::experiment::cloud_html::section(&mut out, cloud);
    }
    out.push_str("<h2>CPU breakdown</h2>\n");
    breakdown_chart(&mut out, &ok);
    out.push_str("<h2>Results</h2>\n<pre>");
    out.push_str(&esc(&crate::table::render(report)));
    out.push_str("</pre>\n");
    for e in &report.errors {
        let _ = writeln!(out, "<p class=\"err\">{}</p>", esc(e));
    }
    out.push_str("</body></html>\n");
    out
}

fn metrics(c: &CellResult) -> &Metrics {
    c.metrics.as_ref().expect("filtered on metrics")
}

fn response_len(c: &CellResult) -> Option<u64> {
    match c.workload.as_ref()? {
        Workload::Fresh { response_len, .. } | Workload::Persistent { response_len, .. } => {
            Some(*response_len)
        }
        Workload::Blast { bytes, .. } => Some(*bytes),
        Workload::Streams { chunk, .. } => Some(*chunk),
        Workload::BlastFor { .. } => None,
    }
}

fn goodput_chart(
    out: &mut String,
    ok: &[&CellResult],
    protos: &[String],
    color: &dyn Fn(&str) -> &'static str,
) {
    let cells: Vec<_> = ok
        .iter()
        .filter(|c| c.scenario == "goodput")
        .filter_map(|c| Some((c, response_len(c)?)))
        .collect();
    if cells.is_empty() {
        out.push_str("<p class=\"note\">No goodput results.</p>\n");
        return;
    }
    let f = Frame {
        w: 760.0,
        h: 380.0,
        x: Axis::fit(cells.iter().map(|(_, s)| *s as f64), true),
        y: Axis::fit(cells.iter().map(|(c, _)| metrics(c).goodput_bps), true),
    };
    f.open(
        out,
        "goodput",
        "Goodput vs response size",
        "response size",
        "goodput",
        &|v| format_size(v as u64),
        &|v| fmt_bps(v),
    );
    for (i, p) in protos.iter().enumerate() {
        let mut pts: Vec<(f64, f64)> = cells
            .iter()
            .filter(|(c, _)| c.protocol == *p)
            .map(|(c, s)| (*s as f64, metrics(c).goodput_bps))
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

fn latency_charts(
    out: &mut String,
    ok: &[&CellResult],
    protos: &[String],
    color: &dyn Fn(&str) -> &'static str,
) {
    // One chart per scenario and label, one curve per protocol (goodput has too few samples).
    let mut groups: BTreeMap<(usize, String, &str), Vec<&CellResult>> = BTreeMap::new();
    for c in ok.iter().filter(|c| c.scenario != "goodput") {
        let order = crate::scenario::Scenario::ALL
            .iter()
            .position(|s| s.name() == c.scenario)
            .unwrap_or(99);
        if !metrics(c).latency_cdf.is_empty() {
            groups
                .entry((order, c.scenario.clone(), "request"))
                .or_default()
                .push(c);
        }
        if !metrics(c).connect_cdf.is_empty() {
            groups
                .entry((order, c.scenario.clone(), "connect"))
                .or_default()
                .push(c);
        }
    }
    let mut any = false;
    for ((_, scenario, which), cells) in groups {
        // Labels in first-seen order, each once (cells come protocol by protocol).
        let mut labels: Vec<&str> = Vec::new();
        for c in &cells {
            if !labels.contains(&c.label.as_str()) {
                labels.push(&c.label);
            }
        }
        for label in labels {
            fn pick<'a>(c: &'a CellResult, which: &str) -> &'a [[f64; 2]] {
                if which == "connect" {
                    &metrics(c).connect_cdf
                } else {
                    &metrics(c).latency_cdf
                }
            }
            let these: Vec<_> = cells.iter().filter(|c| c.label == label).collect();
            let f = Frame {
                w: 760.0,
                h: 320.0,
                x: Axis::fit(
                    these
                        .iter()
                        .flat_map(|c| pick(c, which).iter().map(|p| p[0])),
                    true,
                ),
                y: Axis {
                    min: 0.0,
                    max: 1.0,
                    log: false,
                },
            };
            let title = format!("{scenario} {label}: {which} time CDF");
            f.open(
                out,
                "latency-cdf",
                &title,
                &format!("{which} time"),
                "fraction",
                &|v| fmt_secs(v),
                &|v| format!("{v:.1}"),
            );
            for (i, p) in protos.iter().enumerate() {
                if let Some(c) = these.iter().find(|c| c.protocol == *p) {
                    let pts: Vec<(f64, f64)> =
                        pick(c, which).iter().map(|p| (p[0], p[1])).collect();
                    f.line(out, color(p), p, &pts, false);
                    f.legend(out, i, color(p), p);
                }
            }
            f.close(out);
            any = true;
        }
    }
    if !any {
        out.push_str("<p class=\"note\">No latency results.</p>\n");
    }
}

fn cpu_chart(
    out: &mut String,
    ok: &[&CellResult],
    protos: &[String],
    color: &dyn Fn(&str) -> &'static str,
) {
    // Groups: each (scenario, label) that has CPU per GB; bars: protocols, client + server stacked.
    let mut keys: Vec<(String, String)> = Vec::new();
    for c in ok {
        if metrics(c).cpu_s_per_gb.is_some()
            && !keys.contains(&(c.scenario.clone(), c.label.clone()))
        {
            keys.push((c.scenario.clone(), c.label.clone()));
        }
    }
    if keys.is_empty() {
        out.push_str("<p class=\"note\">No CPU results.</p>\n");
        return;
    }
    let max = ok
        .iter()
        .filter_map(|c| metrics(c).cpu_s_per_gb.map(|s| s.total))
        .fold(0.0, f64::max);
    let f = Frame {
        w: (120.0 + 70.0 * keys.len() as f64).max(760.0),
        h: 380.0,
        x: Axis {
            min: 0.0,
            max: 1.0,
            log: false,
        },
        y: Axis::fit(std::iter::once(max), false),
    };
    f.open(
        out,
        "cpu-per-gb",
        "CPU seconds per GB (client dark, server light)",
        "",
        "CPU s / GB",
        &|_| String::new(),
        &|v| format!("{v:.1}"),
    );
    for (g, (scenario, label)) in keys.iter().enumerate() {
        for (s, p) in protos.iter().enumerate() {
            let Some(c) = ok
                .iter()
                .find(|c| c.scenario == *scenario && c.label == *label && c.protocol == *p)
            else {
                continue;
            };
            let Some(cost) = metrics(c).cpu_s_per_gb else {
                continue;
            };
            let t = format!(
                "{p} {scenario} {label}: client {:.2}, server {:.2} CPU s/GB",
                cost.client, cost.server
            );
            f.bar(
                out,
                g,
                keys.len(),
                s,
                protos.len(),
                0.0,
                cost.client,
                color(p),
                &t,
            );
            f.bar(
                out,
                g,
                keys.len(),
                s,
                protos.len(),
                cost.client,
                cost.total,
                color(p),
                &t,
            );
        }
        f.group_label(out, g, keys.len(), &format!("{scenario} {label}"));
    }
    // The server half is drawn lighter by overlaying white at 45 %.
    for (i, p) in protos.iter().enumerate() {
        f.legend(out, i, color(p), p);
    }
    f.close(out);
    out.push_str("<style>svg.chart rect.bar:nth-of-type(even){fill-opacity:.55}</style>\n");
}

fn breakdown_chart(out: &mut String, ok: &[&CellResult]) {
    let cells: Vec<_> = ok
        .iter()
        .filter_map(|c| Some((c, metrics(c).breakdown.as_ref()?)))
        .collect();
    if cells.is_empty() {
        out.push_str(
            "<p class=\"note\" id=\"breakdown-slot\">No CPU breakdown in these results. Stacks that count where their \
             CPU goes (crypto, send, receive, ACK handling, other — as in the thesis' per-packet tables) appear here.</p>\n",
        );
        return;
    }
    let mut cats: Vec<String> = Vec::new();
    for (_, b) in &cells {
        for i in b.server.iter().chain(&b.client) {
            if !cats.contains(&i.name) {
                cats.push(i.name.clone());
            }
        }
    }
    let total = |items: &[crate::results::BreakdownItem]| items.iter().map(|i| i.ns).sum::<f64>();
    let max = cells
        .iter()
        .map(|(_, b)| total(&b.server).max(total(&b.client)))
        .fold(0.0, f64::max);
    let f = Frame {
        w: (160.0 + 90.0 * cells.len() as f64).max(760.0),
        h: 380.0,
        x: Axis {
            min: 0.0,
            max: 1.0,
            log: false,
        },
        y: Axis::fit(std::iter::once(max), false),
    };
    let unit = &cells[0].1.unit;
    f.open(
        out,
        "cpu-breakdown",
        &format!("CPU time per {unit} by category"),
        "",
        "ns",
        &|_| String::new(),
        &|v| format!("{v:.0}"),
    );
    for (g, (c, b)) in cells.iter().enumerate() {
        for (s, items) in [&b.client, &b.server].into_iter().enumerate() {
            let mut y = 0.0;
            for item in items {
                let k = cats.iter().position(|x| *x == item.name).unwrap_or(0);
                let t = format!(
                    "{} {} {}: {} {:.0} ns",
                    c.protocol, c.scenario, c.label, item.name, item.ns
                );
                f.bar(
                    out,
                    g,
                    cells.len(),
                    s,
                    2,
                    y,
                    y + item.ns,
                    PALETTE[k % PALETTE.len()],
                    &t,
                );
                y += item.ns;
            }
        }
        f.group_label(
            out,
            g,
            cells.len(),
            &format!("{} {} (c|s)", c.protocol, c.label),
        );
    }
    for (i, cat) in cats.iter().enumerate() {
        f.legend(out, i, PALETTE[i % PALETTE.len()], cat);
    }
    f.close(out);
}
