//! Cross-implementation hq-interop tests: a server of one QUIC stack, clients
//! of another, every downloaded file compared by SHA-256 with the original.
//!
//! Peers: quinn (`quinn-hq`, built with these tests), aioquic (`.venv`) and
//! quic-go (`target/interop/quicgo-hq`), both installed by `interop/setup.sh`,
//! and quark (`cargo build -p quark-cli`, or `QUARK_BIN`). A missing peer
//! fails its tests, unless `QUARK_INTEROP_OPTIONAL=1`, which skips them.
//!
//! Each case runs every file set (1 KiB, 1 MiB, 50 MiB, 100 small files, each
//! on one connection), a missing file and a path traversal (both must fail),
//! plus the cipher-suite runs listed with it. The `_over_af_xdp` cases put the
//! server and the client in two network namespaces joined by veth, quark's end
//! on AF_XDP (root only; skipped otherwise).

use std::path::PathBuf;
use std::sync::OnceLock;

use quark_interop::harness::corpus::{Corpus, FileSet};
use quark_interop::harness::env::Env;
use quark_interop::harness::peers::{AIOQUIC, QUARK, QUIC_GO, QUINN};
use quark_interop::harness::{Case, Outcome, Run, run_case};
use quark_interop::quinn_hq::tls::Cipher::{self, Aes128, Aes256, Chacha20};

fn work() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("quark-interop")
}

fn env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| Env::new(env!("CARGO_BIN_EXE_quinn-hq")))
}

/// The served files, made once per run of this test binary (and reused
/// from `target/tmp` when an earlier run made them).
fn corpus() -> &'static Corpus {
    static CORPUS: OnceLock<Corpus> = OnceLock::new();
    CORPUS.get_or_init(|| {
        Corpus::create(&work().join("corpus")).expect("cannot create the test files")
    })
}

fn check(case: Case) {
    match run_case(env(), corpus(), &work(), &case) {
        Ok(Outcome::Passed) => {}
        Ok(Outcome::Skipped(why)) => println!("SKIP: {why}"),
        Err(e) => panic!("{e:#}"),
    }
}

/// A 1 MiB run offering only `cipher`.
fn mib(cipher: Cipher) -> Run {
    Run::files_with(FileSet::Medium, cipher)
}

// --- third-party pairs: must pass today -------------------------------------

#[test]
fn quinn_client_quinn_server() {
    check(
        Case::new(&QUINN, &QUINN)
            .run(mib(Aes128))
            .run(mib(Aes256))
            .run(mib(Chacha20)),
    );
}

#[test]
fn quinn_client_quinn_server_retry() {
    check(
        Case::new(&QUINN, &QUINN)
            .retry()
            .runs(vec![Run::files(FileSet::Small), Run::files(FileSet::Many)]),
    );
}

#[test]
fn aioquic_client_quinn_server() {
    check(Case::new(&AIOQUIC, &QUINN).run(mib(Chacha20)));
}

#[test]
fn aioquic_client_quinn_server_aes256_only() {
    check(
        Case::new(&AIOQUIC, &QUINN)
            .server_cipher(Aes256)
            .runs(vec![Run::files(FileSet::Medium), Run::refused(Aes128)]),
    );
}

#[test]
fn quicgo_client_quinn_server() {
    check(Case::new(&QUIC_GO, &QUINN).run(mib(Aes256)));
}

#[test]
fn quinn_client_quicgo_server() {
    check(Case::new(&QUINN, &QUIC_GO).run(mib(Chacha20)));
}

#[test]
fn quinn_client_quicgo_server_chacha20_only() {
    check(
        Case::new(&QUINN, &QUIC_GO)
            .server_cipher(Chacha20)
            .runs(vec![Run::files(FileSet::Medium), Run::refused(Aes256)]),
    );
}

#[test]
fn quicgo_client_quinn_server_aes128_only() {
    check(
        Case::new(&QUIC_GO, &QUINN)
            .server_cipher(Aes128)
            .runs(vec![Run::files(FileSet::Small), Run::refused(Chacha20)]),
    );
}

#[test]
fn quinn_client_aioquic_server_chacha20_only() {
    check(
        Case::new(&QUINN, &AIOQUIC)
            .server_cipher(Chacha20)
            .runs(vec![Run::files(FileSet::Small), Run::refused(Aes128)]),
    );
}

#[test]
fn quinn_client_quinn_server_aes256_only() {
    check(
        Case::new(&QUINN, &QUINN)
            .server_cipher(Aes256)
            .runs(vec![Run::files(FileSet::Small), Run::refused(Chacha20)]),
    );
}

#[test]
fn quinn_client_aioquic_server() {
    check(Case::new(&QUINN, &AIOQUIC).run(mib(Aes256)));
}

#[test]
fn quicgo_client_aioquic_server() {
    check(Case::new(&QUIC_GO, &AIOQUIC).run(mib(Aes128)));
}

// --- pairs with quark: the lead removes the ignores --------------------------

#[test]

fn quark_client_quinn_server() {
    check(
        Case::new(&QUARK, &QUINN)
            .run(mib(Aes128))
            .run(mib(Aes256))
            .run(mib(Chacha20)),
    );
}

#[test]

fn quinn_client_quark_server() {
    check(
        Case::new(&QUINN, &QUARK)
            .run(mib(Aes128))
            .run(mib(Aes256))
            .run(mib(Chacha20)),
    );
}

#[test]

fn quinn_client_quark_server_chacha20_only() {
    check(
        Case::new(&QUINN, &QUARK)
            .server_cipher(Chacha20)
            .runs(vec![Run::files(FileSet::Medium), Run::refused(Aes128)]),
    );
}

#[test]

fn quark_client_quinn_server_aes256_only() {
    check(
        Case::new(&QUARK, &QUINN)
            .server_cipher(Aes256)
            .runs(vec![Run::files(FileSet::Small), Run::refused(Chacha20)]),
    );
}

#[test]

fn quinn_client_quark_server_retry() {
    check(
        Case::new(&QUINN, &QUARK)
            .retry()
            .runs(vec![Run::files(FileSet::Small), Run::files(FileSet::Many)]),
    );
}

#[test]

fn aioquic_client_quark_server() {
    check(Case::new(&AIOQUIC, &QUARK).run(mib(Chacha20)));
}

#[test]

fn quark_client_aioquic_server() {
    check(Case::new(&QUARK, &AIOQUIC).run(mib(Aes256)));
}

#[test]

fn quark_client_quicgo_server() {
    check(Case::new(&QUARK, &QUIC_GO).run(mib(Aes256)));
}

#[test]

fn quicgo_client_quark_server() {
    check(Case::new(&QUIC_GO, &QUARK).run(mib(Chacha20)));
}

#[test]

fn quark_client_quicgo_server_v2() {
    check(Case::new(&QUARK, &QUIC_GO).quic_v2().run(mib(Aes128)));
}

#[test]

fn quicgo_client_quark_server_v2() {
    check(Case::new(&QUIC_GO, &QUARK).quic_v2().run(mib(Chacha20)));
}

#[test]

fn quark_client_quark_server_v2() {
    check(Case::new(&QUARK, &QUARK).quic_v2().retry().run(mib(Aes256)));
}

#[test]

fn quark_client_quark_server() {
    check(
        Case::new(&QUARK, &QUARK)
            .run(mib(Aes128))
            .run(mib(Aes256))
            .run(mib(Chacha20)),
    );
}

#[test]

fn quark_client_quark_server_retry() {
    check(
        Case::new(&QUARK, &QUARK)
            .retry()
            .runs(vec![Run::files(FileSet::Small), Run::files(FileSet::Many)]),
    );
}

// --- the same pairs across two namespaces, quark on AF_XDP (root only) ---------

#[test]
fn quinn_client_quark_server_over_af_xdp() {
    check(Case::new(&QUINN, &QUARK).over_af_xdp().run(mib(Aes256)));
}

#[test]
fn quark_client_quinn_server_over_af_xdp() {
    check(Case::new(&QUARK, &QUINN).over_af_xdp().run(mib(Chacha20)));
}

#[test]
fn aioquic_client_quark_server_over_af_xdp() {
    check(Case::new(&AIOQUIC, &QUARK).over_af_xdp());
}

#[test]
fn quark_client_quicgo_server_over_af_xdp() {
    check(Case::new(&QUARK, &QUIC_GO).over_af_xdp());
}

#[test]
fn quicgo_client_quark_server_over_af_xdp() {
    check(Case::new(&QUIC_GO, &QUARK).over_af_xdp());
}

#[test]
fn quark_client_quark_server_over_af_xdp() {
    check(
        Case::new(&QUARK, &QUARK)
            .over_af_xdp()
            .retry()
            .runs(vec![Run::files(FileSet::Medium), Run::files(FileSet::Many)]),
    );
}

#[test]
fn quinn_client_quark_server_chacha20_only_over_af_xdp() {
    check(
        Case::new(&QUINN, &QUARK)
            .over_af_xdp()
            .server_cipher(Chacha20)
            .runs(vec![Run::files(FileSet::Medium), Run::refused(Aes128)]),
    );
}

#[test]
fn quark_client_quinn_server_aes256_only_over_af_xdp() {
    check(
        Case::new(&QUARK, &QUINN)
            .over_af_xdp()
            .server_cipher(Aes256)
            .runs(vec![Run::files(FileSet::Small), Run::refused(Chacha20)]),
    );
}
