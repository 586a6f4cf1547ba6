//! The local interop matrix in its CI form (`interop/run --quick`: a few of
//! the interop runner's cases between quark and quinn, and quark and
//! quic-go, both ways; the wire-checked cases only quark plays, quark ->
//! quark) and the runner endpoint script `run_endpoint.sh` played outside a
//! container.
//!
//! Needs python3 and openssl, quark (`cargo build -p quark-cli` or
//! `QUARK_BIN`) and quic-go (`bash interop/setup.sh`). A missing peer fails
//! the test, unless `QUARK_INTEROP_OPTIONAL=1`, which skips it (prints SKIP).

use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use quark_interop::harness::certs::Certs;
use quark_interop::harness::env::{Env, optional};

fn env() -> Env {
    Env::new(env!("CARGO_BIN_EXE_quinn-hq"))
}

/// The programs the quick form runs, or why one is missing.
fn programs(env: &Env, quicgo: bool) -> Result<(PathBuf, Option<PathBuf>), String> {
    let quark = env.quark().map_err(|e| e.to_string())?;
    let quicgo = if quicgo {
        Some(env.quicgo().map_err(|e| e.to_string())?)
    } else {
        None
    };
    for tool in ["python3", "openssl"] {
        let found = Command::new(tool)
            .arg(if tool == "python3" {
                "--version"
            } else {
                "version"
            })
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !found {
            return Err(format!("{tool} not found"));
        }
    }
    Ok((quark, quicgo))
}

/// Missing peers fail the test unless `QUARK_INTEROP_OPTIONAL=1`.
fn skip_or_fail(why: &str) {
    if optional() {
        println!("SKIP: {why}");
    } else {
        panic!("{why} (QUARK_INTEROP_OPTIONAL=1 skips)");
    }
}

#[test]
fn quick_matrix_passes() {
    let env = env();
    let (quark, quicgo) = match programs(&env, true) {
        Ok(p) => p,
        Err(why) => return skip_or_fail(&why),
    };
    let work = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("interop-run-quick");
    let out = Command::new("python3")
        .arg(env.repo.join("interop/run"))
        .arg("--quick")
        .arg("--work")
        .arg(&work)
        .env("QUARK_BIN", &quark)
        .env("QUINN_HQ_BIN", &env.quinn_hq)
        .env("QUICGO_HQ_BIN", quicgo.expect("checked"))
        .output()
        .expect("cannot run interop/run");
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "interop/run --quick failed: {stdout}");
    // Every cell of the quick form is played: a `-` would hide a lost peer.
    let table: Vec<&str> = stdout.lines().filter(|l| l.contains(" -> ")).collect();
    assert_eq!(table.len(), 12 * 4, "cells: {table:?}");
    for line in table {
        assert!(line.contains(" ok "), "not passed: {line}");
    }
}

/// The wire-checked cases that, of the peers here, only quark plays both
/// ways (ECN marks and ACK-ECN, v2 by compatible version negotiation, the
/// client moving to the preferred address), quark -> quark.
#[test]
fn quark_only_cases_pass() {
    let env = env();
    let (quark, _) = match programs(&env, false) {
        Ok(p) => p,
        Err(why) => return skip_or_fail(&why),
    };
    let work = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("interop-run-quark");
    let out = Command::new("python3")
        .arg(env.repo.join("interop/run"))
        .args([
            "--cases",
            "ecn,v2,connectionmigration",
            "--pairs",
            "quark:quark",
        ])
        .arg("--work")
        .arg(&work)
        .env("QUARK_BIN", &quark)
        .output()
        .expect("cannot run interop/run");
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    assert!(out.status.success(), "interop/run failed: {stdout}");
    let table: Vec<&str> = stdout.lines().filter(|l| l.contains(" -> ")).collect();
    assert_eq!(table.len(), 3, "cells: {table:?}");
    for line in table {
        assert!(line.contains(" ok "), "not passed: {line}");
    }
}

/// Paths of one endpoint-script run.
struct Endpoint<'a> {
    quark: &'a Path,
    certs: &'a Path,
    www: &'a Path,
    downloads: &'a Path,
    port: u16,
}

impl Endpoint<'_> {
    fn command(&self, role: &str, testcase: &str) -> Command {
        let mut cmd = Command::new("bash");
        cmd.arg(env().repo.join("interop/runner/run_endpoint.sh"))
            .env("ROLE", role)
            .env("TESTCASE", testcase)
            .env("QUARK", self.quark)
            .env("CERTS", self.certs)
            .env("WWW", self.www)
            .env("DOWNLOADS", self.downloads)
            .env("PORT", self.port.to_string())
            .env("LISTEN_HOST", "127.0.0.1")
            .stdout(Stdio::null());
        cmd
    }
}

fn free_port() -> u16 {
    let s = UdpSocket::bind("127.0.0.1:0").expect("bind");
    s.local_addr().expect("local address").port()
}

#[test]
fn endpoint_script_plays_a_case_and_refuses_unknown_ones() {
    let env = env();
    let quark = match env.quark() {
        Ok(q) => q,
        Err(why) => return skip_or_fail(&why.to_string()),
    };
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("run-endpoint");
    let _ = std::fs::remove_dir_all(&dir);
    let (certs, www, downloads) = (dir.join("certs"), dir.join("www"), dir.join("downloads"));
    for d in [&certs, &www, &downloads] {
        std::fs::create_dir_all(d).expect("mkdir");
    }
    let made = Certs::generate(&certs).expect("certificate");
    std::fs::rename(&made.key, certs.join("priv.key")).expect("rename key");
    let files: Vec<(String, Vec<u8>)> = [1000usize, 200_000]
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            let data = (0..n).map(|j| (j * 31 + i * 7 + j / 253) as u8).collect();
            (format!("f{i}"), data)
        })
        .collect();
    for (name, data) in &files {
        std::fs::write(www.join(name), data).expect("write");
    }
    let ep = Endpoint {
        quark: &quark,
        certs: &certs,
        www: &www,
        downloads: &downloads,
        port: free_port(),
    };

    for case in ["retry", "multiconnect", "resumption", "zerortt"] {
        let _ = std::fs::remove_dir_all(&downloads);
        let mut server = ep.command("server", case).spawn().expect("server");
        std::thread::sleep(Duration::from_millis(500));
        let urls: Vec<String> = files
            .iter()
            .map(|(n, _)| format!("https://localhost:{}/{n}", ep.port))
            .collect();
        let mut client = ep
            .command("client", case)
            .env("REQUESTS", urls.join(" "))
            .spawn()
            .expect("client");
        let end = Instant::now() + Duration::from_secs(60);
        let status = loop {
            if let Some(s) = client.try_wait().expect("wait") {
                break Some(s);
            }
            if Instant::now() > end {
                let _ = client.kill();
                break None;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let _ = server.kill();
        let _ = server.wait();
        assert!(
            status.is_some_and(|s| s.success()),
            "{case}: client {status:?}"
        );
        for (name, data) in &files {
            let got = std::fs::read(downloads.join(name)).expect("downloaded");
            assert!(got == *data, "{case}: {name} differs");
        }
    }

    // The runner's convention for a case an endpoint does not play.
    for role in ["server", "client"] {
        let status = ep
            .command(role, "no-such-case")
            .env("REQUESTS", "https://localhost:1/x")
            .stderr(Stdio::null())
            .status()
            .expect("run");
        assert_eq!(status.code(), Some(127), "{role}");
    }
}
