//! `cargo bench -p quark-proto --bench handshake [-- ecdsa|ed25519 [ROUNDS [N]]]`:
//! the floor of a full handshake (issue #30). One rustls TLS 1.3 handshake
//! driven in memory, no I/O, with the lab's choices: the crypto library in
//! force (ring unless `QUARK_CRYPTO`), AES-128-GCM only, X25519 (the
//! provider's first group), a fresh self-signed certificate that the client
//! trusts as its only root (webpki checks the certificate's own signature,
//! then the CertificateVerify: two verifications), no resumption. Measured
//! twice: as TLS over TCP carries it (records) and as QUIC carries it (the
//! handshake bytes plus QUIC's key derivation: Initial keys from the DCID,
//! then Handshake and 1-RTT packet and header-protection keys). Whatever a
//! protocol adds (packets, sockets, the kernel) comes on top of these.
//!
//! Prints CPU µs per handshake per side (this thread's CPU clock around each
//! side's calls, so time the machine gives other processes is not counted)
//! and the thread's whole CPU time (/proc/thread-self/schedstat, including
//! the clock reads), best and median over ROUNDS rounds of N handshakes.

use std::sync::Arc;
use std::time::Duration;

use nix::time::{ClockId, clock_gettime};

use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use rustls::quic::{self, KeyChange, Keys, Version};
use rustls::{ClientConfig, RootCertStore, ServerConfig};

const ALPN: &[u8] = b"quark-bench";

/// This thread's CPU time so far, in ns (the scheduler's exact runtime).
fn thread_cpu_ns() -> u64 {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    s.split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// The lab's server and client configurations for a `key` certificate.
fn configs(key: &'static rcgen::SignatureAlgorithm) -> (Arc<ServerConfig>, Arc<ClientConfig>) {
    let mut p = quark_proto::crypto::provider::provider();
    p.cipher_suites
        .retain(|s| s.suite() == rustls::CipherSuite::TLS13_AES_128_GCM_SHA256);
    let p = Arc::new(p);
    let pair = rcgen::KeyPair::generate_for(key).expect("key pair");
    let cert = rcgen::CertificateParams::new(vec!["localhost".into()])
        .expect("params")
        .self_signed(&pair)
        .expect("certificate");
    let cert: CertificateDer<'static> = cert.der().clone();
    let der = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(pair.serialize_der()));
    let mut s = ServerConfig::builder_with_provider(p.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("TLS 1.3")
        .with_no_client_auth()
        .with_single_cert(vec![cert.clone()], der)
        .expect("server config");
    s.alpn_protocols = vec![ALPN.to_vec()];
    s.send_tls13_tickets = 0;
    s.session_storage = Arc::new(rustls::server::NoServerSessionStorage {});
    let mut roots = RootCertStore::empty();
    roots.add(cert).expect("root");
    let mut c = ClientConfig::builder_with_provider(p)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("TLS 1.3")
        .with_root_certificates(roots)
        .with_no_client_auth();
    c.alpn_protocols = vec![ALPN.to_vec()];
    c.resumption = rustls::client::Resumption::disabled();
    (Arc::new(s), Arc::new(c))
}

/// Time spent in each side's calls.
#[derive(Default, Clone, Copy)]
struct Sides {
    client: Duration,
    server: Duration,
}

/// This thread's CPU clock.
fn cpu_now() -> Duration {
    let t = clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID).expect("thread CPU clock");
    Duration::new(t.tv_sec() as u64, t.tv_nsec() as u32)
}

fn timed<T>(acc: &mut Duration, f: impl FnOnce() -> T) -> T {
    let t = cpu_now();
    let r = f();
    *acc += cpu_now().saturating_sub(t);
    r
}

/// One TLS-over-TCP handshake: records written into and read from memory.
fn tls_handshake(s_cfg: &Arc<ServerConfig>, c_cfg: &Arc<ClientConfig>, t: &mut Sides) {
    let name = ServerName::try_from("localhost").expect("name");
    let mut c = timed(&mut t.client, || {
        rustls::ClientConnection::new(c_cfg.clone(), name).expect("client")
    });
    let mut s = timed(&mut t.server, || {
        rustls::ServerConnection::new(s_cfg.clone()).expect("server")
    });
    let mut wire = Vec::with_capacity(4096);
    while c.is_handshaking() || s.is_handshaking() || c.wants_write() || s.wants_write() {
        wire.clear();
        timed(&mut t.client, || {
            while c.wants_write() {
                c.write_tls(&mut wire).expect("client write");
            }
        });
        timed(&mut t.server, || {
            let mut r = &wire[..];
            while !r.is_empty() {
                s.read_tls(&mut r).expect("server read");
            }
            s.process_new_packets().expect("server process");
        });
        wire.clear();
        timed(&mut t.server, || {
            while s.wants_write() {
                s.write_tls(&mut wire).expect("server write");
            }
        });
        timed(&mut t.client, || {
            let mut r = &wire[..];
            while !r.is_empty() {
                c.read_tls(&mut r).expect("client read");
            }
            c.process_new_packets().expect("client process");
        });
    }
}

/// Writes all the handshake bytes `conn` has, keeping the keys it hands out
/// (deriving them is part of the cost); returns the chunks, one per level.
fn quic_write(conn: &mut quic::Connection, keys: &mut Vec<Keys>) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let mut buf = Vec::new();
        let change = conn.write_hs(&mut buf);
        let more = change.is_some();
        match change {
            Some(KeyChange::Handshake { keys: k }) => keys.push(k),
            Some(KeyChange::OneRtt { keys: k, next }) => {
                keys.push(k);
                std::hint::black_box(next);
            }
            None => {}
        }
        if !buf.is_empty() {
            out.push(buf);
        }
        if !more {
            return out;
        }
    }
}

/// One handshake as QUIC carries it (RFC 9001 s4, s5): CRYPTO bytes in
/// memory, and the packet keys of each level, Initial ones included.
fn quic_handshake(s_cfg: &Arc<ServerConfig>, c_cfg: &Arc<ClientConfig>, t: &mut Sides) {
    let params = [0u8; 64];
    let dcid = [7u8; 8];
    let suite = s_cfg.crypto_provider().cipher_suites[0]
        .tls13()
        .expect("TLS 1.3");
    let qs = suite.quic.expect("QUIC suite");
    let mut ck = Vec::new();
    let mut sk = Vec::new();
    let mut c: quic::Connection = timed(&mut t.client, || {
        ck.push(Keys::initial(
            Version::V1,
            suite,
            qs,
            &dcid,
            rustls::Side::Client,
        ));
        let name = ServerName::try_from("localhost").expect("name");
        quic::ClientConnection::new(c_cfg.clone(), Version::V1, name, params.to_vec())
            .expect("client")
            .into()
    });
    let mut s: quic::Connection = timed(&mut t.server, || {
        sk.push(Keys::initial(
            Version::V1,
            suite,
            qs,
            &dcid,
            rustls::Side::Server,
        ));
        quic::ServerConnection::new(s_cfg.clone(), Version::V1, params.to_vec())
            .expect("server")
            .into()
    });
    let mut idle = 0;
    while idle < 2 {
        let sent = timed(&mut t.client, || quic_write(&mut c, &mut ck));
        timed(&mut t.server, || {
            for m in &sent {
                s.read_hs(m).expect("server read");
            }
        });
        let back = timed(&mut t.server, || quic_write(&mut s, &mut sk));
        timed(&mut t.client, || {
            for m in &back {
                c.read_hs(m).expect("client read");
            }
        });
        let done = !c.is_handshaking() && !s.is_handshaking();
        idle = if done && sent.is_empty() && back.is_empty() {
            idle + 1
        } else {
            0
        };
    }
    assert!(
        ck.len() >= 3 && sk.len() >= 3,
        "Initial, Handshake and 1-RTT keys"
    );
}

type Handshake = fn(&Arc<ServerConfig>, &Arc<ClientConfig>, &mut Sides);

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let (key, key_name): (&'static rcgen::SignatureAlgorithm, &str) =
        match args.first().map(String::as_str) {
            Some("ed25519") => (&rcgen::PKCS_ED25519, "ed25519"),
            _ => (&rcgen::PKCS_ECDSA_P256_SHA256, "ecdsa-p256"),
        };
    let rounds: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(7);
    let n: u32 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(500);
    let (s_cfg, c_cfg) = configs(key);
    println!(
        "certificate {key_name}, library {}, {rounds} rounds of {n} handshakes",
        quark_proto::crypto::provider::crypto().name()
    );
    println!("carrier   stat     client µs  server µs  both µs  thread CPU µs");
    let cases: [(&str, Handshake); 2] = [("tls/tcp", tls_handshake), ("quic", quic_handshake)];
    for (name, hs) in cases {
        for _ in 0..n / 10 {
            hs(&s_cfg, &c_cfg, &mut Sides::default()); // warm-up
        }
        let mut per: Vec<(f64, f64, f64)> = (0..rounds)
            .map(|_| {
                let mut t = Sides::default();
                let cpu = thread_cpu_ns();
                for _ in 0..n {
                    hs(&s_cfg, &c_cfg, &mut t);
                }
                let cpu = (thread_cpu_ns() - cpu) as f64 / 1e3 / n as f64;
                let us = |d: Duration| d.as_secs_f64() * 1e6 / n as f64;
                (us(t.client), us(t.server), cpu)
            })
            .collect();
        per.sort_by(|a, b| (a.0 + a.1).total_cmp(&(b.0 + b.1)));
        for (stat, r) in [("best", per[0]), ("median", per[per.len() / 2])] {
            println!(
                "{name:<9} {stat:<7} {:>10.1} {:>10.1} {:>8.1} {:>14.1}",
                r.0,
                r.1,
                r.0 + r.1,
                r.2
            );
        }
    }
}
