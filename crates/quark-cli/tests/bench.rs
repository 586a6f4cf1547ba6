//! End-to-end: the real `quark` binary runs small suites, rejects bad input
//! with one error line, survives dying servers and leaves no processes behind.

mod common;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::stderr;

fn quark() -> Command {
    Command::new(env!("CARGO_BIN_EXE_quark"))
}

fn tmp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("quark-e2e-{}-{name}", std::process::id()))
}

fn read_json(path: &PathBuf) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let schema_text = include_str!("../../quark-lab/schema/results-v1.json");
    let schema: serde_json::Value = serde_json::from_str(schema_text).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&v)
        .map(|e| format!("{e} at {}", e.instance_path))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    v
}

/// Runs `quark bench` with `args` (and `more`), writing `json`; the validated results.
fn bench_json(args: &[&str], more: &[&str], json: &PathBuf) -> serde_json::Value {
    let out = quark()
        .arg("bench")
        .args(args)
        .args(more)
        .arg("--json")
        .arg(json)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    read_json(json)
}

/// Whether this runs as root; says so when not.
fn root() -> bool {
    let id = Command::new("id").arg("-u").output();
    let root = id.is_ok_and(|o| o.stdout.starts_with(b"0\n"));
    if !root {
        eprintln!("skipped: not root");
    }
    root
}

fn cells<'a>(v: &'a serde_json::Value, scenario: &str, proto: &str) -> Vec<&'a serde_json::Value> {
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["scenario"] == scenario && c["protocol"] == proto)
        .collect()
}

#[test]
fn tiny_suite_counts_exactly_and_writes_valid_json_and_html() {
    let (json, html) = (tmp("suite.json"), tmp("suite.html"));
    let out = quark()
        .args([
            "bench",
            "-p",
            "tcp,quinn",
            "-s",
            "goodput,rps,parallel,response-time",
        ])
        .args([
            "--sizes",
            "2KB",
            "--runs",
            "2",
            "--warmup",
            "1",
            "--requests",
            "60",
        ])
        .args([
            "--connections",
            "6",
            "--in-flight",
            "5",
            "--clients",
            "4",
            "--ref",
            "tcp",
        ])
        .arg("--json")
        .arg(&json)
        .arg("--html")
        .arg(&html)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v = read_json(&json);
    assert_eq!(v["complete"], true);
    assert!(
        v["command_line"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a == "--requests")
    );
    assert!(v["machine"]["cores"].as_u64().unwrap() >= 1);
    assert!(v["versions"]["quinn"].is_string());
    for proto in ["tcp", "quinn"] {
        let g = &cells(&v, "goodput", proto)[0]["metrics"];
        assert_eq!(g["requests"], 2, "{proto}: warm-up runs are not counted");
        assert_eq!(g["server_counters"]["requests"], 2);
        assert_eq!(g["server_counters"]["connections"], 2);
        assert_eq!(g["server_counters"]["bytes_out"], 4000);
        let r = &cells(&v, "rps", proto)[0]["metrics"];
        assert_eq!(r["server_counters"]["requests"], 60);
        assert_eq!(r["server_counters"]["peak_connections"], 6);
        assert_eq!(r["peak_in_flight"], 6);
        assert!(r["memory_per_connection_bytes"].is_object());
        let p = &cells(&v, "parallel", proto)[0]["metrics"];
        assert_eq!(p["server_counters"]["requests"], 60);
        assert_eq!(p["server_counters"]["bytes_in"], 60 * 2000);
        assert_eq!(p["peak_in_flight"], 5);
        let t = &cells(&v, "response-time", proto)[0]["metrics"];
        assert_eq!(t["server_counters"]["connections"], 60);
        assert_eq!(t["peak_in_flight"], 4);
        assert_eq!(t["connect_s"]["count"], 60);
        assert!(t["handshakes_per_s"].as_f64().unwrap() > 0.0);
        for c in [g, r, p, t] {
            assert!(c.get("warnings").is_none(), "{c}");
        }
    }
    let quinn = v["summary"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["protocol"] == "quinn")
        .unwrap();
    assert!(quinn["ref_cpu_per_gb_ratio"].as_f64().unwrap() > 0.0);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("data-chart=\"goodput\"") && page.contains("data-chart=\"latency-cdf\""));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("summary (reference: tcp"), "{stdout}");

    // `quark report` renders the same file again.
    let html2 = tmp("again.html");
    let out = quark()
        .arg("report")
        .arg(&json)
        .arg("--html")
        .arg(&html2)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        std::fs::read_to_string(&html2)
            .unwrap()
            .contains("data-chart=\"cpu-per-gb\"")
    );
    // And the same file gzipped, as docs/results keeps the larger ones: the
    // same table.
    let gz = tmp("again.json.gz");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut enc, &std::fs::read(&json).unwrap()).unwrap();
    std::fs::write(&gz, enc.finish().unwrap()).unwrap();
    let plain = quark().arg("report").arg(&json).output().unwrap();
    let unzipped = quark().arg("report").arg(&gz).output().unwrap();
    assert_eq!(unzipped.status.code(), Some(0), "{}", stderr(&unzipped));
    assert!(!plain.stdout.is_empty());
    assert_eq!(plain.stdout, unzipped.stdout);
    for f in [json, html, html2, gz] {
        let _ = std::fs::remove_file(f);
    }
}

#[test]
fn bad_input_gives_one_error_line_and_nonzero_exit() {
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = busy.local_addr().unwrap().port().to_string();
    let cases: Vec<Vec<&str>> = vec![
        vec!["-s", "latency"],
        vec!["-p", "sctp"],
        vec!["-s", "goodput", "--sizes", "0"],
        vec!["-s", "goodput", "--sizes", "-5"],
        vec!["-s", "goodput", "--sizes", "3XB"],
        vec!["--net", "lossy-wifi"],
        vec!["--cipher", "rc4"],
        vec!["--ref", "http2"],
        vec!["-s", "rps", "--requests", "0"],
        vec!["--port", &port],
        vec!["--server-workers", "0"],
        vec!["--server-workers", "2", "--pin"],
        vec!["--client-sockets", "0"],
        vec!["--client-threads", "0"],
        vec!["-p", "quic-go", "--client-threads", "2"],
    ];
    for args in cases {
        let out = quark().arg("bench").args(&args).output().unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("error: "), "{args:?}: {err}");
    }
    drop(busy);
    let out = quark()
        .args(["report", "/nonexistent.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stderr(&out).lines().count(), 1);
    // A gzip header over garbage, and bytes that are not UTF-8.
    let bad = tmp("bad.json.gz");
    for junk in [&[0x1f, 0x8b, 8, 0, 1, 2, 3][..], &[0xff, 0xfe, 0x00]] {
        std::fs::write(&bad, junk).unwrap();
        let out = quark().arg("report").arg(&bad).output().unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with("error: cannot read"), "{err}");
    }
    let _ = std::fs::remove_file(bad);
}

#[test]
fn server_workers_reach_the_server_and_the_record() {
    let json = tmp("workers.json");
    let v = bench_json(
        &["-p", "quic,tcp", "-s", "rps", "--requests", "200"],
        &[
            "--connections",
            "12",
            "--server-workers",
            "2",
            "--client-sockets",
            "6",
        ],
        &json,
    );
    assert_eq!(v["config"]["server_workers"], 2);
    assert_eq!(v["config"]["client_sockets"], 6);
    for proto in ["quic", "tcp"] {
        let r = &cells(&v, "rps", proto)[0]["metrics"];
        assert_eq!(r["server_counters"]["requests"], 200, "{proto}");
        assert_eq!(r["server_counters"]["peak_connections"], 12, "{proto}");
    }
    let _ = std::fs::remove_file(&json);
}

#[test]
fn client_threads_count_every_request_once() {
    let json = tmp("client-threads.json");
    let v = bench_json(
        &["-p", "quic,tcp+tls", "-s", "rps,scale", "--requests", "301"],
        &[
            "--connections",
            "7",
            "--scale-connections",
            "5",
            "--client-threads",
            "2",
            "--client-sockets",
            "4",
            "--warmup",
            "0",
        ],
        &json,
    );
    assert_eq!(v["config"]["client_threads"], 2);
    for (scenario, conns) in [("rps", 7), ("scale", 5)] {
        for proto in ["quic", "tcp+tls"] {
            let c = cells(&v, scenario, proto);
            let r = &c[0]["metrics"];
            // Counted once on each side; every response byte checked by the
            // client (a mismatch fails the cell) and counted by the server.
            assert_eq!(r["requests"], 301, "{scenario} {proto}");
            assert_eq!(r["server_counters"]["requests"], 301, "{scenario} {proto}");
            assert_eq!(
                r["server_counters"]["bytes_out"], r["payload_bytes"],
                "{scenario} {proto}"
            );
            assert_eq!(r["peak_connections"], conns, "{scenario} {proto}");
            assert_eq!(r["server_counters"]["peak_connections"], conns);
            assert_eq!(r["client_thread_cpu_s"].as_array().unwrap().len(), 2);
            assert!(
                r["warnings"].is_null(),
                "{scenario} {proto}: {}",
                r["warnings"]
            );
        }
    }
    let _ = std::fs::remove_file(&json);
}

#[test]
fn busy_polling_runs_are_exact_and_recorded() {
    let json = tmp("busy-poll.json");
    let v = bench_json(
        &["-p", "quic,tcp+tls", "-s", "persistent", "--sizes", "2KiB"],
        &["--requests", "300", "--busy-poll"],
        &json,
    );
    assert_eq!(v["config"]["busy_poll"], true);
    for proto in ["quic", "tcp+tls"] {
        let p = &cells(&v, "persistent", proto)[0]["metrics"];
        assert_eq!(p["server_counters"]["requests"], 300, "{proto}");
        assert_eq!(p["server_counters"]["bytes_out"], 300 * 2048, "{proto}");
    }
    let _ = std::fs::remove_file(&json);
}

/// `--quic-version 2`: quark's servers accept only v2 and its clients start
/// in it with no other to offer, so every exact request proves a v2 run.
#[test]
fn quic_v2_runs_are_exact_and_recorded() {
    let json = tmp("quic-v2.json");
    let v = bench_json(
        &["-p", "quic", "-s", "persistent", "--sizes", "2KiB"],
        &["--requests", "200", "--quic-version", "2"],
        &json,
    );
    assert_eq!(v["config"]["quic_version"], 0x6b33_43cf_u32);
    let p = &cells(&v, "persistent", "quic")[0]["metrics"];
    assert_eq!(p["server_counters"]["requests"], 200);
    assert_eq!(p["server_counters"]["bytes_out"], 200 * 2048);
    let _ = std::fs::remove_file(&json);
}

#[test]
fn the_breakdown_is_left_out_when_client_and_server_share_a_cpu() {
    // On one CPU a send system call often runs the woken peer inside it, so
    // its time is not the sender's CPU: the lab reports no breakdown then.
    let json = tmp("pinned.json");
    let args = [
        "-p",
        "quic",
        "-s",
        "persistent",
        "--sizes",
        "2KiB",
        "--requests",
        "300",
    ];
    let shared = bench_json(&args, &["--pin", "0,0"], &json);
    let cell = &cells(&shared, "persistent", "quic")[0]["metrics"];
    assert_eq!(cell["server_counters"]["requests"], 300);
    assert!(cell["breakdown"].is_null(), "{}", cell["breakdown"]);
    let apart = bench_json(&args, &["--pin", "0,1"], &json);
    let cell = &cells(&apart, "persistent", "quic")[0]["metrics"];
    assert!(
        cell["breakdown"]["server"].is_array(),
        "{}",
        cell["breakdown"]
    );
    let _ = std::fs::remove_file(&json);
}

#[test]
fn a_dying_server_fails_its_cell_and_the_run_goes_on() {
    let json = tmp("die.json");
    // Each cell: 2KB (1 warm-up + 2 runs = requests 1..3) passes, 20KB dies at request 4.
    let out = quark()
        .args([
            "bench",
            "-p",
            "tcp,quinn",
            "-s",
            "goodput",
            "--sizes",
            "2KB,20KB",
            "--runs",
            "2",
            "--warmup",
            "1",
        ])
        .args(["--die-after", "4", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let v = read_json(&json);
    assert_eq!(v["complete"], false);
    for proto in ["tcp", "quinn"] {
        let c = cells(&v, "goodput", proto);
        assert_eq!(c.len(), 2, "{proto}");
        assert_eq!(c[0]["status"], "ok");
        assert_eq!(c[1]["status"], "error");
        assert!(
            c[1]["error"].as_str().unwrap().contains("exit"),
            "{}",
            c[1]["error"]
        );
    }
    let _ = std::fs::remove_file(json);
}

/// Processes started by orchestrator `pid` (they carry QUARK_LAB_PARENT=pid).
fn children_of(pid: u32) -> Vec<u32> {
    let marker = format!("QUARK_LAB_PARENT={pid}");
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(env) = std::fs::read(entry.path().join("environ"))
            && env.split(|&b| b == 0).any(|e| e == marker.as_bytes())
        {
            // Zombies are gone for our purposes.
            let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
            if !stat
                .rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
            {
                found.push(p);
            }
        }
    }
    found
}

/// Polls `cond` every 50 ms, up to `limit`.
fn wait_until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let steps = limit.as_millis() / 50;
    for _ in 0..steps {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    cond()
}

fn start_long_run(json: &PathBuf) -> std::process::Child {
    let child = quark()
        .args([
            "bench",
            "-p",
            "tcp",
            "-s",
            "streams",
            "--duration",
            "120",
            "--json",
        ])
        .arg(json)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    assert!(
        wait_until(Duration::from_secs(30), || children_of(pid).len() == 2),
        "server and client started"
    );
    child
}

#[test]
fn sigint_stops_children_and_keeps_partial_results() {
    let json = tmp("sigint.json");
    let mut child = start_long_run(&json);
    let pid = child.id();
    Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(children_of(pid).is_empty(), "children left behind");
    let v = read_json(&json);
    assert_eq!(v["complete"], false);
    assert!(v["errors"][0].as_str().unwrap().contains("SIGINT"));
    let _ = std::fs::remove_file(json);
}

#[test]
fn killing_the_orchestrator_kills_its_children() {
    let json = tmp("sigkill.json");
    let mut child = start_long_run(&json);
    let pid = child.id();
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        wait_until(Duration::from_secs(20), || children_of(pid).is_empty()),
        "orphans: {:?}",
        children_of(pid)
    );
    let _ = std::fs::remove_file(json);
}

#[test]
fn lab_cert_makes_an_identity_a_lab_server_accepts() {
    let (cert, key) = (tmp("lab-cert.der"), tmp("lab-key.der"));
    let out = quark()
        .args(["lab-cert", "--cert"])
        .arg(&cert)
        .arg("--key")
        .arg(&key)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    // The server loads it and listens; closing its stdin ends it.
    let out = quark()
        .args([
            "lab-server",
            "--proto",
            "quic",
            "--listen",
            "127.0.0.1:0",
            "--cert",
        ])
        .arg(&cert)
        .arg("--key")
        .arg(&key)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("\"listening\""),
        "{stdout} {}",
        stderr(&out)
    );
    let _ = (std::fs::remove_file(&cert), std::fs::remove_file(&key));

    let out = quark()
        .args([
            "lab-cert",
            "--cert",
            "/nonexistent/dir/c.der",
            "--key",
            "/nonexistent/dir/k.der",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.starts_with("error:") && err.lines().count() == 1,
        "{err}"
    );
}

#[test]
fn lab_runs_quark_over_af_xdp_between_namespaces() {
    // Needs root (namespaces, veth, AF_XDP); without it there is nothing to test.
    if !root() {
        return;
    }
    let json = tmp("xdp.json");
    let out = quark()
        .args(["bench", "-p", "quic", "-s", "rps,goodput", "--sizes", "2KB"])
        .args(["--requests", "100", "--runs", "2", "--warmup", "1"])
        .args(["--connections", "4", "--net", "veth-xdp", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v = read_json(&json);
    for (scenario, requests) in [("rps", 100), ("goodput", 2)] {
        let cell = cells(&v, scenario, "quic")[0];
        assert_eq!(cell["net"], "veth-xdp");
        assert_eq!(cell["metrics"]["server_counters"]["requests"], requests);
        assert_eq!(cell["metrics"]["server_counters"]["errors"], 0);
    }
    let _ = std::fs::remove_file(&json);

    // A worker group on AF_XDP: a veth queue per worker, a client socket per
    // queue. More client sockets than queues is refused up front.
    let out = quark()
        .args(["bench", "-p", "quic", "-s", "rps", "--sizes", "2KB"])
        .args([
            "--requests",
            "200",
            "--connections",
            "8",
            "--net",
            "veth-xdp",
        ])
        .args(["--server-workers", "2", "--client-sockets", "2", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v = read_json(&json);
    let cell = cells(&v, "rps", "quic")[0];
    assert_eq!(cell["metrics"]["server_counters"]["requests"], 200);
    assert_eq!(cell["metrics"]["server_counters"]["errors"], 0);
    let _ = std::fs::remove_file(&json);
    let out = quark()
        .args(["bench", "-p", "quic", "-s", "rps", "--net", "veth-xdp"])
        .args(["--server-workers", "2", "--client-sockets", "3"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("can't exceed --server-workers"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn lab_runs_tcp_and_quic_over_the_emulated_link_with_and_without_offloads() {
    // Needs root (namespaces, TUN devices); without it there is nothing to test.
    if !root() {
        return;
    }
    for offload in [true, false] {
        let json = tmp(&format!("link-{offload}.json"));
        let mut args = vec!["-p", "quic,tcp+tls", "-s", "goodput", "--sizes", "2MB"];
        args.extend(["--runs", "2", "--warmup", "0", "--net", "rtt10-loss1"]);
        if !offload {
            args.push("--no-link-offload");
        }
        let v = bench_json(&args, &[], &json);
        assert_eq!(
            v["config"]["no_link_offload"].as_bool().unwrap_or(false),
            !offload
        );
        for proto in ["quic", "tcp+tls"] {
            let cell = cells(&v, "goodput", proto)[0];
            assert_eq!(cell["net"], "rtt10-loss1");
            assert_eq!(cell["status"], "ok", "{proto}, offload {offload}: {cell}");
            assert_eq!(cell["metrics"]["server_counters"]["requests"], 2);
            assert_eq!(cell["metrics"]["server_counters"]["errors"], 0);
        }
        let _ = std::fs::remove_file(&json);
    }
}

#[test]
fn repeated_cells_keep_every_run_and_report_medians() {
    let json = tmp("repeat.json");
    let out = quark()
        .args([
            "bench",
            "-p",
            "quic,tcp",
            "-s",
            "persistent",
            "--sizes",
            "2KiB",
        ])
        .args([
            "--requests",
            "200",
            "--repeat",
            "2",
            "--ref",
            "tcp",
            "--json",
        ])
        .arg(&json)
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("persistent round 2 of 2"), "{err}");
    assert!(
        err.contains("persistent quic 2KiB: median of 2")
            && err.contains("p99 at or below tcp's in "),
        "{err}"
    );
    let v = read_json(&json);
    assert_eq!(v["config"]["repeat"], 2);
    for proto in ["quic", "tcp"] {
        let c = cells(&v, "persistent", proto);
        assert_eq!(c.len(), 1, "one entry per cell: {proto}");
        let runs = c[0]["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 2, "{proto}");
        for r in runs {
            assert_eq!(r["server_counters"]["requests"], 200, "{proto}");
        }
        // The median of two rates is their mean.
        let rate = |m: &serde_json::Value| m["requests_per_s"].as_f64().unwrap();
        let mean = (rate(&runs[0]) + rate(&runs[1])) / 2.0;
        assert!(
            (rate(&c[0]["metrics"]) - mean).abs() < 1e-6 * mean,
            "{proto}"
        );
    }
    let _ = std::fs::remove_file(&json);
}

/// `quic-c` (quark through libquark's C API) runs beside `quic` in one
/// `quark bench`, with exact server counts and CPU per GB and per request.
#[test]
fn quic_c_runs_beside_quic_with_exact_counts() {
    let json = tmp("quic-c.json");
    let v = bench_json(
        &[
            "-p",
            "quic,quic-c",
            "-s",
            "goodput,persistent",
            "--sizes",
            "300KB",
        ],
        &["--runs", "2", "--warmup", "1", "--requests", "200"],
        &json,
    );
    for proto in ["quic", "quic-c"] {
        let g = &cells(&v, "goodput", proto)[0]["metrics"];
        assert_eq!(g["server_counters"]["requests"], 2, "{proto}");
        assert_eq!(g["server_counters"]["bytes_out"], 600_000, "{proto}");
        assert!(
            g["cpu_s_per_gb"]["total"].as_f64().unwrap() > 0.0,
            "{proto}"
        );
        let p = &cells(&v, "persistent", proto)[0]["metrics"];
        assert_eq!(p["server_counters"]["requests"], 200, "{proto}");
        assert_eq!(p["server_counters"]["bytes_out"], 200 * 300_000, "{proto}");
        assert_eq!(p["server_counters"]["errors"], 0, "{proto}");
        assert!(p["cpu_s_per_1000_requests"]["total"].as_f64().unwrap() > 0.0);
    }
    let _ = std::fs::remove_file(&json);
}
