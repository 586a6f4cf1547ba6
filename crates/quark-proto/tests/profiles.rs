//! Bulk transfers under the named network profiles of quark-netem (the papers'
//! grid, reordering, the interop runner's link and its blackhole), each checked
//! byte for byte: the client sends 10 MiB on a stream and the server echoes it
//! back, so each direction carries 10 MiB under the impairments.

mod common;

use common::app::{Echo, run_echo};
use common::{Sim, payload, seed};

/// Per direction; "≥ 10 MB" whichever way MB is read.
const SIZE: usize = 10 << 20;

/// Echoes `SIZE` bytes under `profile`; returns the finished simulation.
fn transfer(profile: &str, default_seed: u64) -> Sim {
    transfer_with(profile, default_seed, Echo::new)
}

/// [`transfer`] with the echo `echo` makes.
fn transfer_with(
    profile: &str,
    default_seed: u64,
    echo: fn(quark_proto::ConnectionHandle, Vec<Vec<u8>>) -> Echo,
) -> Sim {
    let (mut sim, tls) = Sim::pair(seed(default_seed));
    sim.set_profile(profile);
    let c = sim.connect(&tls);
    let start = sim.now;
    let mut echo = echo(c, vec![payload(SIZE, 0x5a)]);
    run_echo(&mut sim, &mut echo, 50_000_000);
    let stats = sim.client.connection(c).unwrap().stats();
    eprintln!(
        "{profile}: {:.1} s simulated, network up [{}] down [{}], client {stats:?}",
        (sim.now - start).as_secs_f64(),
        sim.path.up.counters(),
        sim.path.down.counters(),
    );
    sim
}

#[test]
fn lan() {
    let sim = transfer("lan", 1);
    assert_eq!(sim.path.counters().dropped(), 0);
}

#[test]
fn rtt10_loss0_1() {
    let sim = transfer("rtt10-loss0.1", 2);
    assert!(sim.path.counters().lost > 0);
}

#[test]
fn rtt30_loss1() {
    let sim = transfer("rtt30-loss1", 3);
    assert!(sim.path.up.counters().lost > 10 && sim.path.down.counters().lost > 10);
}

#[test]
fn rtt100_loss10() {
    let sim = transfer("rtt100-loss10", 4);
    let c = sim.path.counters();
    assert!(c.lost * 20 > c.sent, "about 10 % lost: {c}");
}

/// Shared chunks (`write_shared`), mixed with copied writes, lost and
/// retransmitted and acknowledged out of order, arrive byte for byte.
#[test]
fn rtt30_loss1_shared_writes() {
    let sim = transfer_with("rtt30-loss1", 13, Echo::shared);
    assert!(sim.path.up.counters().lost > 10 && sim.path.down.counters().lost > 10);
}

#[test]
fn reorder0_1() {
    let sim = transfer("reorder0.1", 5);
    assert!(sim.path.counters().reordered > 0);
}

#[test]
fn reorder1() {
    let sim = transfer("reorder1", 6);
    let c = sim.path.counters();
    assert!(c.reordered * 200 > c.sent, "about 1 % reordered: {c}");
}

#[test]
fn interop_link() {
    let sim = transfer("interop", 7);
    // 10 Mbit/s: 10 MiB each way takes at least 8.4 s; slow start overflows
    // the 25-packet queue.
    let c = sim.path.counters();
    assert!(c.queue_dropped > 0, "{c}");
}

#[test]
fn blackhole_mid_transfer() {
    let sim = transfer("blackhole", 8);
    let c = sim.path.counters();
    assert!(c.blackholed > 0, "the transfer crossed the blackhole: {c}");
}

#[test]
fn heavy_loss_in_handshake_then_two_percent() {
    let (mut sim, tls) = Sim::pair(seed(9));
    sim.set_profile("rtt30-loss30");
    let c = sim.connect(&tls);
    sim.handshake(c);
    let lost_in_handshake = sim.path.counters().lost;
    sim.set_loss(0.02);
    let mut echo = Echo::new(c, vec![payload(SIZE, 0xa5)]);
    run_echo(&mut sim, &mut echo, 50_000_000);
    eprintln!(
        "handshake: {lost_in_handshake} lost; in all: {}",
        sim.path.counters()
    );
}
