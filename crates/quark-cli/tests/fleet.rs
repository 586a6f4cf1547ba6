//! `quark serve --processes 3`: three server processes on one port, steered
//! by connection ID. A download through `quark relay --rebind`
//! (the client's port changes every 250 ms, so the kernel's 4-tuple hash
//! would hand its datagrams to a random process) completes, checked by
//! SHA-256. Also the key file options' errors.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::{sha, stderr, tempdir};

const QUARK: &str = env!("CARGO_BIN_EXE_quark");

/// Stops a process we started (SIGTERM by pid, then SIGKILL) on drop.
struct Stop(Child);

impl Stop {
    fn term(&mut self) {
        if matches!(self.0.try_wait(), Ok(Some(_))) {
            return;
        }
        let _ = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status();
        for _ in 0..50 {
            if matches!(self.0.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Stop {
    fn drop(&mut self) {
        self.term();
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Wraps `child` (spawned with stderr piped) so it is stopped on drop, and
/// hands its stderr over line by line.
fn stderr_lines(mut child: Child) -> (Stop, mpsc::Receiver<String>) {
    let (tx, lines) = mpsc::channel();
    let err = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    (Stop(child), lines)
}

#[test]
fn download_survives_nat_rebinding_across_three_processes() {
    let dir = tempdir("quark-fleet", "rebind");
    let root = dir.join("root");
    std::fs::create_dir(&root).unwrap();
    let body: Vec<u8> = (0..8_000_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(root.join("big.bin"), &body).unwrap();
    let cert = dir.join("cert.pem");

    let serve = Command::new(QUARK)
        .args([
            "serve",
            "--processes",
            "3",
            "--listen",
            "127.0.0.1:0",
            "--root",
        ])
        .arg(&root)
        .arg("--write-cert")
        .arg(&cert)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The launcher's line and each process's "serving" line, in any order.
    let (serve, lines) = stderr_lines(serve);
    let (mut addr, mut ids) = (None, Vec::new());
    while addr.is_none() || ids.len() < 3 {
        let line = lines
            .recv_timeout(Duration::from_secs(60))
            .expect("the fleet did not start");
        if let Some(rest) = line.strip_prefix("fleet of 3 processes on ") {
            assert!(rest.contains("steered by connection ID"), "{line}");
            addr = rest.split(',').next().map(str::to_owned);
        } else if line.starts_with("serving ") {
            ids.push(line.split("QUIC-LB server ID ").nth(1).expect(&line)[..2].to_string());
        }
    }
    let addr = addr.unwrap();
    ids.sort();
    assert_eq!(ids, ["00", "01", "02"]);

    // 100 Mbit/s with 2 ms each way: the download takes about a second, and
    // the client's port changes every 250 ms meanwhile (a NAT rebinding).
    let mut relay = Command::new(QUARK)
        .args(["relay", "--listen", "127.0.0.1:0", "--to", &addr])
        .args(["--rebind", "200ms/250ms"])
        .args(["--rate", "100mbit", "--delay", "2ms"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(relay.stdout.take().unwrap());
    let relay_err = relay.stderr.take().unwrap();
    let mut relay = Stop(relay);
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let relay_addr = line
        .trim()
        .strip_prefix("listening ")
        .expect(&line)
        .to_string();

    let got = dir.join("got");
    std::fs::create_dir(&got).unwrap();
    let result = Command::new(QUARK)
        .args(["get", &format!("https://{relay_addr}/big.bin"), "--quiet"])
        .arg("--ca")
        .arg(&cert)
        .arg("-o")
        .arg(&got)
        .output()
        .unwrap();
    assert!(result.status.success(), "{}", stderr(&result));
    let fetched = std::fs::read(got.join("big.bin")).unwrap();
    assert_eq!(sha(&fetched), sha(&body), "download differs");

    // The relay's report: the client used several addresses mid-transfer.
    relay.term();
    let report = BufReader::new(relay_err)
        .lines()
        .map_while(Result::ok)
        .find_map(|l| l.strip_prefix("relay-report ").map(str::to_owned))
        .expect("no relay-report line");
    let r: serde_json::Value = serde_json::from_str(&report).unwrap();
    let used = r["paths"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["to_server"].as_u64().unwrap() > 0)
        .count();
    assert!(used >= 3, "the client rebound only {used} times: {r}");
    eprintln!("fleet rebinding: 3 processes, 8 MB, {used} client addresses, hash OK");
    drop(serve);
}

#[test]
fn key_file_errors_are_clear() {
    let dir = tempdir("quark-fleet", "keys");
    let keys = write_key_file(&dir);
    let text = std::fs::read_to_string(&keys).unwrap();
    assert_eq!(text.lines().filter(|l| !l.starts_with('#')).count(), 3);
    std::fs::write(&keys, text.replace("ticket 1", "ticket x")).unwrap();
    let bad = Command::new(QUARK)
        .args(["serve", "--listen", "127.0.0.1:0", "--root"])
        .arg(&*dir)
        .arg("--key-file")
        .arg(&keys)
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(
        stderr(&bad).contains("the ID is not a number"),
        "{}",
        stderr(&bad)
    );
    let lb = Command::new(QUARK)
        .args(["serve", "--listen", "127.0.0.1:0", "--root"])
        .arg(&*dir)
        .args(["--quic-lb-server-id", "01", "--quic-lb-nonce-len", "2"])
        .output()
        .unwrap();
    assert!(!lb.status.success());
    assert!(stderr(&lb).contains("nonce length"), "{}", stderr(&lb));
}

#[test]
fn sighup_reloads_rotated_keys() {
    let dir = tempdir("quark-fleet", "hup");
    let keys = write_key_file(&dir);
    let serve = Command::new(QUARK)
        .args(["serve", "--listen", "127.0.0.1:0", "--root"])
        .arg(&*dir)
        .arg("--key-file")
        .arg(&keys)
        .args(["--quic-lb-server-id", "0a01"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (serve, lines) = stderr_lines(serve);
    let next = |prefix: &str| loop {
        let line = lines
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("no line starting with {prefix:?}"));
        if line.starts_with(prefix) {
            return line;
        }
    };
    let serving = next("serving ");
    assert!(serving.contains("QUIC-LB server ID 0a01"), "{serving}");
    assert!(serving.contains("token: [1]"), "{serving}");
    // Rotate: a new current token key 2, key 1 still accepted.
    let text = std::fs::read_to_string(&keys).unwrap();
    let rotated = format!("token 2 {}\n{text}", "ab".repeat(32));
    std::fs::write(&keys, rotated).unwrap();
    Command::new("kill")
        .args(["-HUP", &serve.0.id().to_string()])
        .status()
        .unwrap();
    let reloaded = next("reloaded keys");
    assert!(reloaded.contains("token: [2, 1]"), "{reloaded}");
    // Keys never appear in the output, only their IDs.
    assert!(!reloaded.contains("abab"), "{reloaded}");
}

/// `quark serve --write-key-file` into `dir`: a fresh fleet key file.
fn write_key_file(dir: &std::path::Path) -> std::path::PathBuf {
    let keys = dir.join("fleet.keys");
    let made = Command::new(QUARK)
        .args(["serve", "--root"])
        .arg(dir)
        .arg("--write-key-file")
        .arg(&keys)
        .output()
        .unwrap();
    assert!(made.status.success(), "{}", stderr(&made));
    keys
}
