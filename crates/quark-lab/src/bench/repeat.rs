//! `--repeat N`: every cell runs N times, the protocols taking turns (A B A B
//! ...), so a slow minute of a shared machine hits all of them alike. A cell's
//! `metrics` become the median of its runs, field by field, and `runs` keeps
//! each run's own.

use std::fmt::Write;

use serde_json::Value;

use crate::results::{CellResult, Metrics, Status};
use crate::table::{fmt_bps, fmt_secs};

/// Folds the measured runs of each cell in `results[from..]` (one entry per
/// run, in run order) into one entry per cell: the first run's place, the
/// median metrics, and every run in `runs`. Failed runs stay as they are.
pub fn fold_rounds(results: &mut Vec<CellResult>, from: usize) {
    let mut kept: Vec<CellResult> = Vec::new();
    for r in results.drain(from..) {
        let same = kept.iter().position(|k| {
            k.status == Status::Ok
                && r.status == Status::Ok
                && (&k.scenario, &k.protocol, &k.label, &k.net)
                    == (&r.scenario, &r.protocol, &r.label, &r.net)
        });
        match (same, r.metrics) {
            (Some(i), Some(m)) => kept[i].runs.push(m),
            (_, metrics) => {
                let runs = metrics.iter().cloned().collect();
                kept.push(CellResult { metrics, runs, ..r });
            }
        }
    }
    for k in &mut kept {
        if k.runs.len() > 1 {
            k.metrics = Some(median(&k.runs));
        } else {
            k.runs.clear();
        }
    }
    results.extend(kept);
}

/// Each field's median over `runs` (at least one): integers take the lower
/// median, so they stay integers and one of the runs' values; other numbers
/// the usual median; lists of equal length element by element (the CDFs);
/// warnings are gathered from every run.
pub fn median(runs: &[Metrics]) -> Metrics {
    let values: Vec<Value> = runs
        .iter()
        .map(|m| serde_json::to_value(m).expect("metrics serialize"))
        .collect();
    let mut m: Metrics = serde_json::from_value(median_value(&values.iter().collect::<Vec<_>>()))
        .unwrap_or_else(|_| runs[0].clone());
    m.warnings = runs
        .iter()
        .flat_map(|r| r.warnings.iter().cloned())
        .collect();
    m.warnings.dedup();
    m
}

fn median_value(vs: &[&Value]) -> Value {
    let first = vs[0];
    match first {
        Value::Number(_) => {
            let mut xs: Vec<f64> = vs.iter().filter_map(|v| v.as_f64()).collect();
            xs.sort_by(f64::total_cmp);
            if xs.len() != vs.len() {
                return first.clone();
            }
            let n = xs.len();
            if vs.iter().all(|v| v.is_u64()) {
                return Value::from(xs[(n - 1) / 2] as u64);
            }
            serde_json::Number::from_f64(middle(&xs)).map_or_else(|| first.clone(), Value::Number)
        }
        Value::Object(map) => {
            let mut out = serde_json::Map::new();
            for (key, v) in map {
                let same: Vec<&Value> = vs.iter().filter_map(|o| o.get(key)).collect();
                // A field some runs lack (an optional one): the first run's.
                let merged = if same.len() == vs.len() {
                    median_value(&same)
                } else {
                    v.clone()
                };
                out.insert(key.clone(), merged);
            }
            Value::Object(out)
        }
        Value::Array(items) => {
            let lists: Vec<&Vec<Value>> = vs.iter().filter_map(|v| v.as_array()).collect();
            if lists.len() != vs.len() || lists.iter().any(|l| l.len() != items.len()) {
                return first.clone();
            }
            let merged = (0..items.len())
                .map(|i| median_value(&lists.iter().map(|l| &l[i]).collect::<Vec<_>>()))
                .collect();
            Value::Array(merged)
        }
        _ => first.clone(),
    }
}

/// One line per folded cell of `results[from..]`: the median and range of
/// its goodput, rate, tail and CPU per byte; and, against the reference's
/// cell with as many rounds, how often its p99 was at or below the
/// reference's in the same round and its CPU per byte over the reference's,
/// round by round. The ratios pair runs that ran back to back: a slow phase
/// of a shared machine (this VM's doubles a bulk sender's system time for
/// minutes) then hits both sides of a ratio, where the medians of the two
/// cells may each come from a different phase.
pub fn lines(results: &[CellResult], from: usize, reference: &str) -> Vec<String> {
    let cells = &results[from..];
    let mut out = Vec::new();
    for c in cells.iter().filter(|c| c.runs.len() > 1) {
        let Some(m) = &c.metrics else { continue };
        let n = c.runs.len();
        let mut s = format!("{} {} {}: median of {n}", c.scenario, c.protocol, c.label);
        let goodputs: Vec<f64> = c.runs.iter().map(|r| r.goodput_bps).collect();
        let _ = write!(s, ", {}", ranged(m.goodput_bps, &goodputs, fmt_bps));
        if m.requests > 1 {
            let rates: Vec<f64> = c.runs.iter().map(|r| r.requests_per_s).collect();
            let _ = write!(
                s,
                ", {} req/s",
                ranged(m.requests_per_s, &rates, |x| format!("{x:.0}"))
            );
        }
        let reference_cell = cells.iter().find(|r| {
            r.protocol == reference
                && r.protocol != c.protocol
                && (&r.scenario, &r.label, &r.net) == (&c.scenario, &c.label, &c.net)
                && r.runs.len() == n
        });
        if let (Some(l), Some(ours)) = (&m.latency_s, p99s(&c.runs)) {
            let _ = write!(s, ", p99 {}", ranged(l.p99, &ours, fmt_secs));
            if let Some(theirs) = reference_cell.and_then(|r| p99s(&r.runs)) {
                let at_or_below = ours.iter().zip(&theirs).filter(|(a, b)| a <= b).count();
                let _ = write!(
                    s,
                    ", p99 at or below {reference}'s in {at_or_below} of {n} rounds"
                );
            }
        }
        if let (Some(cpu), Some(cpus)) = (m.cpu_s_per_gb, cpus_per_gb(&c.runs)) {
            let _ = write!(
                s,
                ", {} CPU s/GB",
                ranged(cpu.total, &cpus, |x| format!("{x:.2}"))
            );
            let theirs = reference_cell.and_then(|r| cpus_per_gb(&r.runs));
            if let Some(theirs) = theirs.filter(|t| t.iter().all(|&x| x > 0.0)) {
                let mut ratios: Vec<f64> = cpus.iter().zip(&theirs).map(|(a, b)| a / b).collect();
                ratios.sort_by(f64::total_cmp);
                let ratio = middle(&ratios);
                let _ = write!(
                    s,
                    ", CPU per byte {} {reference}'s round by round",
                    ranged(ratio, &ratios, |x| format!("{x:.2}x"))
                );
            }
        }
        out.push(s);
    }
    out
}

/// Each run's CPU seconds per GB (client + server), when every run has them.
fn cpus_per_gb(runs: &[Metrics]) -> Option<Vec<f64>> {
    runs.iter().map(|r| Some(r.cpu_s_per_gb?.total)).collect()
}

/// The median of `xs` (sorted, at least one), the mean of the middle two for an
/// even count.
fn middle(xs: &[f64]) -> f64 {
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

/// Each run's p99, when every run has one.
fn p99s(runs: &[Metrics]) -> Option<Vec<f64>> {
    runs.iter()
        .map(|r| Some(r.latency_s.as_ref()?.p99))
        .collect()
}

/// `median (lo-hi)`, each formatted by `f`.
fn ranged(median: f64, xs: &[f64], f: impl Fn(f64) -> String) -> String {
    let (lo, hi) = xs
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
            (lo.min(x), hi.max(x))
        });
    format!("{} ({}-{})", f(median), f(lo), f(hi))
}
