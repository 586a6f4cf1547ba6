//! Datagrams from anyone, before any handshake: the input's chunks arrive at a
//! server endpoint, or at a client endpoint waiting for the server's first
//! answer, from addresses the input picks, with the clock moving between
//! them, and again as ICMP errors quoting them. Nothing panics; the server
//! keeps at most its `max_connections`, and what the endpoints answer
//! drains.
//!
//! Input: chunks of `[target][length: 2 bytes][bytes]`. Target's high bit
//! picks the client, its low 3 bits the source address (and, to the client,
//! whether the chunk claims to come from the server's address), bits 3-6 the
//! milliseconds that pass after it.

#![no_main]

#[path = "common.rs"]
mod common;

use std::net::SocketAddr;
use std::time::Duration;

use common::{Pair, SERVER, outgoing, tls};
use libfuzzer_sys::fuzz_target;
use quark_proto::ServerConfig;

/// Datagrams taken from one input at most.
const MAX_DATAGRAMS: usize = 32;
/// A small limit, so that exceeding it would show.
const MAX_CONNECTIONS: usize = 4;

fuzz_target!(|data: &[u8]| {
    let mut server = ServerConfig::new(tls().server.clone());
    server.max_connections = MAX_CONNECTIONS;
    let mut pair = Pair::new(server);
    pair.connect();
    let mut buf = Vec::new();
    // The client's Initial goes nowhere: it waits for an answer.
    outgoing(&mut pair.client, pair.now, &mut buf);
    let mut rest = data;
    for _ in 0..MAX_DATAGRAMS {
        let [target, hi, lo, tail @ ..] = rest else {
            break;
        };
        let len = usize::from(u16::from_be_bytes([*hi, *lo])).min(tail.len());
        let (datagram, tail) = tail.split_at(len);
        rest = tail;
        let to_client = target & 0x80 != 0;
        let from: SocketAddr = if to_client && target & 1 == 0 {
            SERVER.parse().unwrap()
        } else {
            format!("10.0.9.{}:{}", target & 7, 4000 + u16::from(target & 7))
                .parse()
                .unwrap()
        };
        let ep = if to_client {
            &mut pair.client
        } else {
            &mut pair.server
        };
        let mut d = bytes::BytesMut::from(datagram);
        let stride = d.len().max(1);
        ep.handle_batch(pair.now, from, None, None, &mut d, stride, true, |_, _| {});
        // The same bytes as the start of a datagram an ICMP error quotes.
        ep.handle_unreachable(pair.now, from, datagram, len % 2 == 0);
        let size = 1100 + (len as u16 % 8) * 100;
        ep.handle_too_big(pair.now, from, datagram, size);
        // Everything either side answers is sent nowhere; it must drain.
        outgoing(&mut pair.client, pair.now, &mut buf);
        outgoing(&mut pair.server, pair.now, &mut buf);
        pair.now += Duration::from_millis(u64::from((target >> 3) & 0xf));
        let now = pair.now;
        for ep in [&mut pair.client, &mut pair.server] {
            let hs: Vec<_> = ep.handles().collect();
            for h in hs {
                ep.handle_timeout(h, now);
            }
        }
        assert!(
            pair.server.handles().count() <= MAX_CONNECTIONS,
            "server holds {} connections",
            pair.server.handles().count()
        );
    }
});
