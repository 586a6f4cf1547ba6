//! Request/response traffic does not allocate per request: a stream per request,
//! 2 KiB and then 64 KiB each way, with heap allocations counted only inside
//! protocol calls. A freed stream's buffers serve the next one (glibc serves
//! buffers of a few KiB slowly, and maps or faults in large ones page by page).

mod common;

use std::alloc::System;
use std::time::Duration;

use common::{Sim, seed};
use quark_proto::{ConnectionHandle, Dir, ReadOutcome, StreamId};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

thread_local! {
    static TOTAL: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Allocations made inside `f`; this binary holds one test, so the global
/// counters see only it.
fn counted<R>(f: impl FnOnce() -> R) -> R {
    let region = Region::new(GLOBAL);
    let r = f();
    let change = region.change();
    TOTAL.with(|t| t.set(t.get() + (change.allocations + change.reallocations) as u64));
    r
}

fn counted_step(f: &mut dyn FnMut()) {
    counted(f)
}

/// Reads stream `id` to its end, checking every byte is `tag`; returns how many.
fn read_all(sim: &mut Sim, client: bool, h: ConnectionHandle, id: StreamId, tag: u8) -> usize {
    let mut got = 0;
    sim.run_until(10_000, |s| {
        let ep = if client { &mut s.client } else { &mut s.server };
        let conn = ep.connection_mut(h).unwrap();
        loop {
            let outcome = counted(|| {
                conn.read_visit(id, usize::MAX, |data| {
                    assert!(data.iter().all(|&b| b == tag), "corrupt byte");
                    got += data.len();
                })
            });
            match outcome.unwrap() {
                ReadOutcome::Data(_) => continue,
                ReadOutcome::Finished => return true,
                ReadOutcome::Blocked => return false,
            }
        }
    });
    got
}

/// Writes `size` bytes of `tag` and the FIN.
fn write_all(sim: &mut Sim, client: bool, h: ConnectionHandle, id: StreamId, tag: u8, size: usize) {
    let ep = if client {
        &mut sim.client
    } else {
        &mut sim.server
    };
    let conn = ep.connection_mut(h).unwrap();
    let body = vec![tag; size];
    counted(|| {
        assert_eq!(conn.write(id, &body).unwrap(), size);
        conn.finish(id).unwrap();
    });
}

/// One request: the client's `size` bytes up, the server's `size` back, both checked.
fn request(sim: &mut Sim, c: ConnectionHandle, s: ConnectionHandle, i: usize, size: usize) {
    let tag = i as u8;
    let id = counted(|| sim.client.connection_mut(c).unwrap().open_stream(Dir::Bi));
    let id = id.expect("stream credit");
    write_all(sim, true, c, id, tag, size);
    let mut accepted = None;
    sim.run_until(10_000, |s2| {
        accepted = counted(|| s2.server.connection_mut(s).unwrap().accept_stream(Dir::Bi));
        accepted.is_some()
    });
    let sid = accepted.unwrap();
    assert_eq!(read_all(sim, false, s, sid, tag), size);
    write_all(sim, false, s, sid, !tag, size);
    assert_eq!(read_all(sim, true, c, id, !tag), size);
    // Let the ACKs land so both sides free the stream; drop the events (the
    // harness collects them into a Vec, so this is not counted).
    sim.run_for(Duration::from_millis(5));
    sim.events(true, c);
    sim.events(false, s);
}

/// Allocations in `measured` requests of `size` bytes each way, after `warm` more.
fn allocations(sim: &mut Sim, c: ConnectionHandle, s: ConnectionHandle, size: usize) -> u64 {
    let (warm, measured) = (50, 200);
    for i in 0..warm {
        request(sim, c, s, i, size);
    }
    let baseline = TOTAL.with(std::cell::Cell::get);
    for i in 0..measured {
        request(sim, c, s, warm + i, size);
    }
    let allocations = TOTAL.with(std::cell::Cell::get) - baseline;
    eprintln!("{allocations} allocations in {measured} requests of {size} bytes after warm-up");
    // Without reuse each request allocates four stream buffers (two per side).
    assert!(
        allocations < measured as u64,
        "{allocations} allocations for {measured} requests of {size} bytes: streams allocate per request"
    );
    allocations
}

#[test]
fn requests_reuse_stream_buffers() {
    let (mut sim, tls) = Sim::pair(seed(71));
    sim.set_delay(Duration::from_micros(100));
    sim.counted = Some(counted_step);
    let c = sim.connect(&tls);
    let s = sim.handshake(c);
    allocations(&mut sim, c, s, 2048);
    // Buffers this large were freed, not kept, until the spare store got a
    // byte bound of its own.
    allocations(&mut sim, c, s, 64 * 1024);
}
