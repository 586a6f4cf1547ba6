//! RFC 9218 priorities through a whole connection (sans-IO pair, 10 ms
//! one-way delay): the server keeps a 3 MB response buffered as far as its
//! send buffer allows when a 10 KB one is written; what the client receives
//! of the big one before the small one is complete shows the order the
//! server's scheduler chose.

mod common;

use std::time::Duration;

use common::{Sim, Tls, payload, seed};
use quark_proto::{
    ConnectionHandle, Dir, Priority, ReadOutcome, ServerConfig, StreamError, StreamId,
    TransportConfig,
};

const BIG: usize = 3 << 20;
const SMALL: usize = 10 * 1024;

fn pair(seed: u64) -> (Sim, ConnectionHandle, ConnectionHandle) {
    let tls = Tls::new();
    let mut server = ServerConfig::new(tls.server_config(None));
    // A large budget: the server always has more of the big response to
    // send, so only the scheduler decides the order.
    server.transport = TransportConfig {
        send_budget: 8 << 20,
        send_budget_max: 32 << 20,
        ..TransportConfig::default()
    }
    .into();
    let mut sim = Sim::new(seed, server, Default::default());
    sim.set_delay(Duration::from_millis(10));
    let c = sim.connect(&tls);
    let s = sim.handshake(c);
    sim.run_for(Duration::from_millis(200));
    (sim, c, s)
}

/// Reads what has arrived on `id` at the client into `into`; whether it ended.
fn read(sim: &mut Sim, c: ConnectionHandle, id: StreamId, into: &mut Vec<u8>) -> bool {
    let conn = sim.client.connection_mut(c).unwrap();
    let mut buf = [0u8; 16384];
    loop {
        match conn.read(id, &mut buf) {
            Ok(ReadOutcome::Data(n)) => into.extend_from_slice(&buf[..n]),
            Ok(ReadOutcome::Finished) => return true,
            Ok(ReadOutcome::Blocked) | Err(StreamError::UnknownStream) => return false,
            Err(e) => panic!("read on {id:?}: {e}"),
        }
    }
}

/// Writes more of `data` on the server's stream `id` as room appears (the
/// application keeping its response buffered); finishes it at the end.
fn pump(sim: &mut Sim, s: ConnectionHandle, id: StreamId, data: &[u8], written: &mut usize) {
    if *written == data.len() {
        return;
    }
    let conn = sim.server.connection_mut(s).unwrap();
    *written += conn.write(id, &data[*written..]).unwrap();
    if *written == data.len() {
        conn.finish(id).unwrap();
    }
}

fn prio(urgency: u8, incremental: bool) -> Option<Priority> {
    Some(Priority {
        urgency,
        incremental,
    })
}

/// The client asks for both; the server writes the big response, lets 200
/// KB of it arrive, then writes the small one. Returns the bytes of the big
/// one the client got between the small one's write and its end, and what
/// of the big one was left at the write. Both bodies are checked.
fn race(seed: u64, big_prio: Option<Priority>, small_prio: Option<Priority>) -> (usize, usize) {
    let (mut sim, c, s) = pair(seed);
    let conn = sim.client.connection_mut(c).unwrap();
    let (a, b) = (
        conn.open_stream(Dir::Bi).unwrap(),
        conn.open_stream(Dir::Bi).unwrap(),
    );
    for id in [a, b] {
        let conn = sim.client.connection_mut(c).unwrap();
        conn.write(id, b"GET").unwrap();
        conn.finish(id).unwrap();
    }
    sim.run_until(1_000, |sim| {
        let conn = sim.server.connection_mut(s).unwrap();
        while conn.accept_stream(Dir::Bi).is_some() {}
        conn.readable_bytes(b) > 0 || conn.is_readable(b)
    });
    let (big, small) = (payload(BIG, 1), payload(SMALL, 2));
    let conn = sim.server.connection_mut(s).unwrap();
    conn.set_stream_priority(a, big_prio).unwrap();
    let mut written = 0;
    pump(&mut sim, s, a, &big, &mut written);

    let mut got_big = Vec::new();
    sim.run_until(100_000, |sim| {
        pump(sim, s, a, &big, &mut written);
        read(sim, c, a, &mut got_big);
        got_big.len() >= 200 << 10
    });
    let at_write = got_big.len();
    let conn = sim.server.connection_mut(s).unwrap();
    conn.set_stream_priority(b, small_prio).unwrap();
    assert_eq!(conn.write(b, &small).unwrap(), SMALL);
    conn.finish(b).unwrap();

    let mut got_small = Vec::new();
    // A stream read to its end is forgotten: remember that it ended.
    let mut big_done = false;
    sim.run_until(1_000_000, |sim| {
        pump(sim, s, a, &big, &mut written);
        big_done |= !big_done && read(sim, c, a, &mut got_big);
        read(sim, c, b, &mut got_small)
    });
    let during = got_big.len() - at_write;
    sim.run_until(1_000_000, |sim| {
        pump(sim, s, a, &big, &mut written);
        big_done |= !big_done && read(sim, c, a, &mut got_big);
        big_done
    });
    assert!(got_small == small, "the small response, byte for byte");
    assert!(got_big == big, "the big response, byte for byte");
    eprintln!("{during} bytes of the big response during the small one");
    (during, BIG - at_write)
}

#[test]
fn an_urgent_response_overtakes_a_buffered_download() {
    let (during, left) = race(seed(91), prio(7, false), prio(0, false));
    // Only what was already in flight when it was written: about one
    // congestion window, far from the megabytes still queued.
    assert!(left > 2 << 20, "{left}");
    assert!(during < left / 4, "{during} of {left} bytes came first");
    // Fewer than when the two share round-robin (same seed, same path):
    // none of the big one's queued data goes ahead of it.
    let (shared, _) = race(seed(91), None, None);
    assert!(during < shared, "{during} urgent, {shared} round-robin");
}

#[test]
fn a_more_urgent_download_goes_whole_first() {
    let (during, left) = race(seed(92), prio(0, false), prio(7, false));
    assert_eq!(
        during, left,
        "the small response waits for all of the big one"
    );
}

#[test]
fn without_priorities_both_share_round_robin() {
    let (during, left) = race(seed(93), None, None);
    assert!(during < left / 4, "{during} of {left} bytes came first");
}

#[test]
fn incremental_streams_of_one_urgency_share() {
    let (during, left) = race(seed(94), prio(2, true), prio(2, true));
    assert!(during < left / 4, "{during} of {left} bytes came first");
}
