//! quark's performance lab: the iperf/h2load of QUIC.
//!
//! `quark bench` runs the experiments of the papers (see [`scenario`]) against
//! every protocol adapter (see [`adapter`]): each (scenario, protocol) cell runs
//! in its own server and client process (see [`child`]), driven by the
//! orchestrator ([`bench`](mod@bench)), which merges both sides' CPU and memory use with
//! the client's latency samples into results ([`results`]), a table
//! ([`table`]) and an HTML report ([`html`]). Either side may run on another
//! host, started and relayed by that host's `quark agent` ([`agent`]).
//!
//! # The application protocol
//!
//! Every stream protocol carries the same requests; nothing touches the disk
//! on either side.
//!
//! * **QUIC (hq-interop, ALPN `hq-interop`)**: the client opens a bidirectional
//!   stream and sends `GET /<n>\r\n`, optionally followed by a request body,
//!   then FIN. The server reads to FIN, answers exactly `n` bytes, then FIN.
//!   This is the HTTP/0.9 of the QUIC interop runner, with the path naming a
//!   byte count instead of a file.
//! * **TCP and TCP+TLS**: `GET /<n> <body_len>\r\n` then `body_len` bytes of
//!   body. The response is exactly `n` bytes, unframed. Requests follow each
//!   other on one connection and may be pipelined; responses come in order.
//!   (A 0-byte response is therefore invisible: the lab never asks for one,
//!   sizes start at 1 byte.)
//! * **HTTP/1.1 and HTTP/2 (hyper)**: `GET /<n>` (or `POST /<n>` with a body)
//!   returns `n` bytes with status 200.
//! * **UDP**: datagrams `QLAB` + 8-byte sequence number + payload; the server
//!   only counts.
//!
//! Payloads (responses, request bodies, datagram payloads) are a generated
//! pattern: byte `i` of a payload is `i mod 251`. Servers verify request
//! bodies and clients verify every response byte against the pattern and the
//! exact length, so lost, duplicated, reordered or extra data fails the
//! request instead of passing silently.
//!
//! # Measurements
//!
//! * Latency percentiles are exact, by nearest rank over all recorded samples
//!   ([`metrics::nearest_rank`]).
//! * CPU is getrusage user + system time of each process over the measured
//!   interval only: warm-up and connection setup of long-lived connections
//!   happen before the server's `start` and the client's `go`.
//! * Peak RSS is the kernel's high-water mark reset at the interval start;
//!   memory per connection is (peak RSS − RSS before connecting) / connections.

pub mod adapter;
pub mod agent;
pub mod bench;
pub mod child;
pub mod experiment;
pub mod html;
pub mod metrics;
pub mod results;
pub mod scale;
pub mod scenario;
pub mod size;
pub mod table;
pub mod wire;
pub mod workload;

use std::collections::BTreeMap;

/// Versions recorded in every result: this crate, the compiler, how the
/// binary was built, and the stacks and libraries under test (taken from
/// Cargo.lock at build time).
pub fn versions() -> BTreeMap<String, String> {
    let mut v = BTreeMap::new();
    v.insert("quark-lab".into(), env!("CARGO_PKG_VERSION").into());
    v.insert("build".into(), build());
    v.insert("rustc".into(), env!("QUARK_LAB_RUSTC").into());
    for entry in env!("QUARK_LAB_DEPS").split(';').filter(|e| !e.is_empty()) {
        if let Some((name, version)) = entry.split_once('=') {
            v.insert(name.into(), version.into());
        }
    }
    v
}

/// `release` or `debug`, and how profile-guided optimisation was applied
/// (`scripts/pgo.sh` sets `QUARK_PGO` for its builds): every stack in the
/// binary gets the same treatment, but figures from a PGO build only compare
/// with figures from a PGO build.
fn build() -> String {
    match option_env!("QUARK_PGO") {
        Some(pgo) => format!("{}, pgo {pgo}", profile()),
        None => profile().into(),
    }
}

/// The cargo profile this crate was built with, as far as it can tell.
fn profile() -> &'static str {
    if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn results_record_the_build_and_the_stacks() {
        let v = super::versions();
        let build = &v["build"];
        // Tests build with debug assertions unless asked otherwise.
        assert!(build.starts_with(super::profile()), "{build}");
        assert_eq!(build.contains("pgo"), option_env!("QUARK_PGO").is_some());
        for stack in ["quinn", "rustls", "tokio", "rustc"] {
            assert!(v.contains_key(stack), "no {stack} in {v:?}");
        }
    }
}
