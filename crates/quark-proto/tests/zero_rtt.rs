//! 0-RTT (RFC 9000 §7.4.1, RFC 9001 §4.6) over the simulated network: a
//! resumed connection's early stream data arrives byte for byte, before the
//! handshake completes when the server accepts it, and again in 1-RTT when it
//! does not; tickets are single-use; 0-RTT that overtakes the Initial is kept
//! within a bound.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{Sim, Tls, payload, seed};
use quark_proto::{
    ClientConfig, ConnectionHandle, Dir, ReadOutcome, ServerConfig, StreamId, ZeroRtt,
};

const ONE_WAY: Duration = Duration::from_millis(10);

/// A simulation whose server issues tickets allowing early data; with
/// `accept` false it then refuses the early data all the same.
fn setup(seed: u64, accept: bool) -> (Sim, ClientConfig) {
    let (sim, client, _) = setup_with(seed, accept);
    (sim, client)
}

/// [`setup`], with the server's configuration (to start another worker).
fn setup_with(seed: u64, accept: bool) -> (Sim, ClientConfig, ServerConfig) {
    let tls = Tls::new();
    let mut server = ServerConfig::new(tls.server_config(None)).with_0rtt(64);
    server.zero_rtt = accept;
    let mut sim = Sim::new(seed, server.clone(), Default::default());
    sim.set_delay(ONE_WAY);
    let mut client = (*tls.client_config(None)).clone();
    client.enable_early_data = true;
    (sim, ClientConfig::new(Arc::new(client)), server)
}

/// A first connection, for the session ticket; left open.
fn prime(sim: &mut Sim, config: &ClientConfig) {
    let c = sim.connect_with(config.clone());
    assert_eq!(sim.client.connection(c).unwrap().zero_rtt(), ZeroRtt::None);
    assert!(!sim.client.connection(c).unwrap().is_0rtt_available());
    sim.handshake(c);
    // The tickets follow the handshake in 1-RTT CRYPTO frames.
    sim.run_for(Duration::from_millis(100));
}

/// A resumed connection writing `body` on a stream before the handshake.
fn connect_early(
    sim: &mut Sim,
    config: &ClientConfig,
    body: &[u8],
) -> (ConnectionHandle, StreamId) {
    let c = sim.connect_with(config.clone());
    let conn = sim.client.connection_mut(c).unwrap();
    assert_eq!(conn.zero_rtt(), ZeroRtt::Pending);
    assert!(conn.is_0rtt_available());
    let id = conn.open_stream(Dir::Bi).expect("a 0-RTT stream");
    assert_eq!(conn.write(id, body).unwrap(), body.len());
    conn.finish(id).unwrap();
    (c, id)
}

/// Read everything the server's newest connection received on its first
/// stream; `Some` once the stream finished.
fn server_read(sim: &mut Sim, got: &mut Vec<u8>, id: &mut Option<StreamId>) -> bool {
    let Some(&sh) = sim.server_handles.last() else {
        return false;
    };
    let Some(s) = sim.server.connection_mut(sh) else {
        return false;
    };
    if id.is_none() {
        *id = s.accept_stream(Dir::Bi);
    }
    let Some(sid) = *id else { return false };
    let mut buf = vec![0; 65536];
    loop {
        match s.read(sid, &mut buf) {
            Ok(ReadOutcome::Data(n)) => got.extend_from_slice(&buf[..n]),
            Ok(ReadOutcome::Finished) => return true,
            Ok(ReadOutcome::Blocked) => return false,
            Err(e) => panic!("server read: {e}: {:?}", s.error()),
        }
    }
}

/// Run until the server read the whole request; returns it, whether the
/// server's handshake was still under way then, and when.
fn receive(sim: &mut Sim) -> (Vec<u8>, bool, Instant) {
    let (mut got, mut id) = (Vec::new(), None);
    for _ in 0..100_000 {
        if server_read(sim, &mut got, &mut id) {
            let sh = *sim.server_handles.last().unwrap();
            let early = !sim.server.connection(sh).unwrap().is_handshake_complete();
            return (got, early, sim.now);
        }
        assert!(sim.step(), "the network went idle");
    }
    panic!("the request never arrived");
}

#[test]
fn accepted_0rtt_data_arrives_before_the_handshake_completes() {
    let (mut sim, config) = setup(seed(1), true);
    prime(&mut sim, &config);
    let body = payload(3000, 1);
    let start = sim.now;
    let (c, id) = connect_early(&mut sim, &config, &body);
    let (got, early, at) = receive(&mut sim);
    assert!(got == body, "0-RTT request differs");
    assert!(early, "the request arrived only after the handshake");
    // Half a round trip (one way), not the 1.5 round trips a full handshake
    // takes before the client's first 1-RTT data arrives.
    assert!(at - start < 2 * ONE_WAY, "arrived after {:?}", at - start);
    let sh = *sim.server_handles.last().unwrap();
    assert!(sim.server.connection(sh).unwrap().is_0rtt_accepted());
    // The server answers on the stream the client opened in 0-RTT.
    let reply = payload(20_000, 9);
    let sid = StreamId::new(quark_proto::Side::Client, Dir::Bi, 0);
    let mut written = 0;
    let mut answer = Vec::new();
    for _ in 0..100_000 {
        let s = sim.server.connection_mut(sh).unwrap();
        if written < reply.len() {
            written += s.write(sid, &reply[written..]).unwrap();
            if written == reply.len() {
                s.finish(sid).unwrap();
            }
        }
        let client = sim.client.connection_mut(c).unwrap();
        let mut buf = vec![0; 65536];
        match client.read(id, &mut buf).unwrap() {
            ReadOutcome::Data(n) => answer.extend_from_slice(&buf[..n]),
            ReadOutcome::Finished => break,
            ReadOutcome::Blocked => assert!(sim.step(), "the network went idle"),
        }
    }
    assert!(answer == reply, "the answer differs");
    let client = sim.client.connection(c).unwrap();
    assert_eq!(client.zero_rtt(), ZeroRtt::Accepted);
    assert!(client.is_0rtt_accepted());
    assert!(!client.is_0rtt_available());
}

#[test]
fn accepted_0rtt_larger_than_the_window_completes() {
    // 0-RTT leaves room in the window for the handshake; the rest of the
    // request follows in 1-RTT.
    let (mut sim, config) = setup(seed(5), true);
    prime(&mut sim, &config);
    let body = payload(100_000, 5);
    let (c, _) = connect_early(&mut sim, &config, &body);
    let (got, _, _) = receive(&mut sim);
    assert!(got == body, "request differs");
    let client = sim.client.connection(c).unwrap();
    assert_eq!(client.zero_rtt(), ZeroRtt::Accepted);
    assert!(client.stats().packets_out > 0);
}

#[test]
fn rejected_0rtt_data_is_replayed_in_1rtt() {
    let (mut sim, config) = setup(seed(2), false);
    prime(&mut sim, &config);
    // More than one datagram of early data.
    let body = payload(30_000, 2);
    let start = sim.now;
    let (c, _) = connect_early(&mut sim, &config, &body);
    let (got, early, at) = receive(&mut sim);
    assert!(got == body, "replayed request differs");
    assert!(!early);
    // Only after the handshake: at least 1.5 round trips.
    assert!(at - start >= 3 * ONE_WAY, "arrived after {:?}", at - start);
    sim.run_for(Duration::from_millis(200));
    let client = sim.client.connection(c).unwrap();
    assert_eq!(client.zero_rtt(), ZeroRtt::Rejected);
    assert!(!client.is_0rtt_accepted());
    assert!(client.error().is_none(), "{:?}", client.error());
    let sh = *sim.server_handles.last().unwrap();
    assert!(!sim.server.connection(sh).unwrap().is_0rtt_accepted());
}

#[test]
fn a_replayed_ticket_is_not_accepted_twice() {
    let (mut sim, config, server) = setup_with(seed(3), true);
    prime(&mut sim, &config);
    // Record the resumed connection's first datagram (ClientHello + 0-RTT).
    let first: Arc<std::sync::Mutex<Option<Vec<u8>>>> = Default::default();
    let keep = first.clone();
    sim.filter = Some(Box::new(move |to_server, d| {
        let mut k = keep.lock().unwrap();
        // A long header of type Initial (the resumed connection's first),
        // its QUIC bit maybe greased (RFC 9287: the token came from a server
        // that greases).
        if to_server && k.is_none() && d[0] & 0xb0 == 0x80 {
            *k = Some(d.clone());
        }
        true
    }));
    let body = payload(500, 3);
    connect_early(&mut sim, &config, &body);
    let (got, early, _) = receive(&mut sim);
    assert!(got == body && early);
    // An attacker replays the datagram to another worker of the server
    // (sharing its configuration, hence its ticket store).
    let mut worker = quark_proto::Endpoint::new(Default::default(), Some(Arc::new(server)));
    let mut replay = first.lock().unwrap().clone().expect("first datagram");
    let attacker = "10.9.9.9:4444".parse().unwrap();
    let event = worker.handle_datagram(sim.now, attacker, None, None, &mut replay);
    let Some(quark_proto::DatagramEvent::NewConnection(h)) = event else {
        panic!("the replayed ClientHello made no connection: {event:?}");
    };
    let conn = worker.connection_mut(h).unwrap();
    // The ticket was used up: a full handshake, the early data refused.
    assert!(!conn.is_0rtt_accepted());
    assert_eq!(conn.zero_rtt(), ZeroRtt::None);
    assert_eq!(conn.accept_stream(Dir::Bi), None);
    assert_eq!(
        conn.readable_bytes(StreamId::new(quark_proto::Side::Client, Dir::Bi, 0)),
        0
    );
}

#[test]
fn early_0rtt_datagrams_are_kept_within_a_bound() {
    let (mut sim, config) = setup(seed(4), true);
    prime(&mut sim, &config);
    // Hold back the first datagram (the Initial); let the 0-RTT-only ones
    // through, each many times over.
    let held: Arc<std::sync::Mutex<Vec<Vec<u8>>>> = Default::default();
    let hold = held.clone();
    let mut seen = 0;
    sim.filter = Some(Box::new(move |to_server, d| {
        if !to_server {
            return true;
        }
        seen += 1;
        if seen == 1 {
            hold.lock().unwrap().push(d.clone());
            return false;
        }
        for _ in 0..20 {
            hold.lock().unwrap().push(d.clone());
        }
        false
    }));
    let body = payload(6000, 4);
    let (c, _) = connect_early(&mut sim, &config, &body);
    // The client's first flight goes out.
    sim.run_for(Duration::from_millis(1));
    sim.filter = None;
    let mut flight = std::mem::take(&mut *held.lock().unwrap());
    assert!(flight.len() > 21, "only {} datagrams", flight.len());
    let initial = flight.remove(0);
    let (from, now) = (sim.client_addr, sim.now);
    for mut d in flight {
        assert!(
            sim.server
                .handle_datagram(now, from, None, None, &mut d)
                .is_none()
        );
        assert!(sim.server.early_datagrams() <= quark_proto::endpoint::MAX_EARLY_DATAGRAMS);
    }
    assert_eq!(
        sim.server.early_datagrams(),
        quark_proto::endpoint::MAX_EARLY_DATAGRAMS
    );
    let mut initial = initial;
    let event = sim
        .server
        .handle_datagram(now, from, None, None, &mut initial);
    let Some(quark_proto::DatagramEvent::NewConnection(h)) = event else {
        panic!("no connection: {event:?}");
    };
    sim.server_handles.push(h);
    // The kept datagrams went to the new connection and were opened at once.
    assert_eq!(sim.server.early_datagrams(), 0);
    let conn = sim.server.connection(h).unwrap();
    assert!(conn.is_0rtt_accepted());
    assert!(conn.readable_bytes(StreamId::new(quark_proto::Side::Client, Dir::Bi, 0)) > 0);
    // What the bound dropped comes again; the request arrives whole.
    let (got, _, _) = receive(&mut sim);
    assert!(got == body, "request differs");
    sim.run_until(10_000, |s| {
        s.client.connection(c).unwrap().is_handshake_complete()
    });
    assert!(sim.client.connection(c).unwrap().is_0rtt_accepted());
}

#[test]
fn zero_rtt_after_a_retry_arrives_whole() {
    // The server demands a Retry: the 0-RTT packets sent with the first
    // Initial are dropped, and their data goes again after the handshake.
    let tls = Tls::new();
    let mut server = ServerConfig::new(tls.server_config(None)).with_0rtt(64);
    server.retry = true;
    let mut sim = Sim::new(seed(6), server, Default::default());
    sim.set_delay(ONE_WAY);
    let mut client = (*tls.client_config(None)).clone();
    client.enable_early_data = true;
    let config = ClientConfig::new(Arc::new(client));
    prime(&mut sim, &config);
    let body = payload(8000, 6);
    let (c, _) = connect_early(&mut sim, &config, &body);
    let (got, _, _) = receive(&mut sim);
    assert!(got == body, "request differs");
    sim.run_until(10_000, |s| {
        s.client.connection(c).unwrap().is_handshake_complete()
    });
    assert!(sim.client.connection(c).unwrap().error().is_none());
}

#[test]
fn zero_rtt_before_the_rest_of_the_client_hello_is_buffered_with_a_bound() {
    // Many ALPN names make a ClientHello of two Initials. 0-RTT that comes
    // after the first (the connection exists) but before the second (no
    // early keys yet) waits in the connection, within a bound.
    let tls = Tls::new();
    let server = ServerConfig::new(tls.server_config(None)).with_0rtt(64);
    let mut sim = Sim::new(seed(7), server, Default::default());
    sim.set_delay(ONE_WAY);
    let mut client = (*tls.client_config(None)).clone();
    client.enable_early_data = true;
    client.alpn_protocols = (0..120)
        .map(|i| format!("unknown-protocol-{i:03}").into_bytes())
        .chain([common::ALPN.to_vec()])
        .collect();
    let config = ClientConfig::new(Arc::new(client));
    prime(&mut sim, &config);

    let held: Arc<std::sync::Mutex<Vec<Vec<u8>>>> = Default::default();
    let hold = held.clone();
    sim.filter = Some(Box::new(move |to_server, d| {
        if to_server {
            hold.lock().unwrap().push(d.clone());
        }
        !to_server
    }));
    let body = payload(8000, 7);
    let (c, _) = connect_early(&mut sim, &config, &body);
    sim.run_for(Duration::from_millis(1));
    sim.filter = None;
    let flight = std::mem::take(&mut *held.lock().unwrap());
    assert!(flight.len() >= 4, "{} datagrams", flight.len());
    // Every datagram carrying an Initial is padded to 1 200 bytes.
    assert!(
        flight.iter().all(|d| d.len() >= 1200),
        "{:?}",
        flight.iter().map(Vec::len).collect::<Vec<_>>()
    );
    let (from, now) = (sim.client_addr, sim.now);
    let deliver = |sim: &mut Sim, d: &[u8]| {
        let mut d = d.to_vec();
        sim.server.handle_datagram(now, from, None, None, &mut d)
    };
    // The first Initial makes the connection; then the 0-RTT-only
    // datagrams, many times over; then the rest of the ClientHello.
    let Some(quark_proto::DatagramEvent::NewConnection(h)) = deliver(&mut sim, &flight[0]) else {
        panic!("no connection from the first Initial");
    };
    sim.server_handles.push(h);
    for _ in 0..10 {
        for d in &flight[2..] {
            deliver(&mut sim, d);
        }
    }
    let conn = sim.server.connection(h).unwrap();
    assert_eq!(conn.zero_rtt(), ZeroRtt::None);
    let kept = conn.buffered_0rtt_packets();
    assert!(kept > 0 && kept <= 16, "{kept} packets kept");
    deliver(&mut sim, &flight[1]);
    let conn = sim.server.connection(h).unwrap();
    assert!(conn.is_0rtt_accepted());
    assert_eq!(conn.buffered_0rtt_packets(), 0);
    assert!(conn.readable_bytes(StreamId::new(quark_proto::Side::Client, Dir::Bi, 0)) > 0);
    let (got, _, _) = receive(&mut sim);
    assert!(got == body, "request differs");
    sim.run_until(10_000, |s| {
        s.client.connection(c).unwrap().is_handshake_complete()
    });
    assert!(sim.client.connection(c).unwrap().is_0rtt_accepted());
}
