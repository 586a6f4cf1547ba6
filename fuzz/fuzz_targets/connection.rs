//! A misbehaving peer on an established connection. After a real handshake
//! between two in-memory endpoints, the input's chunks go out verbatim as the
//! frames of one 1-RTT packet each (properly encrypted), from the client or
//! from the server, and the network runs for a while after each. Whatever the
//! frames, nothing panics; a side that closes does so with a transport error
//! other than INTERNAL_ERROR (or because the bytes were a valid CONNECTION_CLOSE).
//!
//! Input: chunks of `[header][bytes]`, where header's low 7 bits are the
//! chunk's length and its high bit the sender (set: the server).

#![no_main]

#[path = "common.rs"]
mod common;

use std::time::Duration;

use common::{Pair, tls};
use libfuzzer_sys::fuzz_target;
use quark_proto::{ConnectionError, ServerConfig, TransportErrorCode};

/// Chunks (packets) taken from one input at most.
const MAX_CHUNKS: usize = 16;

fn check(side: &str, error: Option<&ConnectionError>) {
    if let Some(ConnectionError::TransportError(e)) = error {
        assert!(
            e.code != TransportErrorCode::INTERNAL_ERROR,
            "{side} closed with INTERNAL_ERROR: {e}"
        );
    }
}

fuzz_target!(|data: &[u8]| {
    let mut pair = Pair::new(ServerConfig::new(tls().server.clone()));
    let c = pair.connect();
    pair.run(Duration::from_millis(100));
    let Some(s) = pair.server.handles().next() else {
        panic!("no server connection after the handshake");
    };
    assert!(
        pair.client.connection(c).unwrap().is_handshake_complete(),
        "handshake did not complete"
    );
    let mut rest = data;
    for _ in 0..MAX_CHUNKS {
        let Some((&header, tail)) = rest.split_first() else {
            break;
        };
        let len = usize::from(header & 0x7f).min(tail.len());
        let (frames, tail) = tail.split_at(len);
        rest = tail;
        if frames.is_empty() {
            continue;
        }
        let (ep, h) = if header & 0x80 != 0 {
            (&mut pair.server, s)
        } else {
            (&mut pair.client, c)
        };
        match ep.connection_mut(h) {
            Some(conn) if !conn.is_closed() => conn.inject_raw_frames(frames),
            _ => break,
        }
        pair.run(Duration::from_millis(50));
    }
    pair.run(Duration::from_secs(1));
    check("server", pair.server.connection(s).and_then(|x| x.error()));
    check("client", pair.client.connection(c).and_then(|x| x.error()));
});
