//! quic-go in the lab: `quark bench -p quic-go` (the orchestrator, run here
//! in-process) starts the Go program `lab/quic-go`, which `interop/setup.sh`
//! builds to `${CARGO_TARGET_DIR:-target}/interop/quicgo-lab`, for both
//! children, and measures it like every protocol: exact counts on both
//! sides, every byte verified, a valid results file.
//!
//! Like the interop tests, a missing program fails the test unless
//! `QUARK_INTEROP_OPTIONAL=1`, which skips it. `QUARK_QUICGO_LAB` names
//! another program.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use quark_lab::adapter::{Cipher, find};
use quark_lab::bench::{BenchConfig, NetModeChoice, Outcome, run};
use quark_lab::results::{SCHEMA_JSON, Status};
use quark_lab::scenario::{Params, Scenario};

/// Where the `quark` binary of this build is: beside this test's directory
/// (`target/debug/deps/quicgo-…` → `target/debug/quark`). It need not exist:
/// quic-go's children are the Go program, found from quark's directory.
fn quark_exe() -> PathBuf {
    let me = std::env::current_exe().unwrap();
    me.parent().and_then(Path::parent).unwrap().join("quark")
}

/// Whether the Go program is there; skips (with `QUARK_INTEROP_OPTIONAL=1`)
/// or panics when it is not.
fn have_program() -> bool {
    let child = find("quic-go").and_then(|a| a.external_child()).unwrap();
    match child.locate(&quark_exe()) {
        Ok(_) => true,
        Err(why) if std::env::var("QUARK_INTEROP_OPTIONAL").is_ok_and(|v| v == "1") => {
            println!("SKIP: {why}");
            false
        }
        Err(why) => panic!("{why} (set QUARK_INTEROP_OPTIONAL=1 to skip instead)"),
    }
}

fn params(s: Scenario, f: impl FnOnce(&mut Params)) -> (Scenario, Params) {
    let mut p = s.defaults();
    f(&mut p);
    (s, p)
}

fn config(scenarios: Vec<(Scenario, Params)>, cipher: Cipher) -> BenchConfig {
    BenchConfig {
        exe: quark_exe(),
        protocols: vec!["quic-go".into()],
        scenarios,
        suite: false,
        net: "loopback".into(),
        net_mode: NetModeChoice::Auto,
        pin: None,
        threads: 1,
        cipher,
        cert_key: quark_lab::adapter::CertKey::default(),
        resumption: true,
        cc: Default::default(),
        tcp_cc: "system".into(),
        busy_poll: false,
        quic_version: None,
        link_offload: true,
        reference: "quic-go".into(),
        listen: "127.0.0.1:0".parse().unwrap(),
        timeout: Duration::from_secs(60),
        progress: false,
        command_line: vec![
            "quark".into(),
            "bench".into(),
            "-p".into(),
            "quic-go".into(),
        ],
        json: None,
        die_after: None,
        server_workers: None,
        client_sockets: 1,
        client_threads: 1,
        repeat: 1,
        agents: Default::default(),
        cloud: None,
    }
}

async fn bench(cfg: BenchConfig) -> (Outcome, Vec<String>) {
    let mut log = Vec::new();
    let outcome = run(cfg, |line| {
        eprintln!("{line}");
        log.push(line.to_string());
    })
    .await
    .unwrap();
    (outcome, log)
}

#[tokio::test]
async fn quic_go_is_measured_like_every_protocol() {
    if !have_program() {
        return;
    }
    let scenarios = vec![
        params(Scenario::Goodput, |p| {
            p.sizes = vec![3_000_000];
            p.runs = 2;
            p.warmup = 1;
        }),
        params(Scenario::Persistent, |p| {
            p.sizes = vec![2048];
            p.requests = 200;
        }),
        params(Scenario::Rps, |p| {
            p.sizes = vec![2000];
            p.requests = 300;
            p.connections = 6;
        }),
        params(Scenario::Ephemeral, |p| {
            p.sizes = vec![1000];
            p.requests = 30;
            p.clients = 3;
        }),
    ];
    // (scenario, requests, connections opened in the interval, response bytes)
    let want = [
        ("goodput", 2, 2, 3_000_000),
        ("persistent", 200, 0, 2048),
        ("rps", 300, 0, 2000),
        ("ephemeral", 30, 30, 1000),
    ];
    let (out, log) = bench(config(scenarios, Cipher::Aes128Gcm)).await;
    let report = &out.report;
    assert_eq!(out.exit_code, 0, "{log:#?}\n{:#?}", report.results);
    assert!(report.complete);
    // From lab/quic-go/go.mod.
    assert!(
        report.versions.contains_key("quic-go"),
        "{:?}",
        report.versions
    );
    assert_eq!(report.results.len(), want.len(), "{:#?}", report.results);
    for ((scenario, requests, connections, size), cell) in want.into_iter().zip(&report.results) {
        assert_eq!(
            (cell.scenario.as_str(), cell.protocol.as_str()),
            (scenario, "quic-go")
        );
        assert_eq!(cell.status, Status::Ok, "{scenario}: {:?}", cell.error);
        let m = cell.metrics.as_ref().unwrap();
        // The server counted what the client did (else `warnings` says so).
        assert!(m.warnings.is_empty(), "{scenario}: {:?}", m.warnings);
        assert_eq!(
            (m.requests, m.connections),
            (requests, connections),
            "{scenario}"
        );
        assert_eq!(m.server_counters.requests, requests, "{scenario}");
        assert_eq!(m.server_counters.bytes_out, requests * size, "{scenario}");
        assert_eq!(m.latency_s.as_ref().unwrap().count, requests, "{scenario}");
        assert!(m.goodput_bps > 0.0 && m.requests_per_s > 0.0, "{scenario}");
        assert!(m.cpu_s.total > 0.0, "{scenario}: no CPU time measured");
        assert!(m.client.peak_rss_bytes > 0 && m.server.peak_rss_bytes > 0);
        assert!(!m.latency_cdf.is_empty(), "{scenario}");
    }
    let rps = report.results[2].metrics.as_ref().unwrap();
    assert_eq!(
        (rps.peak_connections, rps.server_counters.peak_connections),
        (6, 6)
    );
    let ephemeral = report.results[3].metrics.as_ref().unwrap();
    assert_eq!(
        ephemeral.server_counters.bytes_in,
        30 * 1000,
        "request bodies"
    );
    assert_eq!(ephemeral.connect_s.as_ref().unwrap().count, 30);

    let schema: serde_json::Value = serde_json::from_str(SCHEMA_JSON).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let json = serde_json::to_value(report).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&json)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
}

/// `--cipher` reaches quic-go: both children check the suite each handshake
/// settled on and fail the cell on any other.
#[tokio::test]
async fn quic_go_honours_the_cipher_suite() {
    if !have_program() {
        return;
    }
    for cipher in [Cipher::Chacha20, Cipher::Aes256Gcm] {
        let scenarios = vec![params(Scenario::Persistent, |p| {
            p.sizes = vec![5000];
            p.requests = 50;
        })];
        let (out, log) = bench(config(scenarios, cipher)).await;
        assert_eq!(out.exit_code, 0, "{cipher:?}: {log:#?}");
        assert_eq!(out.report.results[0].status, Status::Ok);
    }
}

const MISSING: &str = "/nonexistent/quark-lab-test/quicgo-lab";

/// Without its program a quic-go cell fails with one line saying how to get
/// it, and the run goes on to the next cell. Runs [`missing_program_child`]
/// in a process of its own with `QUARK_QUICGO_LAB` pointing nowhere (setting
/// the variable in this process would need `unsafe`).
#[test]
fn a_missing_program_fails_each_cell_with_one_line() {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "missing_program_child",
            "--exact",
            "--ignored",
            "--nocapture",
        ])
        .env("QUARK_QUICGO_LAB", MISSING)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("1 passed"), "{text}");
}

#[tokio::test]
#[ignore = "run by a_missing_program_fails_each_cell_with_one_line"]
async fn missing_program_child() {
    if std::env::var_os("QUARK_QUICGO_LAB").is_none_or(|v| v != MISSING) {
        return;
    }
    let scenarios = vec![
        params(Scenario::Goodput, |p| p.sizes = vec![1000]),
        params(Scenario::Rps, |p| p.sizes = vec![1000]),
    ];
    let (out, log) = bench(config(scenarios, Cipher::Aes128Gcm)).await;
    assert_eq!(out.exit_code, 1);
    assert!(!out.report.complete);
    let want = format!(
        "no quicgo-lab at {MISSING}: run interop/setup.sh (needs Go), or set QUARK_QUICGO_LAB to the program"
    );
    assert_eq!(out.report.results.len(), 2, "{:#?}", out.report.results);
    for cell in &out.report.results {
        assert_eq!(cell.status, Status::Error);
        assert_eq!(cell.error.as_deref(), Some(want.as_str()));
    }
    assert_eq!(
        log,
        [
            format!("goodput quic-go 1KB: error: {want}"),
            format!("rps quic-go 1KB: error: {want}"),
        ]
    );
}

/// One of the Go program's children, driven by hand.
struct GoChild {
    _proc: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    events: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
}

impl GoChild {
    fn start(args: &[&str]) -> GoChild {
        use std::process::Stdio;
        let program = find("quic-go")
            .and_then(|a| a.external_child())
            .and_then(|x| x.locate(&quark_exe()).ok())
            .unwrap();
        let mut proc = tokio::process::Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdout = proc.stdout.take().unwrap();
        GoChild {
            stdin: proc.stdin.take().unwrap(),
            events: tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(stdout)),
            _proc: proc,
        }
    }

    /// The next event, which must be `want`.
    async fn expect(&mut self, want: &str) -> serde_json::Value {
        let line = self.events.next_line().await.unwrap().expect("an event");
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["event"], want, "{v}");
        v
    }

    async fn send(&mut self, cmd: &str) {
        use tokio::io::AsyncWriteExt;
        self.stdin
            .write_all(format!("{cmd}\n").as_bytes())
            .await
            .unwrap();
    }
}

/// The Go program speaks the lab's protocol byte for byte as the Rust
/// adapters do: a quinn client against its server and its client against a
/// quinn server, payloads checked by both verifiers and counted by both
/// servers.
#[tokio::test]
async fn quic_go_and_quinn_speak_the_same_lab_protocol() {
    use quark_lab::adapter::{ClientConfig, Identity, Request, ServeConfig, ServerStats};
    use std::sync::Arc;
    if !have_program() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("quark-lab-quicgo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (cert, key) = (dir.join("cert.der"), dir.join("key.der"));
    let identity = Identity::generate().unwrap();
    identity.save(&cert, &key).unwrap();
    let (cert_arg, key_arg) = (cert.to_str().unwrap(), key.to_str().unwrap());
    let quinn = find("quinn").unwrap();

    // quic-go's server, quinn's client.
    let mut server = GoChild::start(&[
        "lab-server",
        "--proto",
        "quic-go",
        "--cert",
        cert_arg,
        "--key",
        key_arg,
    ]);
    let listening = server.expect("listening").await;
    let addr = listening["addr"].as_str().unwrap().parse().unwrap();
    let client = quinn
        .client(ClientConfig {
            server: addr,
            cert: identity.cert.clone(),
            cipher: Cipher::Aes128Gcm,
            sockets: 1,
        })
        .await
        .unwrap();
    server.send("start").await;
    server.expect("started").await;
    let conn = client.connect().await.unwrap();
    for (response_len, body_len) in [(2_000_003, 0), (5, 700_001)] {
        conn.request(Request {
            response_len,
            body_len,
        })
        .await
        .unwrap();
    }
    conn.close().await.unwrap();
    server.send("end").await;
    let c = &server.expect("report").await["counters"];
    assert_eq!(
        [
            &c["requests"],
            &c["bytes_out"],
            &c["bytes_in"],
            &c["errors"],
            &c["connections"]
        ],
        [2, 2_000_008, 700_001, 0, 1],
        "{c}"
    );

    // quinn's server, quic-go's client.
    let stats = Arc::new(ServerStats::default());
    let quinn_server = quinn
        .serve(ServeConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            identity,
            cipher: Cipher::Aes128Gcm,
            stats: stats.clone(),
            workers: None,
        })
        .await
        .unwrap();
    let phases = r#"[{"label":"x","workload":{"type":"persistent","connections":2,"in_flight":2,"requests":20,"response_len":300007,"body_len":70001,"warmup":0}}]"#;
    let server_addr = quinn_server.local_addr().to_string();
    let mut client = GoChild::start(&[
        "lab-client",
        "--proto",
        "quic-go",
        "--cert",
        cert_arg,
        "--server",
        &server_addr,
        "--phases",
        phases,
    ]);
    client.expect("phase").await;
    client.send("prepare").await;
    client.expect("ready").await;
    stats.reset();
    client.send("go").await;
    let done = client.expect("done").await;
    assert_eq!(done["result"]["requests"], 20);
    assert_eq!(done["result"]["bytes_in"], 20 * 300_007);
    client.expect("finished").await;
    let s = stats.snapshot();
    assert_eq!(
        (s.requests, s.bytes_in, s.bytes_out, s.errors),
        (20, 20 * 70_001, 20 * 300_007, 0)
    );
    std::fs::remove_dir_all(&dir).ok();
}
