//! `quark agent` across hosts: two agents in two network namespaces joined by
//! veth run bench cells across them (each response byte-checked by the lab
//! client, counts checked here), refuse a wrong token, and an agent killed
//! mid-run fails its cell with a clear error while the JSON keeps what
//! finished. Needs root (namespaces); skips with a reason otherwise.

mod common;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::stderr;

fn tmp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("quark-agent-{}-{name}", std::process::id()))
}

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().unwrap();
    assert!(out.status.success(), "ip {args:?}: {}", stderr(&out));
}

fn read_json(path: &PathBuf) -> serde_json::Value {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../../quark-lab/schema/results-v1.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&v)
        .map(|e| format!("{e} at {}", e.instance_path))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    v
}

/// Two namespaces joined by veth (10.79.0.1 server side, .2 client side),
/// an agent in each; all removed on drop.
struct Hosts {
    ns: [String; 2],
    agents: Vec<Child>,
    token: PathBuf,
}

const SERVER: &str = "10.79.0.1:7878";
const CLIENT: &str = "10.79.0.2:7878";

impl Hosts {
    fn new() -> Hosts {
        let id = std::process::id() % 100_000;
        let ns = [format!("qags{id}"), format!("qagc{id}")];
        let (a, b) = (format!("qag{id}a"), format!("qag{id}b"));
        let token = tmp("token");
        std::fs::write(&token, "0123456789abcdef0123456789abcdef\n").unwrap();
        let hosts = Hosts {
            ns: ns.clone(),
            agents: Vec::new(),
            token,
        };
        for n in &ns {
            ip(&["netns", "add", n]);
            ip(&["-n", n, "link", "set", "lo", "up"]);
        }
        ip(&[
            "link", "add", &a, "netns", &ns[0], "type", "veth", "peer", "name", &b, "netns", &ns[1],
        ]);
        for (n, dev, addr) in [(&ns[0], &a, "10.79.0.1/24"), (&ns[1], &b, "10.79.0.2/24")] {
            ip(&["-n", n, "addr", "add", addr, "dev", dev]);
            ip(&["-n", n, "link", "set", dev, "up"]);
        }
        hosts
    }

    /// Starts an agent in namespace `i` and waits for it to listen.
    fn agent(&mut self, i: usize, listen: &str) -> u32 {
        let mut child = Command::new("ip")
            .args(["netns", "exec", &self.ns[i]])
            .arg(env!("CARGO_BIN_EXE_quark"))
            .args(["agent", "--listen", listen, "--token-file"])
            .arg(&self.token)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert!(line.starts_with("agent listening on"), "{line}");
        let pid = child.id();
        self.agents.push(child);
        pid
    }

    /// `quark bench` in the client's namespace (the driver's host).
    fn bench(&self, token: &PathBuf, args: &[&str], json: &PathBuf) -> Child {
        Command::new("ip")
            .args(["netns", "exec", &self.ns[1]])
            .arg(env!("CARGO_BIN_EXE_quark"))
            .arg("bench")
            .args(args)
            .args(["--server-agent", SERVER, "--client-agent", CLIENT])
            .args(["--timeout", "30", "--token-file"])
            .arg(token)
            .arg("--json")
            .arg(json)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        for a in &mut self.agents {
            let _ = a.kill();
            let _ = a.wait();
        }
        for n in &self.ns {
            let _ = Command::new("ip").args(["netns", "del", n]).status();
        }
        let _ = std::fs::remove_file(&self.token);
    }
}

fn root() -> bool {
    let id = Command::new("id").arg("-u").output();
    let root = id.is_ok_and(|o| o.stdout.starts_with(b"0\n"));
    if !root {
        eprintln!("skipped: not root (the test makes network namespaces)");
    }
    root
}

fn children_of(pid: u32) -> Vec<String> {
    let out = Command::new("ps")
        .args(["-o", "args=", "--ppid", &pid.to_string()])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

fn cell<'a>(v: &'a serde_json::Value, scenario: &str, proto: &str) -> &'a serde_json::Value {
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["scenario"] == scenario && c["protocol"] == proto)
        .unwrap_or_else(|| panic!("no {scenario} {proto} in {v}"))
}

#[test]
fn bench_cells_run_across_two_agents_and_survive_a_lost_one() {
    if !root() {
        return;
    }
    let mut hosts = Hosts::new();
    let server_agent = hosts.agent(0, SERVER);
    let client_agent = hosts.agent(1, CLIENT);

    // Goodput 2MB and rps 2KB, quic and tcp+tls, each side on its own host.
    let json = tmp("across.json");
    let token = hosts.token.clone();
    let out = hosts
        .bench(
            &token,
            &["-p", "quic,tcp+tls", "-s", "goodput", "--sizes", "2MB"],
            &json,
        )
        .wait_with_output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v = read_json(&json);
    assert_eq!(v["complete"], true);
    let p = &v["config"]["placement"];
    assert_eq!(p["server"]["agent"], SERVER);
    assert_eq!(p["client"]["agent"], CLIENT);
    assert!(p["rtt_ms"].as_f64().unwrap() > 0.0, "{p}");
    for proto in ["quic", "tcp+tls"] {
        let m = &cell(&v, "goodput", proto)["metrics"];
        let runs = m["requests"].as_u64().unwrap();
        assert!(runs >= 1, "{m}");
        assert_eq!(m["server_counters"]["requests"], runs);
        assert_eq!(m["server_counters"]["bytes_out"], runs * 2_000_000);
        // CPU and memory come from each host's child.
        assert!(m["cpu_s"]["server"].as_f64().unwrap() > 0.0, "{m}");
        assert!(m["cpu_s"]["client"].as_f64().unwrap() > 0.0, "{m}");
        assert!(m["server"]["peak_rss_bytes"].as_u64().unwrap() > 0, "{m}");
    }

    let more = ["--requests", "300", "--connections", "3"];
    let args = [
        &["-p", "quic,tcp+tls", "-s", "rps", "--sizes", "2KB"][..],
        &more,
    ]
    .concat();
    let out = hosts
        .bench(&token, &args, &json)
        .wait_with_output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v = read_json(&json);
    for proto in ["quic", "tcp+tls"] {
        let m = &cell(&v, "rps", proto)["metrics"];
        assert_eq!(m["server_counters"]["requests"], 300, "{m}");
        assert_eq!(m["server_counters"]["bytes_out"], 300 * 2000, "{m}");
        assert_eq!(m["server_counters"]["peak_connections"], 3, "{m}");
    }
    let _ = std::fs::remove_file(&json);

    // A wrong token: refused before anything runs, no children on the agent.
    let bad = tmp("bad-token");
    std::fs::write(&bad, "not-the-token-at-all-0123456789").unwrap();
    let out = hosts
        .bench(&bad, &["-p", "quic", "-s", "rps"], &tmp("bad.json"))
        .wait_with_output()
        .unwrap();
    let _ = std::fs::remove_file(&bad);
    assert_ne!(out.status.code(), Some(0));
    assert!(
        stderr(&out).contains("authentication failed"),
        "{}",
        stderr(&out)
    );
    assert!(children_of(server_agent).is_empty());

    // A loopback server cannot serve a client on another host: said up front.
    let out = hosts
        .bench(
            &token,
            &["-p", "quic", "--addr", "127.0.0.1"],
            &tmp("lo.json"),
        )
        .wait_with_output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("cannot reach a loopback server"),
        "{}",
        stderr(&out)
    );

    // A driver killed mid-cell: both agents stop its children and keep serving.
    let long = [
        "-p",
        "tcp",
        "-s",
        "rps",
        "--sizes",
        "2KB",
        "--requests",
        "5000000",
    ];
    let mut driver = hosts.bench(&token, &long, &tmp("driver.json"));
    let start = Instant::now();
    while children_of(server_agent).is_empty() || children_of(client_agent).is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "cell never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = driver.kill();
    let _ = driver.wait();
    let start = Instant::now();
    while !children_of(server_agent).is_empty() || !children_of(client_agent).is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "children outlived the driver"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = std::fs::remove_file(tmp("driver.json"));

    // Goodput cells complete; then the first (long) rps cell loses the server's agent.
    let json = tmp("lost.json");
    let run = hosts.bench(
        &token,
        &[
            "-p",
            "tcp+tls,quic",
            "-s",
            "goodput,rps",
            "--sizes",
            "2KB",
            "--runs",
            "3",
            "--requests",
            "5000000",
            "--connections",
            "2",
        ],
        &json,
    );
    // The JSON is written after every cell: wait for both goodput cells, then
    // for the rps cell's server on the server's agent.
    let start = Instant::now();
    let finished = || {
        std::fs::read_to_string(&json)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .map_or(0, |v| v["results"].as_array().map_or(0, Vec::len))
    };
    while finished() < 2 || children_of(server_agent).is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "rps never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    let _ = Command::new("kill")
        .args(["-KILL", &server_agent.to_string()])
        .status();
    let out = run.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let v = read_json(&json);
    assert_eq!(v["complete"], false);
    for proto in ["tcp+tls", "quic"] {
        assert_eq!(cell(&v, "goodput", proto)["status"], "ok");
    }
    let first = cell(&v, "rps", "tcp+tls");
    assert_eq!(first["status"], "error");
    let why = first["error"].as_str().unwrap();
    assert!(why.contains("lost agent 10.79.0.1:7878"), "{why}");
    // The cells after it are recorded as failing to reach the agent.
    let next = cell(&v, "rps", "quic");
    assert!(
        next["error"].as_str().unwrap().contains("10.79.0.1:7878"),
        "{next}"
    );
    // The client's agent stopped its child when the driver closed the session.
    let start = Instant::now();
    while !children_of(client_agent).is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "client left running"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = std::fs::remove_file(&json);
}

/// In a container the agent is often PID 1, which gets no default action for
/// SIGTERM: the agent ends itself on it (exit 143, the shell's 128 + 15),
/// rather than dying of the signal. Needs no root.
#[test]
fn agent_exits_143_on_sigterm() {
    let token = tmp("term-token");
    std::fs::write(&token, "0123456789abcdef0123456789abcdef").unwrap();
    let mut agent = Command::new(env!("CARGO_BIN_EXE_quark"))
        .args(["agent", "--listen", "127.0.0.1:0", "--token-file"])
        .arg(&token)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(agent.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.starts_with("agent listening on "), "{line}");
    let _ = Command::new("kill")
        .args(["-TERM", &agent.id().to_string()])
        .status();
    let start = Instant::now();
    let status = loop {
        if let Some(status) = agent.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > Duration::from_secs(10) {
            let _ = agent.kill();
            panic!("the agent ignored SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let _ = std::fs::remove_file(&token);
    assert_eq!(status.code(), Some(143), "{status:?}");
}
