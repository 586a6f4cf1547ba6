//! Results files validate against the published JSON Schema, and the HTML
//! report contains its charts (checked in headless Chromium when installed,
//! by parsing the SVG otherwise).

use quark_lab::adapter::ServerCounters;
use quark_lab::metrics::{Machine, Summary, Usage};
use quark_lab::results::{
    Breakdown, BreakdownItem, CellResult, Datagrams, Metrics, Report, RunConfig, SCHEMA_ID,
    SCHEMA_JSON, SCHEMA_VERSION, Sides, Status,
};
use quark_lab::workload::Workload;

fn usage(cpu: f64) -> Usage {
    Usage {
        user_s: cpu * 0.7,
        sys_s: cpu * 0.3,
        peak_rss_bytes: 12 << 20,
        peak_rss_scope: "interval".into(),
        rss_baseline_bytes: 9 << 20,
        rss_start_bytes: Some(10 << 20),
    }
}

fn metrics(goodput: f64, cpu_per_gb: f64, samples: &mut [u64]) -> Metrics {
    let summary = Summary::from_nanos(samples);
    Metrics {
        requests: samples.len() as u64,
        connections: 1,
        payload_bytes: 1_000_000,
        elapsed_s: 0.5,
        goodput_bps: goodput,
        requests_per_s: 1000.0,
        handshakes_per_s: Some(2.0),
        latency_s: summary.clone(),
        connect_s: summary,
        latency_cdf: quark_lab::metrics::cdf_points(samples, 50),
        connect_cdf: quark_lab::metrics::cdf_points(samples, 50),
        peak_in_flight: 1,
        peak_connections: 1,
        client: usage(0.1),
        server: usage(0.2),
        server_counters: ServerCounters {
            requests: samples.len() as u64,
            ..Default::default()
        },
        cpu_s: Sides {
            client: 0.1,
            server: 0.2,
            total: 0.3,
        },
        cpu_s_per_gb: Some(Sides {
            client: cpu_per_gb / 3.0,
            server: cpu_per_gb * 2.0 / 3.0,
            total: cpu_per_gb,
        }),
        cpu_s_per_1000_requests: Some(Sides {
            client: 0.1,
            server: 0.2,
            total: 0.3,
        }),
        memory_per_connection_bytes: Some(Sides {
            client: 1e4,
            server: 2e4,
            total: 3e4,
        }),
        idle_memory_per_connection_bytes: None,
        datagrams: None,
        breakdown: None,
        warnings: vec![],
        client_thread_cpu_s: vec![],
    }
}

fn cell(scenario: &str, protocol: &str, size: u64, m: Metrics) -> CellResult {
    CellResult {
        scenario: scenario.into(),
        protocol: protocol.into(),
        label: quark_lab::size::format_size(size),
        status: Status::Ok,
        error: None,
        workload: Some(Workload::Fresh {
            requests: 3,
            workers: 1,
            response_len: size,
            body_len: 0,
            warmup: 1,
        }),
        metrics: Some(m),
        net: None,
        runs: vec![],
    }
}

/// A report with every kind of entry: goodput curves, CDFs, a breakdown,
/// datagram loss, a failed and a skipped cell.
fn fixture() -> Report {
    let protos = ["tcp", "tcp+tls", "quinn", "udp"];
    let mut results = Vec::new();
    for (i, p) in protos[..3].iter().enumerate() {
        for (j, size) in [2_000u64, 2_000_000, 200_000_000].into_iter().enumerate() {
            let mut samples: Vec<u64> = (1..=30).map(|k| k * 1000 * (i as u64 + 1)).collect();
            let m = metrics(
                1e8 * 10f64.powi(j as i32) / (i as f64 + 1.0),
                0.5 * (i as f64 + 1.0),
                &mut samples,
            );
            results.push(cell("goodput", p, size, m));
        }
        let mut samples: Vec<u64> = (1..=1000).map(|k| k * 997 % 50_000 + 20_000).collect();
        let mut m = metrics(3e8, 20.0, &mut samples);
        if *p == "quinn" {
            let items = |k: f64| {
                ["crypto", "send", "recv", "ack", "other"]
                    .iter()
                    .enumerate()
                    .map(|(n, name)| BreakdownItem {
                        name: (*name).into(),
                        ns: k * (n as f64 + 1.0),
                    })
                    .collect()
            };
            m.breakdown = Some(Breakdown {
                unit: "packet".into(),
                client: items(100.0),
                server: items(120.0),
            });
        }
        let mut c = cell("rps", p, 2000, m);
        c.workload = Some(Workload::Persistent {
            connections: 144,
            in_flight: 1,
            requests: 1000,
            response_len: 2000,
            body_len: 0,
            warmup: 0,
        });
        results.push(c);
    }
    let mut samples = vec![5_000_000; 3];
    let mut m = metrics(6e8, 11.0, &mut samples);
    m.datagrams = Some(Datagrams {
        sent: 1000,
        received: 900,
        lost: 100,
        loss_ratio: 0.1,
    });
    m.cpu_s_per_1000_requests = None;
    let mut c = cell("goodput", "udp", 2_000_000, m);
    c.workload = Some(Workload::Blast {
        bytes: 2_000_000,
        runs: 3,
        warmup: 1,
        payload: 1200,
    });
    results.push(c);
    results.push(CellResult {
        scenario: "rps".into(),
        protocol: "udp".into(),
        label: "-".into(),
        status: Status::Skipped,
        error: Some("datagram protocols run goodput and streams only, not rps".into()),
        workload: None,
        metrics: None,
        net: None,
        runs: vec![],
    });
    results.push(CellResult {
        scenario: "persistent".into(),
        protocol: "quinn".into(),
        label: "2KiB".into(),
        status: Status::Error,
        error: Some("server exited unexpectedly (exit status: 101)".into()),
        workload: Some(Workload::Persistent {
            connections: 1,
            in_flight: 1,
            requests: 10,
            response_len: 2048,
            body_len: 2048,
            warmup: 0,
        }),
        metrics: None,
        net: Some("rtt30-loss1".into()),
        runs: vec![],
    });
    let mut report = Report {
        schema: SCHEMA_ID.into(),
        version: SCHEMA_VERSION,
        complete: false,
        started_unix_s: 1.7e9,
        finished_unix_s: 1.7e9 + 30.0,
        command_line: vec!["quark".into(), "bench".into()],
        machine: Machine::detect(),
        versions: quark_lab::versions(),
        config: RunConfig {
            net: "loopback".into(),
            protocols: protos.iter().map(|s| s.to_string()).collect(),
            scenarios: vec!["goodput".into(), "rps".into(), "persistent".into()],
            reference: "quinn".into(),
            cipher: "aes128gcm".into(),
            cert_key: "ecdsa".into(),
            crypto: "ring".into(),
            resumption: true,
            cc: "cubic".into(),
            tcp_cc: "cubic".into(),
            busy_poll: false,
            quic_version: None,
            no_link_offload: false,
            pin: Some([0, 1]),
            threads: 1,
            suite: true,
            network: vec![quark_lab::bench::net::info(
                "rtt30-loss1",
                quark_lab::bench::NetMode::Link,
            )],
            server_workers: None,
            client_sockets: 1,
            client_threads: 1,
            repeat: 1,
            placement: None,
        },
        results,
        errors: vec!["interrupted by SIGINT; results are partial".into()],
        summary: vec![],
        cloud: None,
    };
    report.summarize();
    report
}

fn validator() -> jsonschema::Validator {
    let schema: serde_json::Value = serde_json::from_str(SCHEMA_JSON).unwrap();
    jsonschema::validator_for(&schema).unwrap()
}

#[test]
fn report_validates_against_schema_and_round_trips() {
    let report = fixture();
    let v = serde_json::to_value(&report).unwrap();
    let validator = validator();
    let errors: Vec<String> = validator
        .iter_errors(&v)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    // Floats may move by an ulp through JSON text; everything else is exact.
    let back = Report::from_json(&serde_json::to_string(&report).unwrap()).unwrap();
    assert_eq!(back.results.len(), report.results.len());
    assert!(
        back.results
            .iter()
            .zip(&report.results)
            .all(|(a, b)| a.status == b.status && a.workload == b.workload)
    );
    assert_eq!(back.summary.len(), report.summary.len());
    // Ratios are reference / protocol.
    let tcp = report.summary.iter().find(|s| s.protocol == "tcp").unwrap();
    assert_eq!(tcp.goodput_label.as_deref(), Some("200MB"));
    assert!((tcp.ref_goodput_ratio.unwrap() - 1.0 / 3.0).abs() < 1e-9);
    assert!((tcp.ref_cpu_per_gb_ratio.unwrap() - 3.0).abs() < 1e-9);
    assert_eq!(
        report
            .summary
            .iter()
            .find(|s| s.protocol == "quinn")
            .unwrap()
            .ref_goodput_ratio,
        Some(1.0)
    );
}

#[test]
fn schema_rejects_what_it_should() {
    let validator = validator();
    let good = serde_json::to_value(fixture()).unwrap();
    let mut bad = good.clone();
    bad["version"] = 2.into();
    assert!(!validator.is_valid(&bad));
    let mut bad = good.clone();
    bad["results"][0]["metrics"]["goodput_bps"] = (-1.0).into();
    assert!(!validator.is_valid(&bad));
    let mut bad = good.clone();
    bad["results"][0]["status"] = "fine".into();
    assert!(!validator.is_valid(&bad));
    let mut bad = good;
    bad["results"][0].as_object_mut().unwrap().remove("metrics");
    assert!(!validator.is_valid(&bad), "an ok cell needs metrics");
    assert!(Report::from_json(r#"{"schema":"other","version":1}"#).is_err());
}

/// Chart kinds and how many series lines each must have in the fixture.
fn check_charts(svgs: &[String]) {
    let count = |kind: &str| {
        svgs.iter()
            .filter(|s| s.contains(&format!("data-chart=\"{kind}\"")))
            .count()
    };
    assert_eq!(count("goodput"), 1, "one goodput chart");
    // rps 2KB (request and connect time): one chart each, however many protocols.
    assert_eq!(count("latency-cdf"), 2, "request and connect CDFs");
    assert_eq!(count("cpu-per-gb"), 1);
    assert_eq!(count("cpu-breakdown"), 1);
    let goodput = svgs
        .iter()
        .find(|s| s.contains("data-chart=\"goodput\""))
        .unwrap();
    // tcp, tcp+tls, quinn and udp curves.
    assert_eq!(goodput.matches("<polyline").count(), 4, "{goodput}");
    let breakdown = svgs
        .iter()
        .find(|s| s.contains("data-chart=\"cpu-breakdown\""))
        .unwrap();
    assert_eq!(
        breakdown.matches("<rect class=\"bar\"").count(),
        10,
        "5 categories × client and server"
    );
}

#[test]
fn html_report_has_the_charts() {
    let html = quark_lab::html::render(&fixture());
    // Every <svg> parses as XML and has the structure the figures need.
    let mut svgs = Vec::new();
    let mut rest = html.as_str();
    while let Some(start) = rest.find("<svg") {
        let end = rest[start..].find("</svg>").unwrap() + start + "</svg>".len();
        let svg = &rest[start..end];
        let doc = roxmltree::Document::parse(svg).unwrap_or_else(|e| panic!("{e}: {svg}"));
        let root = doc.root_element();
        assert_eq!(root.tag_name().name(), "svg");
        assert!(
            root.descendants().any(|n| n.has_tag_name("text")),
            "axis labels"
        );
        assert!(
            root.descendants()
                .any(|n| n.has_tag_name("polyline") || n.has_tag_name("rect"))
        );
        svgs.push(svg.to_string());
        rest = &rest[end..];
    }
    check_charts(&svgs);
    assert!(html.contains("partial results"));

    // Without breakdown data the slot says so instead of drawing a chart.
    let mut plain = fixture();
    for c in &mut plain.results {
        if let Some(m) = &mut c.metrics {
            m.breakdown = None;
        }
    }
    let html2 = quark_lab::html::render(&plain);
    assert!(html2.contains("breakdown-slot") && !html2.contains("data-chart=\"cpu-breakdown\""));

    let chromium = std::path::Path::new("/usr/bin/chromium");
    if !chromium.exists() {
        eprintln!("chromium not installed: checked the SVG by parsing only");
        return;
    }
    let dir = std::env::temp_dir().join(format!("quark-lab-html-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("report.html");
    std::fs::write(&file, &html).unwrap();
    let profile = dir.join("profile");
    let out = std::process::Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", file.display()))
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&out.stdout).to_string();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The DOM as the browser built it: split into its <svg> elements.
    let svgs: Vec<String> = dom
        .split("<svg")
        .skip(1)
        .map(|s| format!("<svg{}", s.split("</svg>").next().unwrap()))
        .collect();
    check_charts(&svgs);
}

/// `--repeat`: each cell's runs fold into one entry whose metrics are the
/// field-by-field median (integers the lower median), keeping every run; a
/// failed run stays on its own; the folded report validates.
#[test]
fn repeated_runs_fold_into_medians_and_validate() {
    use quark_lab::bench::repeat::{fold_rounds, lines};
    let run = |goodput: f64, p99_scale: u64, n: u64| {
        let mut samples: Vec<u64> = (1..=n).map(|k| k * 1000 * p99_scale).collect();
        metrics(goodput, 0.5, &mut samples)
    };
    let mut results = vec![cell("rps", "tcp", 2000, run(9.0, 1, 100))];
    // Three rounds, the protocols taking turns; tcp's second round failed.
    for (quic, tcp) in [(10.0, Some(1.0)), (30.0, None), (20.0, Some(3.0))] {
        results.push(cell("rps", "quic", 2000, run(quic, 2, 101 + quic as u64)));
        let mut t = cell("rps", "tcp", 2000, run(tcp.unwrap_or(0.0), 3, 100));
        if tcp.is_none() {
            (t.status, t.metrics, t.error) = (Status::Error, None, Some("died".into()));
        }
        results.push(t);
    }
    // The first entry is before the fold's start and stays alone.
    fold_rounds(&mut results, 1);
    assert_eq!(results.len(), 4, "{results:#?}");
    assert!(results[0].runs.is_empty());
    let quic = &results[1];
    assert_eq!(quic.protocol, "quic");
    assert_eq!(quic.runs.len(), 3);
    let m = quic.metrics.as_ref().unwrap();
    assert_eq!(m.goodput_bps, 20.0);
    // Requests were 111, 131 and 121: the median is one of them.
    assert_eq!(m.requests, 121);
    let tcp = &results[2];
    assert_eq!((tcp.status, tcp.runs.len()), (Status::Ok, 2));
    assert_eq!(
        tcp.metrics.as_ref().unwrap().goodput_bps,
        2.0,
        "mean of two"
    );
    assert_eq!(results[3].status, Status::Error);
    // quic's p99 is below tcp's in each round, but tcp ran twice: no count.
    let text = lines(&results, 1, "tcp").join("\n");
    assert!(text.contains("rps quic 2KB: median of 3"), "{text}");
    assert!(!text.contains("at or below"), "{text}");
    // With the same number of runs the rounds are compared one by one.
    let mut both = vec![];
    for round in 0..3 {
        both.push(cell("rps", "quic", 2000, run(1.0, 2 + round, 100)));
        both.push(cell("rps", "tcp", 2000, run(1.0, 3, 100)));
    }
    fold_rounds(&mut both, 0);
    let text = lines(&both, 0, "tcp").join("\n");
    assert!(
        text.contains("p99 at or below tcp's in 2 of 3 rounds"),
        "{text}"
    );
    // CPU per byte is also compared round by round: the medians (2.0 each)
    // would call the two level, but quic used less than tcp in the same round
    // in two rounds of three (ratios 0.50, 0.67 and 2.67).
    let mut paired = vec![];
    for (quic, tcp) in [(1.0, 2.0), (2.0, 3.0), (4.0, 1.5)] {
        paired.push(cell(
            "goodput",
            "quic",
            2000,
            metrics(1.0, quic, &mut [1000]),
        ));
        paired.push(cell("goodput", "tcp", 2000, metrics(1.0, tcp, &mut [1000])));
    }
    fold_rounds(&mut paired, 0);
    let text = lines(&paired, 0, "tcp").join("\n");
    assert!(text.contains("2.00 (1.00-4.00) CPU s/GB"), "{text}");
    assert!(
        text.contains("CPU per byte 0.67x (0.50x-2.67x) tcp's round by round"),
        "{text}"
    );
    let mut report = fixture();
    report.config.repeat = 3;
    report.results.extend(results);
    let v = serde_json::to_value(&report).unwrap();
    let errors: Vec<String> = validator()
        .iter_errors(&v)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
}

#[test]
fn the_table_names_any_build_but_the_plain_release_one() {
    let mut report = fixture();
    for (build, shown) in [
        ("release", false),
        ("debug", true),
        ("release, pgo optimised", true),
    ] {
        report.versions.insert("build".into(), build.into());
        let table = quark_lab::table::render(&report);
        assert_eq!(
            table.contains(&format!("\nbuild: {build}\n")),
            shown,
            "{build}: {table}"
        );
        assert_eq!(table.contains("build:"), shown, "{build}");
    }
}
