//! `quark serve` and `quark get` over AF_XDP, through `quark xdp transfer`: two
//! network namespaces joined by veth, the file served in one and fetched in the
//! other, compared byte for byte by the command, the bed removed afterwards.
//! Needs root (namespaces, veth, AF_XDP); skipped otherwise.

mod common;

use std::path::Path;
use std::process::Command;

use common::stderr;

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"))
}

/// Runs one transfer on a bed named after this process and `tag`; returns stdout.
fn transfer(tag: &str, extra: &[&str]) -> String {
    let name = format!("qx{tag}{}", std::process::id() % 100_000);
    let out = Command::new(env!("CARGO_BIN_EXE_quark"))
        .args(["xdp", "transfer", "--name", &name, "--mib", "8"])
        .args(extra)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    for side in ["a", "b"] {
        let netns = Path::new("/run/netns").join(format!("{name}-{side}"));
        assert!(!netns.exists(), "{} left behind", netns.display());
    }
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn serve_and_get_both_on_af_xdp() {
    if !is_root() {
        eprintln!("skipped: not root");
        return;
    }
    let out = transfer("x", &[]);
    assert!(out.contains("8 MiB in"), "{out}");
    assert!(out.contains("identical; server AF_XDP"), "{out}");
    assert!(out.contains("client AF_XDP"), "{out}");
}

#[test]
fn worker_group_server_on_af_xdp() {
    if !is_root() {
        eprintln!("skipped: not root");
        return;
    }
    // Two workers, each with the AF_XDP socket of one queue of a two-queue veth;
    // the server would fail to start if a worker's queue were missing.
    let out = transfer("w", &["--workers", "2"]);
    assert!(
        out.contains("identical; server AF_XDP (veth-a) with 2 worker(s), client AF_XDP"),
        "{out}"
    );
}

#[test]
fn af_xdp_server_and_kernel_udp_client() {
    if !is_root() {
        eprintln!("skipped: not root");
        return;
    }
    let out = transfer("u", &["--udp-client"]);
    assert!(
        out.contains("identical; server AF_XDP") && out.contains("client UDP"),
        "{out}"
    );
}
