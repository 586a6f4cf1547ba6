//! A closed connection gives back its memory at once: while it waits out the
//! closing or draining period (3 PTOs, RFC 9000 §10.2) it keeps only what it
//! needs to answer with CONNECTION_CLOSE and the data the application has not
//! read yet. A server under many short connections otherwise holds the full
//! state of every connection closed in the last few PTOs.

mod common;

use std::alloc::System;

use common::app::{Echo, run_echo};
use common::{Sim, payload, seed};
use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Bytes on the heap now (this binary runs one test on one thread).
fn heap() -> i64 {
    let s = GLOBAL.stats();
    // stats_alloc counts a realloc's growth or shrinkage in these two already.
    s.bytes_allocated as i64 - s.bytes_deallocated as i64
}

#[test]
fn closed_connections_give_their_memory_back() {
    let (mut sim, tls) = Sim::pair(seed(80));
    let c = sim.connect(&tls);
    let s = sim.handshake(c);
    let mut echo = Echo::new(c, vec![payload(2048, 1), payload(64 * 1024, 2)]);
    echo.set_server(s);
    run_echo(&mut sim, &mut echo, 100_000);
    let open = heap();
    let now = sim.now;
    sim.client.connection_mut(c).unwrap().close(now, 0, b"bye");
    sim.run_until(10_000, |sim| {
        sim.client.connection(c).unwrap().is_closed()
            && sim.server.connection(s).unwrap().is_closed()
    });
    assert!(
        !sim.server.connection(s).unwrap().is_drained(),
        "still draining"
    );
    let closing = heap();
    sim.run_until(100_000, |sim| {
        sim.client.connection(c).unwrap().is_drained()
            && sim.server.connection(s).unwrap().is_drained()
    });
    sim.client.remove(c).unwrap();
    sim.server.remove(s).unwrap();
    // What the pair held: the heap the removal gave back, and before it. That
    // includes the two `Connection` structs themselves (7 KB each, boxed by
    // the endpoint), which no state shedding can shrink.
    let gone = heap();
    let (open, closing) = (open - gone, closing - gone);
    eprintln!("heap held by the pair: {open} bytes open, {closing} closing/draining");
    assert!(
        open > 20_000,
        "the measurement sees the connections: {open}"
    );
    assert!(
        closing * 5 < open,
        "closing and draining connections hold {closing} of {open} bytes"
    );
}
