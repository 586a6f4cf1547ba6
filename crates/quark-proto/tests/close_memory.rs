//! A closed connection gives back its memory at once: while it waits out the
//! closing or draining period (3 PTOs, RFC 9000 §10.2) it keeps only what it
//! needs to answer with CONNECTION_CLOSE and the data the application has not
//! read yet. A server under many short connections otherwise holds the full
//! state of every connection closed in the last few PTOs.

mod common;

use std::alloc::System;

use common::app::{Echo, run_echo};
use common::{Sim, payload, seed};
use quark_proto::{Dir, ReadOutcome};
use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Bytes on the heap now (this binary runs one test on one thread).
fn heap() -> i64 {
    let s = GLOBAL.stats();
    s.bytes_allocated as i64 - s.bytes_deallocated as i64 + s.bytes_reallocated as i64
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
    // What the pair held: the heap the removal gave back, and before it.
    let gone = heap();
    let (open, closing) = (open - gone, closing - gone);
    eprintln!("heap held by the pair: {open} bytes open, {closing} closing/draining");
    assert!(
        open > 20_000,
        "the measurement sees the connections: {open}"
    );
    assert!(
        closing * 8 < open,
        "closing and draining connections hold {closing} of {open} bytes"
    );
}

/// What the application has not read yet survives the close: the server
/// answers and closes, and the client, draining, still reads the whole answer
/// and its end. The negotiated ALPN stays known.
#[test]
fn unread_data_survives_the_close() {
    let (mut sim, tls) = Sim::pair(seed(81));
    let c = sim.connect(&tls);
    let s = sim.handshake(c);
    let alpn = sim.client.connection(c).unwrap().alpn().map(<[u8]>::to_vec);
    assert!(alpn.is_some());
    let id = {
        let conn = sim.client.connection_mut(c).unwrap();
        let id = conn.open_stream(Dir::Bi).unwrap();
        assert_eq!(conn.write(id, b"request").unwrap(), 7);
        conn.finish(id).unwrap();
        id
    };
    sim.run_until(10_000, |sim| {
        sim.server.connection(s).unwrap().readable_bytes(id) == 7
    });
    let answer = payload(10_000, 3);
    {
        let conn = sim.server.connection_mut(s).unwrap();
        assert_eq!(conn.accept_stream(Dir::Bi), Some(id));
        assert_eq!(conn.write(id, &answer).unwrap(), answer.len());
        conn.finish(id).unwrap();
    }
    // The answer arrives; the client does not read it before the server closes.
    sim.run_until(10_000, |sim| {
        sim.client.connection(c).unwrap().readable_bytes(id) == answer.len()
    });
    let now = sim.now;
    sim.server.connection_mut(s).unwrap().close(now, 0, b"done");
    sim.run_until(10_000, |sim| sim.client.connection(c).unwrap().is_closed());
    let conn = sim.client.connection_mut(c).unwrap();
    assert!(!conn.is_drained(), "draining, not gone");
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match conn.read(id, &mut buf).unwrap() {
            ReadOutcome::Data(n) => got.extend_from_slice(&buf[..n]),
            ReadOutcome::Finished => break,
            ReadOutcome::Blocked => panic!("blocked after {} bytes", got.len()),
        }
    }
    assert_eq!(got, answer);
    assert_eq!(conn.alpn().map(<[u8]>::to_vec), alpn);
}
