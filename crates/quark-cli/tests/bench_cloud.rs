//! End-to-end: `quark bench --experiment cloud --quick` across the three
//! emulated placements (loopback, veth, the emulator at 1.5 ms RTT) fills every
//! cell of the study's table for a few protocols, every byte counted by both
//! sides (clients check each response byte against the pattern, servers each
//! request body). Needs root (namespaces); skips with a reason otherwise.

mod common;

use std::process::Command;

use common::{stderr, tempdir};

// udp: request/response in datagrams, no retransmission (none lost here).
const PROTOCOLS: [&str; 4] = ["udp", "tcp", "tcp+tls", "quic"];
const PLACEMENTS: [&str; 3] = ["same-host", "same-zone", "cross-zone"];
const SCENARIOS: [&str; 3] = ["persistent", "ephemeral", "parallel"];
const SIZES: [u64; 2] = [2 << 10, 128 << 10];
const REQUESTS: u64 = 40;

fn root() -> bool {
    let id = Command::new("id").arg("-u").output();
    id.is_ok_and(|o| o.stdout.starts_with(b"0\n"))
}

#[test]
fn quick_cloud_study_fills_every_cell_in_three_placements() {
    if !root() {
        eprintln!("skipped: not root (same-zone and cross-zone need network namespaces)");
        return;
    }
    let dir = tempdir("quark-e2e", "cloud");
    let (json, html) = (dir.join("cloud.json"), dir.join("cloud.html"));
    let out = Command::new(env!("CARGO_BIN_EXE_quark"))
        .args(["bench", "--experiment", "cloud", "--quick"])
        .args(["-p", &PROTOCOLS.join(",")])
        .args(["--placements", &PLACEMENTS.join(",")])
        .args(["--requests", &REQUESTS.to_string()])
        .args(["--vcpu-hour-price", "0.1"])
        .arg("--json")
        .arg(&json)
        .arg("--html")
        .arg(&html)
        .output()
        .unwrap();
    let text = std::fs::read_to_string(&json).unwrap_or_else(|_| panic!("{}", stderr(&out)));
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../../quark-lab/schema/results-v1.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(&v).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(v["config"]["reference"], "tcp+tls");

    // Every measured cell moved exactly what was asked, as both sides counted.
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 3 * 3 * PROTOCOLS.len() * 2);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(v["complete"], true);
    // udp is not paced: parallel requests through the emulator's TUN queue may
    // lose datagrams. A lost request is not retried; the cell says how many.
    let lost = |c: &serde_json::Value| -> u64 {
        let w = c["metrics"]["warnings"].as_array().into_iter().flatten();
        let w = w.filter_map(|w| w.as_str()?.split_once(" requests lost datagrams"));
        w.map(|(n, _)| n.parse::<u64>().unwrap()).sum()
    };
    for c in results {
        assert_eq!(c["status"], "ok", "{c}");
        let label = c["label"].as_str().unwrap();
        if c["protocol"] == "udp" && label.contains("@rtt") && lost(c) > 0 {
            eprintln!(
                "udp {} {label}: {} of {REQUESTS} lost",
                c["scenario"],
                lost(c)
            );
            assert_eq!(
                c["metrics"]["requests"].as_u64().unwrap() + lost(c),
                REQUESTS
            );
            continue;
        }
        assert_eq!(lost(c), 0, "{c}");
        let m = &c["metrics"];
        let size = c["workload"]["response_len"].as_u64().unwrap();
        assert_eq!(m["requests"], REQUESTS, "{}", c["label"]);
        assert_eq!(m["server_counters"]["requests"], REQUESTS);
        assert_eq!(m["server_counters"]["bytes_out"], REQUESTS * size);
        assert_eq!(m["server_counters"]["bytes_in"], REQUESTS * size);
        assert_eq!(m["payload_bytes"], 2 * REQUESTS * size);
    }

    let cloud = &v["cloud"];
    assert_eq!(cloud["vcpu_hour_price_usd"], 0.1);
    let rows = cloud["rows"].as_array().unwrap();
    let placements = cloud["placements"].as_array().unwrap();
    let names: Vec<_> = placements.iter().map(|p| p["name"].clone()).collect();
    assert_eq!(names, PLACEMENTS);
    // tcp's connect time is the path's round trip: the emulator's 1.5 ms is a floor.
    let rtt = |i: usize| placements[i]["rtt_ms"].as_f64().unwrap();
    assert!(rtt(2) >= 1.5, "cross-zone RTT {}", rtt(2));
    assert!(rtt(0) < rtt(2) && rtt(1) < rtt(2));
    for p in PLACEMENTS {
        for s in SCENARIOS {
            for proto in PROTOCOLS {
                for size in SIZES {
                    let row = rows
                        .iter()
                        .find(|r| {
                            r["placement"] == p
                                && r["scenario"] == s
                                && r["protocol"] == proto
                                && r["size_bytes"] == size
                        })
                        .unwrap_or_else(|| panic!("no row {p} {s} {proto} {size}"));
                    let values = &row["values"];
                    let p90 = values["latency_p90_s"].as_f64().unwrap();
                    assert!(p90 > 0.0 && p90 >= values["latency_p50_s"].as_f64().unwrap());
                    let cpu = values["cpu_s_per_request"].as_f64().unwrap();
                    let cost = values["usd_per_million_requests"].as_f64().unwrap();
                    // The cost is the CPU time at the stated price.
                    assert!((cost - cpu * 1e6 / 3600.0 * 0.1).abs() <= 1e-9 * cost.max(1.0));
                    let has_ratio = values["p90_vs_ref"].is_number();
                    assert_eq!(has_ratio, proto != "tcp+tls", "{p} {s} {proto} {size}");
                }
            }
        }
    }
    assert_eq!(rows.len(), results.len());

    // The text table has a block per placement with a line per cell.
    let table = String::from_utf8_lossy(&out.stdout);
    for p in PLACEMENTS {
        assert!(table.contains(&format!("[{p}] net ")), "{table}");
    }
    let lines = table
        .lines()
        .skip_while(|l| !l.starts_with("cloud study"))
        .filter(|l| SCENARIOS.iter().any(|s| l.starts_with(s)))
        .count();
    assert_eq!(lines, rows.len(), "{table}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("Cloud study by placement"));
    assert_eq!(page.matches("<h3>").count(), 3);
}

#[test]
fn cloud_flags_are_checked() {
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_quark"))
            .arg("bench")
            .args(args)
            .output()
            .unwrap()
    };
    for (args, want) in [
        (&["--quick"][..], "go with --experiment cloud"),
        (
            &["--experiment", "cloud", "--net", "veth"][..],
            "leave out --net",
        ),
        (
            &["--experiment", "cloud", "-s", "persistent,goodput"][..],
            "not 'goodput'",
        ),
        (
            &["--experiment", "cloud", "--placements", "moon"][..],
            "unknown placement",
        ),
        (
            &["--experiment", "cloud", "--vcpu-hour-price", "0"][..],
            "vcpu-hour-price",
        ),
        (
            &["--experiment", "cloud", "--placement-label", "x"][..],
            "goes with the agents",
        ),
    ] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(want), "{args:?}: {}", stderr(&out));
    }
}

/// A `quark agent` on loopback; killed on drop.
struct Agent(std::process::Child, String);

impl Agent {
    fn start(token: &std::path::Path) -> Agent {
        use std::io::{BufRead, BufReader};
        let mut child = Command::new(env!("CARGO_BIN_EXE_quark"))
            .args(["agent", "--listen", "127.0.0.1:0", "--token-file"])
            .arg(token)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .trim()
            .strip_prefix("agent listening on ")
            .unwrap_or_else(|| panic!("{line}"))
            .to_string();
        Agent(child, addr)
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The same command through two agents (here both on loopback, so no root):
/// one placement, named by `--placement-label`, with the agents' probed RTT.
#[test]
fn cloud_study_runs_unchanged_through_agents() {
    let dir = tempdir("quark-e2e", "cloud-agents");
    let token = dir.join("token");
    std::fs::write(&token, "0123456789abcdef0123456789abcdef\n").unwrap();
    let (server, client) = (Agent::start(&token), Agent::start(&token));
    let json = dir.join("agents.json");
    let out = Command::new(env!("CARGO_BIN_EXE_quark"))
        .args(["bench", "--experiment", "cloud", "--quick"])
        .args(["-p", "tcp,tcp+tls", "--sizes", "2KiB", "--requests", "20"])
        .args(["--server-agent", &server.1, "--client-agent", &client.1])
        .args(["--addr", "127.0.0.1", "--placement-label", "two-agents"])
        .arg("--token-file")
        .arg(&token)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let cloud = &v["cloud"];
    let placements = cloud["placements"].as_array().unwrap();
    assert_eq!(placements.len(), 1);
    assert_eq!(placements[0]["name"], "two-agents");
    assert_eq!(placements[0]["emulated"], false);
    assert!(placements[0]["rtt_ms"].is_number());
    let rows = cloud["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3 * 2);
    for r in rows {
        assert_eq!(r["placement"], "two-agents");
        assert_eq!(r["status"], "ok", "{r}");
    }
    for c in v["results"].as_array().unwrap() {
        assert_eq!(c["metrics"]["server_counters"]["bytes_out"], 20 * 2048);
    }
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("[two-agents] net loopback (real hosts)"),
        "{table}"
    );
}
