//! `cargo bench -p quark-proto --bench aead --features aws-lc-rs`: packet
//! protection per packet size with each crypto library (issue #30): AEAD seal
//! and open of one packet's payload, and header protection, through rustls'
//! QUIC packet keys as the connection uses them. Prints CPU ns per packet
//! and GB/s of payload, the best of a few runs. Without the feature: ring only.

use std::hint::black_box;

use nix::time::{ClockId, clock_gettime};

use quark_proto::crypto::provider::Crypto;
use rustls::quic::{Keys, Version};

// 1 452: a 1 500-byte path; 16 384 and 64 000: quark's packets on loopback (DPLPMTUD
// up to max_udp_payload_size 65 000), where the cost per byte is what counts.
const SIZES: [usize; 7] = [64, 256, 1200, 1452, 8952, 16384, 64000];
const RUNS: usize = 5;

/// AES-128-GCM keys of `side` from `c` (Initial keys: the same AEAD and
/// header protection as 1-RTT keys of that suite).
fn keys(c: Crypto, side: rustls::Side) -> Keys {
    let p = c.provider();
    let suite = p.cipher_suites[0].tls13().expect("TLS 1.3");
    let quic = suite.quic.expect("QUIC support");
    Keys::initial(Version::V1, suite, quic, &[1, 2, 3, 4, 5, 6, 7, 8], side)
}

/// This thread's CPU time in ns: on a machine shared with other work, time
/// the scheduler gives to other processes is not counted.
fn cpu_ns() -> f64 {
    let t = clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID).expect("thread CPU clock");
    t.tv_sec() as f64 * 1e9 + t.tv_nsec() as f64
}

/// Best CPU ns per packet over `RUNS` runs of `n` calls of `f(i)`.
fn best(n: u64, mut f: impl FnMut(u64)) -> f64 {
    let mut best = f64::MAX;
    for _ in 0..RUNS {
        let t = cpu_ns();
        for i in 0..n {
            f(i);
        }
        best = best.min((cpu_ns() - t) / n as f64);
    }
    best
}

fn main() {
    let header = [0x40u8, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0];
    println!("library     size   seal ns  open ns  hp ns  seal GB/s  open GB/s");
    for c in [Crypto::Ring, Crypto::AwsLc] {
        if !c.available() {
            println!("{:<10}  (not compiled in: --features aws-lc-rs)", c.name());
            continue;
        }
        let k = keys(c, rustls::Side::Client);
        // The server's remote key opens what the client's local key sealed.
        let opener = keys(c, rustls::Side::Server).remote.packet;
        for size in SIZES {
            let n = (200_000_000 / size as u64).clamp(3_000, 500_000);
            let mut buf = vec![0x5au8; size];
            let seal = best(n, |pn| {
                let tag = k
                    .local
                    .packet
                    .encrypt_in_place(pn, &header, &mut buf)
                    .expect("seal");
                black_box(tag);
            });
            // Sealed packets to open: one per packet number used below.
            let sealed: Vec<Vec<u8>> = (0..64u64)
                .map(|pn| {
                    let mut b = vec![0x5au8; size];
                    let tag = k.local.packet.encrypt_in_place(pn, &header, &mut b);
                    b.extend_from_slice(tag.expect("seal").as_ref());
                    b
                })
                .collect();
            let mut work = sealed[0].clone();
            let open = best(n, |i| {
                let pn = i % 64;
                work.copy_from_slice(&sealed[pn as usize]);
                let plain = opener
                    .decrypt_in_place(pn, &header, &mut work)
                    .expect("open");
                black_box(plain.len());
            });
            let sample = [7u8; 16];
            let mut first = 0x40u8;
            let mut pn_bytes = [0u8; 4];
            let hp = best(n, |_| {
                k.local
                    .header
                    .encrypt_in_place(&sample, &mut first, &mut pn_bytes)
                    .expect("hp");
                black_box(first);
            });
            let gbs = |ns: f64| size as f64 / ns;
            println!(
                "{:<10} {size:>5} {seal:>9.0} {open:>8.0} {hp:>6.0} {:>10.2} {:>10.2}",
                c.name(),
                gbs(seal),
                gbs(open),
            );
        }
    }
}
