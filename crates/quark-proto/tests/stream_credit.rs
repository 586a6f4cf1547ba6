//! MAX_STREAMS: raised as streams close, carried by packets that go out
//! anyway while the peer has credit to spare, sent on its own once it runs low.

mod common;

use std::time::Duration;

use common::{Sim, Tls, payload, seed};
use quark_proto::{
    ConnectionHandle, Dir, ReadOutcome, ServerConfig, StreamError, StreamId, TransportConfig,
};

const LIMIT: u64 = 16;

fn pair(seed: u64) -> (Sim, ConnectionHandle, ConnectionHandle) {
    let tls = Tls::new();
    let mut server = ServerConfig::new(tls.server_config(None));
    server.transport = TransportConfig {
        max_concurrent_bidi_streams: LIMIT,
        ..TransportConfig::default()
    }
    .into();
    let mut sim = Sim::new(seed, server, Default::default());
    sim.set_delay(Duration::from_millis(1));
    let c = sim.connect(&tls);
    let s = sim.handshake(c);
    // Let the handshake's last frames (HANDSHAKE_DONE, connection IDs) settle.
    sim.run_for(Duration::from_millis(200));
    (sim, c, s)
}

/// Reads `id` on the given side; whether its end has arrived (false too while
/// the stream's first frame has not).
fn read_all(
    sim: &mut Sim,
    client: bool,
    h: ConnectionHandle,
    id: StreamId,
    into: &mut Vec<u8>,
) -> bool {
    let ep = if client {
        &mut sim.client
    } else {
        &mut sim.server
    };
    let conn = ep.connection_mut(h).unwrap();
    let mut buf = [0u8; 4096];
    loop {
        match conn.read(id, &mut buf) {
            Ok(ReadOutcome::Data(n)) => into.extend_from_slice(&buf[..n]),
            Ok(ReadOutcome::Finished) => return true,
            Ok(ReadOutcome::Blocked) | Err(StreamError::UnknownStream) => return false,
            Err(e) => panic!("read on {id:?}: {e}"),
        }
    }
}

fn send_all(sim: &mut Sim, client: bool, h: ConnectionHandle, id: StreamId, data: &[u8]) {
    let ep = if client {
        &mut sim.client
    } else {
        &mut sim.server
    };
    let conn = ep.connection_mut(h).unwrap();
    assert_eq!(conn.write(id, data).unwrap(), data.len());
    conn.finish(id).unwrap();
}

/// Whether the server's connection would send a packet now.
fn server_wants_to_send(sim: &mut Sim, s: ConnectionHandle) -> bool {
    let now = sim.now;
    let mut buf = Vec::new();
    let sent = sim
        .server
        .connection_mut(s)
        .unwrap()
        .poll_transmit(now, 1, &mut buf)
        .is_some();
    sim.server.sync(s);
    sent
}

#[test]
fn one_request_at_a_time_costs_one_packet_each_way() {
    let (mut sim, c, s) = pair(seed(81));
    let requests = 6 * LIMIT as usize;
    for i in 0..requests {
        let request = payload(300, i as u8);
        let id = sim.client.connection_mut(c).unwrap().open_stream(Dir::Bi);
        let id = id.unwrap_or_else(|| panic!("no stream credit for request {i}"));
        send_all(&mut sim, true, c, id, &request);
        // Deliver the request; the server application has not answered yet.
        let mut got = Vec::new();
        sim.run_until(1_000, |sim| {
            let conn = sim.server.connection_mut(s).unwrap();
            while conn.accept_stream(Dir::Bi).is_some() {}
            read_all(sim, false, s, id, &mut got)
        });
        assert_eq!(got, request, "request {i}");
        // The request's ACK freed the previous stream: the limit rises (every
        // second stream here), but with most of the credit left that must not
        // cost a packet of its own (nor the client's ACK of it).
        assert!(
            !server_wants_to_send(&mut sim, s),
            "request {i}: the server sends a packet before its response"
        );
        let response = payload(500, !(i as u8));
        send_all(&mut sim, false, s, id, &response);
        let before = sim.delivered;
        let mut back = Vec::new();
        sim.run_until(1_000, |sim| read_all(sim, true, c, id, &mut back));
        assert_eq!(back, response, "response {i}");
        assert_eq!(sim.delivered.1 - before.1, 1, "response {i}: one datagram");
    }
}

#[test]
fn low_credit_is_raised_without_other_traffic() {
    let (mut sim, c, s) = pair(seed(82));
    // The client uses 10 of its 16 streams at once.
    let ids: Vec<StreamId> = (0..10)
        .map(|_| {
            sim.client
                .connection_mut(c)
                .unwrap()
                .open_stream(Dir::Bi)
                .unwrap()
        })
        .collect();
    for (i, &id) in ids.iter().enumerate() {
        send_all(&mut sim, true, c, id, &payload(100, i as u8));
    }
    let mut answered = 0;
    sim.run_until(10_000, |sim| {
        let conn = sim.server.connection_mut(s).unwrap();
        while conn.accept_stream(Dir::Bi).is_some() {}
        for &id in &ids[answered..] {
            let mut got = Vec::new();
            if !read_all(sim, false, s, id, &mut got) {
                break;
            }
            send_all(sim, false, s, id, &payload(100, 0xee));
            answered += 1;
        }
        answered == ids.len()
    });
    for &id in &ids {
        let mut got = Vec::new();
        sim.run_until(1_000, |sim| read_all(sim, true, c, id, &mut got));
        assert_eq!(got, payload(100, 0xee));
    }
    // Nothing else happens: the server application is done. The client's
    // ACKs free the server's streams; 6 of 16 left is low, so the raise goes
    // out on its own.
    sim.run_for(Duration::from_millis(500));
    let mut opened = 0;
    while sim
        .client
        .connection_mut(c)
        .unwrap()
        .open_stream(Dir::Bi)
        .is_some()
    {
        opened += 1;
    }
    assert_eq!(
        opened, LIMIT,
        "the client can open a whole limit's worth again"
    );
}
