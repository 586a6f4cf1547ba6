//! Reordering must not cost throughput (issue #3: within 10 % of the clean path
//! under 1 % reordering). Deterministic: simulated time, fixed seed.

mod common;

use common::upload::Upload;
use common::{Sim, seed};

/// Upload `total` bytes under `profile`; return simulated goodput (bit/s) and
/// the client's spurious losses.
fn upload(profile: &str, total: usize) -> (f64, u64) {
    let (mut sim, tls) = Sim::pair(seed(7));
    sim.set_profile(profile);
    let c = sim.connect(&tls);
    let s = sim.handshake(c);
    let mut upload = Upload::new(&mut sim, c, s, total, 1);
    let start = sim.now;
    while !upload.done() {
        upload.pump(&mut sim);
        assert!(sim.step(), "stalled");
    }
    let secs = (sim.now - start).as_secs_f64();
    let stats = sim.client.connection(c).unwrap().stats();
    (total as f64 * 8.0 / secs, stats.spurious_losses)
}

#[test]
fn one_percent_reordering_costs_under_ten_percent() {
    let total = 20_000_000;
    let (clean, _) = upload("rtt10", total);
    let (reordered, spurious) = upload("reorder1", total);
    eprintln!(
        "clean {:.0} Mbit/s, 1% reordering {:.0} Mbit/s, {spurious} spurious losses",
        clean / 1e6,
        reordered / 1e6
    );
    assert!(reordered >= 0.9 * clean, "{reordered} vs {clean}");
    assert!(
        spurious < 30,
        "adaptive thresholds should stop spurious losses: {spurious}"
    );
}
