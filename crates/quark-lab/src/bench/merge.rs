//! Combines what the client and the server reported for a phase into the
//! metrics of one result.

use crate::adapter::ServerCounters;
use crate::child::ClientReport;
use crate::metrics::Usage;
use crate::results::{Datagrams, Metrics, Sides};
use crate::scenario::Scenario;
use crate::workload::Workload;

/// Derives a cell's metrics.
pub fn merge(
    scenario: Scenario,
    w: &Workload,
    c: &ClientReport,
    server: &Usage,
    counters: &ServerCounters,
) -> Metrics {
    let datagram = matches!(w, Workload::Blast { .. } | Workload::BlastFor { .. });
    let payload_bytes = if datagram {
        counters.bytes_in
    } else {
        c.bytes_in + c.bytes_out
    };
    // Goodput downloads one at a time: time them, not the connection setup between them.
    let goodput_time = if scenario == Scenario::Goodput && c.request_time_s > 0.0 {
        c.request_time_s
    } else {
        c.elapsed_s
    };
    let per = |n: f64, d: f64| if d > 0.0 { n / d } else { 0.0 };
    let cpu = Sides {
        client: c.usage.cpu_s(),
        server: server.cpu_s(),
        total: c.usage.cpu_s() + server.cpu_s(),
    };
    let scale = |k: f64| Sides {
        client: cpu.client * k,
        server: cpu.server * k,
        total: cpu.total * k,
    };
    let cpu_s_per_gb = (payload_bytes > 0).then(|| scale(1e9 / payload_bytes as f64));
    let cpu_s_per_1000_requests =
        (!datagram && c.requests > 0).then(|| scale(1000.0 / c.requests as f64));
    let mem = |u: &Usage, conns: u64| {
        u.peak_rss_bytes.saturating_sub(u.rss_baseline_bytes) as f64 / conns.max(1) as f64
    };
    let memory_per_connection_bytes = (!datagram && c.peak_connections > 1).then(|| {
        let client = mem(&c.usage, c.peak_connections);
        let server = mem(server, counters.peak_connections);
        Sides {
            client,
            server,
            total: client + server,
        }
    });
    let idle = |u: &Usage, conns: u64| {
        u.rss_start_bytes
            .map(|s| s.saturating_sub(u.rss_baseline_bytes) as f64 / conns.max(1) as f64)
    };
    let idle_memory_per_connection_bytes = (!datagram && c.peak_connections > 1)
        .then(|| {
            let client = idle(&c.usage, c.peak_connections)?;
            let server = idle(server, counters.peak_connections)?;
            Some(Sides {
                client,
                server,
                total: client + server,
            })
        })
        .flatten();
    let datagrams = c.datagrams_sent.map(|sent| {
        let received = counters.datagrams;
        let lost = sent.saturating_sub(received);
        Datagrams {
            sent,
            received,
            lost,
            loss_ratio: per(lost as f64, sent as f64),
        }
    });
    let mut warnings = Vec::new();
    if !datagram {
        if counters.requests != c.requests {
            warnings.push(format!(
                "server counted {} requests, client {}",
                counters.requests, c.requests
            ));
        }
        if counters.connections != c.connections {
            warnings.push(format!(
                "server accepted {} connections, client opened {}",
                counters.connections, c.connections
            ));
        }
        if counters.bytes_out != c.bytes_in {
            warnings.push(format!(
                "server sent {} response bytes, client received {}",
                counters.bytes_out, c.bytes_in
            ));
        }
    }
    if c.cores > 0 && crate::scale::saturated(c.usage.cpu_s(), c.elapsed_s, c.cores) {
        warnings.push(format!(
            "client CPU at {:.0} % of its {} core(s): the client may be the bottleneck",
            100.0 * c.usage.cpu_s() / c.elapsed_s / f64::from(c.cores),
            c.cores
        ));
    }
    // With client threads, each has a core at most: one at its limit sets
    // the pace of its share however idle the others are.
    for (i, &cpu) in c.thread_cpu_s.iter().enumerate() {
        if crate::scale::saturated(cpu, c.elapsed_s, 1) {
            warnings.push(format!(
                "client thread {i} at {:.0} % of a core: the client may be the bottleneck",
                100.0 * cpu / c.elapsed_s
            ));
        }
    }
    if c.lost > 0 {
        // The study's udp: a response missing datagrams is not retried.
        warnings.push(format!(
            "{} requests lost datagrams (udp, no retransmission) and are not counted",
            c.lost
        ));
    }
    if counters.errors > 0 {
        warnings.push(format!(
            "server saw {} failed requests or connections",
            counters.errors
        ));
    }
    Metrics {
        requests: c.requests,
        connections: c.connections,
        payload_bytes,
        elapsed_s: c.elapsed_s,
        goodput_bps: per(payload_bytes as f64 * 8.0, goodput_time),
        requests_per_s: per(c.requests as f64, c.elapsed_s),
        handshakes_per_s: (c.connections > 0).then(|| per(c.connections as f64, c.elapsed_s)),
        latency_s: c.latency_s.clone(),
        connect_s: c.connect_s.clone(),
        latency_cdf: c.latency_cdf.clone(),
        connect_cdf: c.connect_cdf.clone(),
        peak_in_flight: c.peak_in_flight,
        peak_connections: c.peak_connections,
        client: c.usage.clone(),
        server: server.clone(),
        server_counters: counters.clone(),
        cpu_s: cpu,
        cpu_s_per_gb,
        cpu_s_per_1000_requests,
        memory_per_connection_bytes,
        idle_memory_per_connection_bytes,
        datagrams,
        breakdown: None,
        warnings,
        client_thread_cpu_s: c.thread_cpu_s.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(cpu: f64, peak: u64, base: u64) -> Usage {
        Usage {
            user_s: cpu,
            sys_s: 0.0,
            peak_rss_bytes: peak,
            peak_rss_scope: "interval".into(),
            rss_baseline_bytes: base,
            rss_start_bytes: Some(base + (peak - base) / 2),
        }
    }

    #[test]
    fn derived_metrics() {
        let c = ClientReport {
            requests: 1000,
            connections: 0,
            bytes_in: 2_000_000,
            bytes_out: 0,
            elapsed_s: 2.0,
            request_time_s: 1.5,
            latency_s: None,
            connect_s: None,
            latency_cdf: vec![],
            connect_cdf: vec![],
            peak_in_flight: 144,
            peak_connections: 144,
            datagrams_sent: None,
            lost: 0,
            usage: usage(0.5, 10_000_000, 2_800_000),
            breakdown: None,
            cores: 1,
            thread_cpu_s: Vec::new(),
        };
        let counters = ServerCounters {
            requests: 1000,
            bytes_out: 2_000_000,
            peak_connections: 144,
            ..Default::default()
        };
        let w = Workload::Persistent {
            connections: 144,
            in_flight: 1,
            requests: 1000,
            response_len: 2000,
            body_len: 0,
            warmup: 0,
        };
        let m = merge(
            Scenario::Rps,
            &w,
            &c,
            &usage(1.5, 5_000_000, 3_560_000),
            &counters,
        );
        assert_eq!(m.requests_per_s, 500.0);
        assert_eq!(m.goodput_bps, 8e6);
        assert_eq!(m.cpu_s.total, 2.0);
        assert_eq!(m.cpu_s_per_gb.unwrap().total, 1000.0);
        assert_eq!(m.cpu_s_per_1000_requests.unwrap().server, 1.5);
        let mem = m.memory_per_connection_bytes.unwrap();
        assert_eq!((mem.client, mem.server), (50_000.0, 10_000.0));
        // Idle: the RSS at the start is halfway from the baseline to the peak.
        let idle = m.idle_memory_per_connection_bytes.unwrap();
        assert_eq!((idle.client, idle.server), (25_000.0, 5_000.0));
        assert!(m.warnings.is_empty(), "{:?}", m.warnings);
        // Goodput times the downloads only.
        let g = merge(Scenario::Goodput, &w, &c, &usage(1.0, 0, 0), &counters);
        assert_eq!(g.goodput_bps, 2_000_000.0 * 8.0 / 1.5);
        // A count mismatch is flagged.
        let bad = ServerCounters {
            requests: 999,
            ..counters
        };
        assert_eq!(
            merge(Scenario::Rps, &w, &c, &usage(1.0, 0, 0), &bad)
                .warnings
                .len(),
            1
        );
        // A client thread at its core's limit is named, an idle one is not.
        let threads = ClientReport {
            thread_cpu_s: vec![0.4, 1.95],
            ..c.clone()
        };
        let t = merge(Scenario::Rps, &w, &threads, &usage(1.0, 0, 0), &counters);
        assert_eq!(t.client_thread_cpu_s, [0.4, 1.95]);
        assert_eq!(t.warnings.len(), 1, "{:?}", t.warnings);
        assert!(t.warnings[0].starts_with("client thread 1 at 98 %"));
    }
}
