//! Shared by the tests: building and running the C examples, and (module
//! `calls`) the C API's set-up and calls from Rust.

#![allow(dead_code)]

pub(crate) mod calls;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

/// Whether this process may make mount namespaces (root and `unshare`).
pub(crate) fn mount_namespaces() -> bool {
    let ok = Command::new("unshare").args(["-m", "true"]).status();
    ok.is_ok_and(|s| s.success())
}

pub(crate) fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub(crate) fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("quark-ffi-c-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `target/debug`: the test runs from its `deps` directory.
pub(crate) fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().and_then(Path::parent).unwrap().to_path_buf()
}

/// Whether the run that started these tests already built all they use:
/// `scripts/test.sh` sets `QUARK_TEST_PREBUILT` after `cargo test
/// --workspace --no-run`, whose features a `cargo build -p` here would not
/// share (CI rebuilt the tree three times over, ~3 minutes on 2 cores).
pub(crate) fn prebuilt() -> bool {
    std::env::var_os("QUARK_TEST_PREBUILT").is_some()
}

/// Where `libquark_ffi.a` and `.so` are: `target/debug` after the `cargo
/// build` of [`examples`], or, prebuilt, beside the test (cargo's test
/// builds leave them in `deps`).
pub(crate) fn lib_dir() -> PathBuf {
    if prebuilt() {
        target_dir().join("deps")
    } else {
        target_dir()
    }
}

/// Build the static library (the test harness builds only the rlib) and the
/// C examples, once; returns the directory holding the programs.
pub(crate) fn examples() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        // `--tests` keeps the features of `cargo test -p quark-ffi`.
        cargo_build(&["-p", "quark-ffi", "--lib", "--tests"]);
        make_examples("bin", &[])
    })
}

/// Wait for `child`, failing the test rather than hanging on it.
pub(crate) fn wait(child: &mut std::process::Child, limit: Duration) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("C example did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `cargo build ARGS` in the workspace, with the test's own environment
/// (CARGO_PKG_*, ...) removed: build scripts that watch it would rerun and
/// rebuild the whole tree.
/// Nothing to do when [`prebuilt`].
pub(crate) fn cargo_build(args: &[&str]) {
    if prebuilt() {
        return;
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut build = Command::new(cargo);
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        if (key.starts_with("CARGO_") && key != "CARGO_HOME" && key != "CARGO_TARGET_DIR")
            || key.contains("MAKEFLAGS")
            || key == "LD_LIBRARY_PATH"
        {
            build.env_remove(&*key);
        }
    }
    let status = build
        .arg("build")
        .args(args)
        .current_dir(workspace())
        .status()
        .unwrap();
    assert!(status.success(), "cargo build {args:?} failed");
}

/// `make -C examples/c` into a scratch directory `name`, with extra make
/// variables (`CFLAGS=...`); returns the directory holding the programs.
pub(crate) fn make_examples(name: &str, vars: &[&str]) -> PathBuf {
    let out = scratch(name);
    let status = Command::new("make")
        .arg("-B")
        .arg("-C")
        .arg(workspace().join("examples/c"))
        .arg(format!("OUT={}", out.display()))
        .arg(format!("TARGET_DIR={}", lib_dir().display()))
        .args(vars)
        .status()
        .unwrap();
    assert!(status.success(), "make -C examples/c {vars:?} failed");
    out
}

pub(crate) fn digest_of(path: &Path) -> String {
    hex::encode(Sha256::digest(std::fs::read(path).unwrap()))
}
