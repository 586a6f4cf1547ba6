//! After a peak of connections has come and gone, an endpoint gives the memory
//! back: what it keeps per connection slot is a pointer, not a connection's
//! several kilobytes (a slab keeps its capacity). With connections stored in
//! the slab itself, 19.3 KB per connection stayed; boxed, 2.3 KB (table
//! capacity and caches, not attributed further). Measured with a counting
//! allocator, so this test has its binary to itself.

mod common;

use std::alloc::System;

use common::{Sim, seed};
use quark_proto::ConnectionHandle;
use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Bytes on the heap now (this binary runs one test on one thread).
fn heap() -> i64 {
    let s = GLOBAL.stats();
    // stats_alloc counts a realloc's growth or shrinkage in these two already.
    s.bytes_allocated as i64 - s.bytes_deallocated as i64
}

/// Open `n` connections at once, close them all, wait until both sides have
/// drained, and remove them.
fn peak(sim: &mut Sim, tls: &common::Tls, n: usize) {
    sim.server_handles.clear();
    let clients: Vec<ConnectionHandle> = (0..n).map(|_| sim.connect(tls)).collect();
    sim.run_until(1_000_000, |sim| {
        sim.server_handles.len() == n
            && clients
                .iter()
                .all(|&c| sim.client.connection(c).unwrap().is_handshake_complete())
    });
    sim.close_all_and_remove(&clients, 10_000_000);
}

#[test]
fn a_peak_of_connections_leaves_little_behind() {
    let (mut sim, tls) = Sim::pair(seed(81));
    // One-off allocations (tables' first capacity, TLS caches) happen here.
    peak(&mut sim, &tls, 8);
    let before = heap();
    const N: usize = 100;
    peak(&mut sim, &tls, N);
    let kept = heap() - before;
    let per_slot = kept / (2 * N as i64);
    eprintln!("kept after {N} connections per side: {kept} bytes ({per_slot} per connection)");
    assert!(
        per_slot < 4_000,
        "{per_slot} bytes kept per connection that has gone"
    );
}
