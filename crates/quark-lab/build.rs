//! Records the compiler version and the versions of the measured stacks from
//! the workspace's Cargo.lock (and quic-go's from `lab/quic-go/go.mod`), for
//! the results files.

use std::path::Path;

const DEPS: &[&str] = &[
    "quinn",
    "quinn-proto",
    "s2n-quic",
    "h3",
    "rustls",
    "ring",
    "tokio",
    "tokio-rustls",
    "hyper",
    "h2",
    "quark",
];

fn main() {
    let lock = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.lock");
    println!("cargo:rerun-if-changed={}", lock.display());
    let text = std::fs::read_to_string(&lock).unwrap_or_default();
    let mut found = Vec::new();
    let mut name = None;
    for line in text.lines() {
        if let Some(n) = line.strip_prefix("name = ") {
            name = Some(n.trim_matches('"').to_string());
        } else if let (Some(v), Some(n)) = (line.strip_prefix("version = "), name.take())
            && DEPS.contains(&n.as_str())
        {
            found.push(format!("{n}={}", v.trim_matches('"')));
        }
    }
    // quic-go runs in a Go program of its own (`quic-go` in the lab).
    let gomod = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../lab/quic-go/go.mod");
    println!("cargo:rerun-if-changed={}", gomod.display());
    let gomod = std::fs::read_to_string(&gomod).unwrap_or_default();
    if let Some(v) = gomod.lines().find_map(|l| {
        l.trim()
            .strip_prefix("github.com/quic-go/quic-go v")
            .and_then(|v| v.split_whitespace().next())
    }) {
        found.push(format!("quic-go={v}"));
    }
    println!("cargo:rustc-env=QUARK_LAB_DEPS={}", found.join(";"));
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = std::process::Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=QUARK_LAB_RUSTC={version}");
}
