//! A peer repeating a frame 100 000 times must not make us hold more: every
//! queue its frames add to stays bounded (by a constant or by the streams that
//! exist), and so does the heap. Each flood goes out in packets of about 900
//! bytes of hand-built frames from an otherwise normal peer; the heap is read
//! after a fifth of the flood and at its end.
//!
//! The heap is measured with a counting allocator, so the tests of this binary
//! run one at a time.

mod common;

use std::alloc::System;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use common::{Sim, Tls, seed};
use quark_proto::{
    ConnectionError, ConnectionHandle, Dir, Endpoint, EndpointConfig, ServerConfig,
    TransportConfig, TransportErrorCode as Code,
};
use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

static SERIAL: Mutex<()> = Mutex::new(());

/// Bytes on the heap now. (stats_alloc already counts a reallocation's
/// growth or shrinkage in `bytes_allocated` / `bytes_deallocated`;
/// `bytes_reallocated` would count it twice.)
fn heap() -> i64 {
    let s = GLOBAL.stats();
    s.bytes_allocated as i64 - s.bytes_deallocated as i64
}

const FLOOD: usize = 100_000;
/// Heap growth allowed between a fifth of a flood and its end: 80 000 frames
/// retained at even one byte each would exceed it.
const HEAP_SLACK: i64 = 64 * 1024;

fn varint(v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    quark_proto::varint::put_varint(&mut out, v);
    out
}

struct Pair {
    sim: Sim,
    client: ConnectionHandle,
    server: ConnectionHandle,
    _serial: MutexGuard<'static, ()>,
}

impl Pair {
    /// A client and a server after the handshake; the client has opened
    /// bidirectional stream 0 and sent a byte on it.
    fn new(seed_value: u64) -> Self {
        Self::with_server_limit(
            seed_value,
            TransportConfig::default().active_connection_id_limit,
        )
    }

    /// As `new`, the server taking up to `cid_limit` client connection IDs.
    fn with_server_limit(seed_value: u64, cid_limit: u64) -> Self {
        let serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let tls = Tls::new();
        let mut server = ServerConfig::new(tls.server_config(None));
        server.transport = Arc::new(TransportConfig {
            active_connection_id_limit: cid_limit,
            ..TransportConfig::default()
        });
        let mut sim = Sim::new(seed(seed_value), server, EndpointConfig::default());
        let client = sim.connect(&tls);
        let server = sim.handshake(client);
        let conn = sim.client.connection_mut(client).unwrap();
        let id = conn.open_stream(Dir::Bi).unwrap();
        assert_eq!(id.0, 0);
        conn.write(id, b"x").unwrap();
        // And every other stream it may open, so that frames the server sends
        // on them in answer are legal.
        while conn.open_stream(Dir::Bi).is_some() {}
        sim.run_for(Duration::from_millis(100));
        // An application that has taken every event so far.
        sim.events(true, client);
        sim.events(false, server);
        Pair {
            sim,
            client,
            server,
            _serial: serial,
        }
    }

    fn endpoint(&mut self, client: bool) -> (&mut Endpoint, ConnectionHandle) {
        if client {
            (&mut self.sim.client, self.client)
        } else {
            (&mut self.sim.server, self.server)
        }
    }

    /// Send `frames` from the client (or the server) in one packet, and run
    /// until it has gone out.
    fn send(&mut self, from_client: bool, frames: &[u8]) {
        let (ep, h) = self.endpoint(from_client);
        ep.connection_mut(h).unwrap().inject_raw_frames(frames);
        self.sim.run_until(10_000, |sim| {
            let ep = if from_client {
                &sim.client
            } else {
                &sim.server
            };
            !ep.connection(h).unwrap().has_raw_frames()
        });
    }

    /// Send `count` frames made by `make` from one side, about 900 bytes per
    /// packet. Returns the other side's heap growth from a fifth of the way to
    /// the end, and the longest each of its queues was, read as each packet
    /// had been processed (before any answer went out) and at the end.
    fn flood(
        &mut self,
        from_client: bool,
        count: usize,
        mut make: impl FnMut(u64) -> Vec<u8>,
    ) -> (i64, HashMap<&'static str, usize>) {
        let mut peaks = HashMap::new();
        let mut note = |queues: HashMap<&'static str, usize>| {
            for (name, len) in queues {
                let peak = peaks.entry(name).or_insert(0);
                *peak = len.max(*peak);
            }
        };
        let received = |p: &mut Self| {
            let (ep, h) = p.endpoint(!from_client);
            ep.connection(h).unwrap().stats().packets_in
        };
        let before = received(self);
        let mut chunk = Vec::new();
        let mut packets = 0;
        let mut at_fifth = None;
        for i in 0..count {
            chunk.extend(make(i as u64));
            if chunk.len() >= 900 || i + 1 == count {
                self.send(from_client, &chunk);
                chunk.clear();
                packets += 1;
                note(self.queues(!from_client));
            }
            if i + 1 == count / 5 {
                self.settle();
                at_fifth = Some(heap());
            }
        }
        self.settle();
        // Every packet of the flood arrived (and others besides).
        let got = received(self) - before;
        assert!(got >= packets, "{got} packets arrived of {packets} sent");
        note(self.queues(!from_client));
        let growth = heap() - at_fifth.expect("flood shorter than 5 frames");
        (growth, peaks)
    }

    /// Let every packet in flight arrive and be acknowledged.
    fn settle(&mut self) {
        self.sim.run_for(Duration::from_millis(200));
    }

    /// The victim's queue lengths, by name.
    fn queues(&mut self, client: bool) -> HashMap<&'static str, usize> {
        let (ep, h) = self.endpoint(client);
        ep.connection(h)
            .unwrap()
            .queue_lengths()
            .into_iter()
            .collect()
    }

    fn assert_open(&mut self, client: bool) {
        let (ep, h) = self.endpoint(client);
        let conn = ep.connection(h).unwrap();
        assert!(!conn.is_closed(), "closed: {:?}", conn.error());
    }
}

/// Streams the peer may have open at once (the default limit), which bounds
/// the streams and the queue of streams to accept.
const STREAMS: usize = 256;

/// Every queue at most `max` long at its peak (the streams and the accept
/// queues at most `STREAMS`).
fn bounded(peaks: &HashMap<&'static str, usize>, max: usize) {
    for (name, len) in peaks {
        let max = match *name {
            "streams" | "accept_bidi" | "accept_uni" => STREAMS,
            // Not a queue: runs of sequence numbers remembered, at most 32.
            "peer_cid_seen_runs" => 32,
            _ => max,
        };
        assert!(*len <= max, "{name} reached {len} entries ({peaks:?})");
    }
}

/// The queues named are exactly so long now.
fn now(p: &mut Pair, client: bool, exact: &[(&str, usize)]) {
    let queues = p.queues(client);
    for (name, want) in exact {
        assert_eq!(queues[name], *want, "{name} ({queues:?})");
    }
}

fn check_heap(what: &str, growth: i64) {
    eprintln!("{what}: heap grew {growth} bytes over the last 80 000 frames");
    assert!(growth < HEAP_SLACK, "{what}: heap grew {growth} bytes");
}

#[test]
fn path_challenges() {
    let mut p = Pair::new(100);
    let (growth, peaks) = p.flood(true, FLOOD, |i| {
        [vec![0x1a], i.to_be_bytes().to_vec()].concat()
    });
    p.assert_open(false);
    // About 100 challenges per packet: the latest few are answered.
    bounded(&peaks, 4);
    assert_eq!(peaks["path_responses"], 4);
    now(&mut p, false, &[("path_responses", 0)]);
    check_heap("PATH_CHALLENGE", growth);
}

#[test]
fn stop_sending_on_one_stream() {
    let mut p = Pair::new(101);
    let (growth, peaks) = p.flood(true, FLOOD, |i| {
        [varint(0x05), varint(0), varint(i % 1000)].concat()
    });
    p.assert_open(false);
    // The application, which no longer polls, hears of the first STOP_SENDING
    // only; the one RESET_STREAM owed went out.
    bounded(&peaks, 1);
    now(&mut p, false, &[("stream_events", 1), ("reset_stream", 0)]);
    check_heap("STOP_SENDING", growth);
}

#[test]
fn stop_sending_on_every_stream() {
    let mut p = Pair::new(107);
    // The server allows 256 client bidi streams: all of them, round and round.
    let (growth, peaks) = p.flood(true, FLOOD, |i| {
        [varint(0x05), varint(4 * (i % 256)), varint(1)].concat()
    });
    p.assert_open(false);
    // Per stream at most one Opened and one Stopped event and one
    // RESET_STREAM owed, whatever the repeats.
    bounded(&peaks, 2 * STREAMS);
    assert!(peaks["reset_stream"] <= STREAMS, "{peaks:?}");
    now(&mut p, false, &[("streams", STREAMS), ("reset_stream", 0)]);
    check_heap("STOP_SENDING x 256 streams", growth);
}

#[test]
fn rising_max_stream_data() {
    let mut p = Pair::new(102);
    let (growth, peaks) = p.flood(true, FLOOD, |i| {
        [varint(0x11), varint(0), varint((1 << 40) + i)].concat()
    });
    p.assert_open(false);
    // Stream 0 was writable all along: no news for the application.
    bounded(&peaks, 0);
    check_heap("MAX_STREAM_DATA", growth);
}

#[test]
fn rising_max_data() {
    let mut p = Pair::new(103);
    let (growth, peaks) = p.flood(true, FLOOD, |i| {
        [varint(0x10), varint((1 << 40) + i)].concat()
    });
    p.assert_open(false);
    bounded(&peaks, 0);
    check_heap("MAX_DATA", growth);
}

#[test]
fn rising_max_streams() {
    let mut p = Pair::new(104);
    let (growth, peaks) = p.flood(true, FLOOD, |i| [varint(0x12), varint(1000 + i)].concat());
    p.assert_open(false);
    // The server opened no stream, so it was never at the limit.
    bounded(&peaks, 0);
    check_heap("MAX_STREAMS", growth);
}

#[test]
fn blocked_frames() {
    let mut p = Pair::new(105);
    let (growth, peaks) = p.flood(true, FLOOD, |i| match i % 3 {
        0 => [varint(0x14), varint(i)].concat(),
        1 => [varint(0x15), varint(0), varint(i)].concat(),
        _ => [varint(0x16), varint(i % 1000)].concat(),
    });
    p.assert_open(false);
    bounded(&peaks, 0);
    check_heap("*_BLOCKED", growth);
}

#[test]
fn reset_stream_repeated() {
    let mut p = Pair::new(106);
    let (growth, peaks) = p.flood(true, FLOOD, |_| {
        [varint(0x04), varint(0), varint(7), varint(1)].concat()
    });
    p.assert_open(false);
    // One Readable event for the reset.
    bounded(&peaks, 1);
    check_heap("RESET_STREAM", growth);
}

#[test]
fn new_tokens_to_a_client() {
    let mut p = Pair::new(108);
    let (growth, peaks) = p.flood(false, FLOOD, |i| {
        [varint(0x07), varint(8), i.to_be_bytes().to_vec()].concat()
    });
    p.assert_open(true);
    bounded(&peaks, 0);
    check_heap("NEW_TOKEN", growth);
}

/// NEW_CONNECTION_ID with these fields.
fn new_cid(seq: u64, retire_prior_to: u64, id: u8, token: u8) -> Vec<u8> {
    [
        varint(0x18),
        varint(seq),
        varint(retire_prior_to),
        vec![8],
        vec![id; 8],
        vec![token; 16],
    ]
    .concat()
}

#[test]
fn a_retired_id_announced_again_and_again() {
    // The server takes 9 client IDs; the client issues at most 8, leaving room
    // for the one the test makes up.
    let mut p = Pair::with_server_limit(109, 9);
    // Retire sequence 0: the server moves to the client's sequence 1.
    p.send(true, &new_cid(1000, 1, 0xaa, 0xbb));
    p.settle();
    p.assert_open(false);
    now(&mut p, false, &[("retirements_owed", 0)]);
    // Sequence 0 again and again (below Retire Prior To): retired already.
    let (growth, peaks) = p.flood(true, FLOOD, |_| new_cid(0, 0, 0xcc, 0xdd));
    p.assert_open(false);
    bounded(&peaks, 2);
    assert_eq!(peaks["retirements_owed"], 0);
    check_heap("NEW_CONNECTION_ID of a retired ID", growth);
}

#[test]
fn retirements_never_acknowledged() {
    let mut p = Pair::new(110);
    // Each new ID retires every older one, 40 in one packet: the server may
    // owe at most 4 × its limit of 4 retirements before it gives up.
    let frames: Vec<u8> = (100..140u64)
        .flat_map(|seq| new_cid(seq, seq, seq as u8, seq as u8))
        .collect();
    p.send(true, &frames);
    p.sim.run_until(1_000, |sim| {
        sim.server.connection(p.server).unwrap().is_closed()
    });
    let conn = p.sim.server.connection(p.server).unwrap();
    match conn.error() {
        Some(ConnectionError::TransportError(e)) => {
            assert_eq!(e.code, Code::CONNECTION_ID_LIMIT_ERROR, "{e}");
            assert_eq!(e.frame_type, Some(0x18));
        }
        other => panic!("server ended with {other:?}"),
    }
    now(&mut p, false, &[("retirements_owed", 17)]);
}
