//! The data path does not allocate per packet: a 100 MB transfer in the
//! simulator, with heap allocations counted only while the protocol itself runs
//! (inside `poll_transmit`, `handle_datagram`, `handle_timeout` and the stream
//! calls), not in the test harness around it.

mod common;

use std::alloc::System;
use std::time::Duration;

use common::upload::Upload;
use common::{Sim, seed};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Allocations made inside protocol calls; this test binary runs one test on
/// one thread, so the global counters see only it.
fn counted<R>(f: impl FnOnce() -> R) -> R {
    let region = Region::new(GLOBAL);
    let r = f();
    let change = region.change();
    add((change.allocations + change.reallocations) as u64);
    r
}

fn add(n: u64) {
    TOTAL.with(|t| t.set(t.get() + n));
}

fn total() -> u64 {
    TOTAL.with(std::cell::Cell::get)
}

thread_local! {
    static TOTAL: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

#[test]
fn hundred_megabytes_without_per_packet_allocation() {
    const TOTAL: usize = 100 * 1000 * 1000;
    let (mut sim, tls) = Sim::pair(seed(70));
    sim.set_delay(Duration::from_micros(200));
    sim.counted = Some(counted_step);
    let c = sim.connect(&tls);
    let s = sim.handshake(c);
    let mut upload = Upload::new(&mut sim, c, s, TOTAL, 0x5a);
    // Warm up: buffers and maps reach their working size first.
    let mut warmed = false;
    let mut baseline = 0;
    let mut packets_at_baseline = 0;
    while !upload.done() {
        counted(|| upload.pump(&mut sim));
        if !warmed && upload.read > 10 * 1000 * 1000 {
            warmed = true;
            baseline = total();
            packets_at_baseline = sim.client.connection(c).unwrap().stats().packets_out;
        }
        assert!(sim.step(), "simulation stalled");
    }
    let allocations = total() - baseline;
    let stats = sim.client.connection(c).unwrap().stats();
    let packets = stats.packets_out - packets_at_baseline
        + sim.server.connection(s).unwrap().stats().packets_out;
    eprintln!("{allocations} allocations for {packets} packets after warm-up ({stats:?})");
    assert!(
        packets > 50_000,
        "the transfer used many packets: {packets}"
    );
    // Occasional growth (maps, out-of-order ranges) is fine; one per packet is not.
    assert!(
        allocations * 100 < packets,
        "{allocations} allocations for {packets} packets: the data path allocates per packet"
    );
}

/// The simulator calls this around each protocol call it makes.
fn counted_step(f: &mut dyn FnMut()) {
    counted(f)
}
