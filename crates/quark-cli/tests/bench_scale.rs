//! End-to-end: `quark bench -s scale` runs one rps phase per connection count
//! for quic and tcp+tls, both sides count every request and every byte, and
//! the report charts each metric against the connection count.

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::stderr;

fn tmp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("quark-e2e-{}-{name}", std::process::id()))
}

#[test]
fn scale_runs_each_connection_count_for_quic_and_tcp_tls() {
    let (json, html) = (tmp("scale.json"), tmp("scale.html"));
    let out = Command::new(env!("CARGO_BIN_EXE_quark"))
        .args(["bench", "-p", "quic,tcp+tls", "-s", "scale"])
        .args(["--scale-connections", "10,50", "--requests", "150"])
        .args(["--client-sockets", "4", "--ref", "tcp+tls"])
        .arg("--json")
        .arg(&json)
        .arg("--html")
        .arg(&html)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = std::fs::read_to_string(&json).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../../quark-lab/schema/results-v1.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(&v).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(v["complete"], true);
    for proto in ["quic", "tcp+tls"] {
        let cells: Vec<_> = v["results"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["scenario"] == "scale" && c["protocol"] == proto)
            .collect();
        assert_eq!(cells.len(), 2, "{proto}");
        // 50 connections × 4 requests each is more than the 150 asked.
        for (cell, (label, conns, requests)) in cells
            .iter()
            .zip([("10 conns", 10, 150), ("50 conns", 50, 200)])
        {
            assert_eq!(cell["status"], "ok", "{proto} {label}: {}", cell["error"]);
            assert_eq!(cell["label"], label);
            let m = &cell["metrics"];
            assert_eq!(m["requests"], requests, "{proto} {label}");
            assert_eq!(m["server_counters"]["requests"], requests);
            assert_eq!(m["server_counters"]["bytes_out"], requests * 2000);
            assert_eq!(m["peak_connections"], conns, "{proto} {label}");
            assert_eq!(m["server_counters"]["peak_connections"], conns);
            assert_eq!(m["latency_s"]["count"], requests);
            assert!(m["memory_per_connection_bytes"]["server"].is_number());
            assert!(m["idle_memory_per_connection_bytes"]["server"].is_number());
            assert!(m["cpu_s_per_1000_requests"]["server"].as_f64().unwrap() > 0.0);
        }
    }
    let page = std::fs::read_to_string(&html).unwrap();
    for chart in [
        "scale-rps",
        "scale-p99",
        "scale-p999",
        "scale-mem-server",
        "scale-mem-idle-server",
        "scale-cpu-client",
    ] {
        let at = page
            .find(&format!("data-chart=\"{chart}\""))
            .unwrap_or_else(|| panic!("no {chart} chart"));
        let svg = &page[at..at + page[at..].find("</svg>").unwrap()];
        for proto in ["quic", "tcp+tls"] {
            assert!(
                svg.contains(&format!("data-series=\"{}\"", proto)),
                "{chart}: no {proto} line"
            );
        }
    }
    std::fs::remove_file(json).ok();
    std::fs::remove_file(html).ok();
}
