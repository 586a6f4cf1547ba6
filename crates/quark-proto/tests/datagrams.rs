//! Unreliable datagrams (RFC 9221) between two simulated endpoints:
//! negotiation, delivery checked byte for byte, size limits on both sides,
//! no retransmission of lost datagrams, and bounded queues under a flood.

mod common;

use std::time::Duration;

use bytes::Bytes;
use common::{Sim, Tls, payload, seed};
use quark_proto::connection::DATAGRAM_OVERHEAD;
use quark_proto::{
    ClientConfig, ConnectionError, ConnectionHandle, Dir, EndpointConfig, Event, SendDatagramError,
    ServerConfig, TransportConfig, TransportErrorCode,
};

fn transport(max_frame: Option<u16>) -> TransportConfig {
    TransportConfig {
        max_datagram_frame_size: max_frame,
        ..TransportConfig::default()
    }
}

/// A connected pair; returns the client's and the server's handles.
fn connect(
    seed: u64,
    client: TransportConfig,
    server: TransportConfig,
) -> (Sim, ConnectionHandle, ConnectionHandle) {
    let tls = Tls::new();
    let mut sc = ServerConfig::new(tls.server_config(None));
    sc.transport = server.into();
    let mut sim = Sim::new(seed, sc, EndpointConfig::default());
    let mut cc = ClientConfig::new(tls.client_config(None));
    cc.transport = client.into();
    let c = sim.connect_with(cc);
    let s = sim.handshake(c);
    // Let the handshake settle (HANDSHAKE_DONE, NEW_CONNECTION_IDs).
    sim.run_for(Duration::from_millis(100));
    (sim, c, s)
}

/// Datagram `i` of a test: its index up front, then bytes derived from it.
fn datagram(i: usize, len: usize) -> Bytes {
    let mut d = (i as u32).to_be_bytes().to_vec();
    d.extend_from_slice(&payload(len.saturating_sub(4), i as u8));
    d.truncate(len.max(4));
    Bytes::from(d)
}

fn read_all(sim: &mut Sim, s: ConnectionHandle) -> Vec<Bytes> {
    let conn = sim.server.connection_mut(s).unwrap();
    std::iter::from_fn(|| conn.read_datagram()).collect()
}

fn server_error(sim: &Sim, s: ConnectionHandle) -> TransportErrorCode {
    match sim.server.connection(s).unwrap().error() {
        Some(ConnectionError::TransportError(e)) => e.code,
        other => panic!("server ended with {other:?}"),
    }
}

#[test]
fn negotiation_follows_each_peers_parameter() {
    // The client accepts datagrams, the server does not.
    let (mut sim, c, s) = connect(seed(90), transport(Some(1200)), transport(None));
    let client = sim.client.connection_mut(c).unwrap();
    assert_eq!(client.max_datagram_payload(), None);
    assert_eq!(
        client.send_datagram(Bytes::from_static(b"x")),
        Err(SendDatagramError::UnsupportedByPeer)
    );
    // The other way is allowed: the server may send to the client.
    let server = sim.server.connection_mut(s).unwrap();
    assert!(server.max_datagram_payload().is_some());
    server.send_datagram(Bytes::from_static(b"down")).unwrap();
    sim.run_for(Duration::from_millis(50));
    let client = sim.client.connection_mut(c).unwrap();
    assert_eq!(client.read_datagram().as_deref(), Some(&b"down"[..]));
    assert!(!client.is_closed());

    // Neither: nothing to send either way.
    let (mut sim, c, s) = connect(seed(91), transport(None), transport(None));
    for conn in [
        sim.client.connection_mut(c).unwrap(),
        sim.server.connection_mut(s).unwrap(),
    ] {
        assert_eq!(conn.max_datagram_payload(), None);
    }
}

#[test]
fn payload_limit_follows_peer_and_path() {
    // 100-byte frames: type, a 2-byte length, 97 bytes of payload.
    let (mut sim, c, _) = connect(seed(92), transport(None), transport(Some(100)));
    let client = sim.client.connection_mut(c).unwrap();
    assert_eq!(client.max_datagram_payload(), Some(97));
    assert_eq!(
        client.send_datagram(datagram(0, 98)),
        Err(SendDatagramError::TooLarge)
    );
    client.send_datagram(datagram(0, 97)).unwrap();

    // A peer taking any size: the path MTU limits.
    let (mut sim, c, s) = connect(seed(93), transport(None), transport(Some(u16::MAX)));
    let client = sim.client.connection_mut(c).unwrap();
    let max = client.max_datagram_payload().unwrap();
    let mtu = client.max_datagram_size();
    assert!(max < mtu && max + 40 > mtu, "max {max} at MTU {mtu}");
    assert_eq!(
        client.send_datagram(datagram(0, max + 1)),
        Err(SendDatagramError::TooLarge)
    );
    // The largest allowed one arrives whole.
    let big = datagram(7, max);
    client.send_datagram(big.clone()).unwrap();
    sim.run_for(Duration::from_millis(50));
    assert_eq!(read_all(&mut sim, s), [big]);
}

#[test]
fn datagrams_arrive_intact_and_in_order() {
    let both = transport(Some(u16::MAX));
    let (mut sim, c, s) = connect(seed(94), both.clone(), both);
    let sent: Vec<Bytes> = (0..300).map(|i| datagram(i, 4 + i * 3)).collect();
    for chunk in sent.chunks(30) {
        let client = sim.client.connection_mut(c).unwrap();
        for d in chunk {
            client.send_datagram(d.clone()).unwrap();
        }
        sim.run_for(Duration::from_millis(5));
    }
    sim.run_for(Duration::from_millis(100));
    let events = sim.events(false, s);
    assert!(events.contains(&Event::DatagramReceived), "{events:?}");
    assert_eq!(read_all(&mut sim, s), sent);
    let (cs, ss) = (
        sim.client.connection(c).unwrap().stats(),
        sim.server.connection(s).unwrap().stats(),
    );
    assert_eq!((cs.datagram_frames_out, ss.datagram_frames_in), (300, 300));
    assert_eq!(
        cs.datagram_frames_dropped_out + ss.datagram_frames_dropped_in,
        0
    );
}

#[test]
fn datagrams_share_a_packet_with_stream_data() {
    let both = transport(Some(u16::MAX));
    let (mut sim, c, _) = connect(seed(95), both.clone(), both);
    let now = sim.now;
    let client = sim.client.connection_mut(c).unwrap();
    let before = client.stats();
    let id = client.open_stream(Dir::Bi).unwrap();
    assert_eq!(client.write(id, &payload(800, 1)).unwrap(), 800);
    for i in 0..3 {
        client.send_datagram(datagram(i, 50)).unwrap();
    }
    let mut buf = Vec::new();
    let t = client.poll_transmit(now, 1, &mut buf).expect("a datagram");
    let after = client.stats();
    assert_eq!(after.packets_out - before.packets_out, 1);
    assert_eq!(after.datagram_frames_out - before.datagram_frames_out, 3);
    assert!(t.size >= 800 + 3 * 50, "{} bytes", t.size);
}

#[test]
fn lost_datagrams_are_counted_not_resent() {
    let both = transport(Some(u16::MAX));
    let (mut sim, c, s) = connect(seed(96), both.clone(), both);
    sim.impair(|l| l.loss = 0.3);
    let count = 200;
    for i in 0..count {
        let client = sim.client.connection_mut(c).unwrap();
        client.send_datagram(datagram(i, 100)).unwrap();
        sim.run_for(Duration::from_millis(2));
    }
    sim.impair(|l| l.loss = 0.0);
    sim.run_for(Duration::from_secs(2));
    let got = read_all(&mut sim, s);
    let cs = sim.client.connection(c).unwrap().stats();
    // Each went out exactly once; some were lost and stay lost.
    assert_eq!(cs.datagram_frames_out, count as u64);
    assert!(cs.datagram_frames_lost > 0, "{cs:?}");
    assert!(got.len() < count, "all {count} arrived despite loss");
    assert!(got.len() as u64 + cs.datagram_frames_lost >= count as u64);
    // What arrived is intact, each at most once, in order.
    let mut last = None;
    for d in &got {
        let i = u32::from_be_bytes(d[..4].try_into().unwrap()) as usize;
        assert_eq!(*d, datagram(i, 100));
        assert!(last.is_none_or(|l| i > l), "{i} after {last:?}");
        last = Some(i);
    }
}

#[test]
fn send_queue_drops_oldest_when_full() {
    let mut client = transport(None);
    client.datagram_send_buffer = 10 * (100 + DATAGRAM_OVERHEAD);
    let (mut sim, c, s) = connect(seed(97), client, transport(Some(u16::MAX)));
    let conn = sim.client.connection_mut(c).unwrap();
    for i in 0..1000 {
        conn.send_datagram(datagram(i, 100)).unwrap();
    }
    assert_eq!(conn.stats().datagram_frames_dropped_out, 990);
    assert!(conn.memory() < 64 * 1024, "{} bytes", conn.memory());
    // Full: try_send refuses, and says when it has room again.
    let refused = conn.try_send_datagram(datagram(1000, 100));
    assert_eq!(
        refused,
        Err(SendDatagramError::Blocked(datagram(1000, 100)))
    );
    sim.run_for(Duration::from_millis(50));
    assert!(sim.events(true, c).contains(&Event::DatagramsWritable));
    let expected: Vec<Bytes> = (990..1000).map(|i| datagram(i, 100)).collect();
    assert_eq!(read_all(&mut sim, s), expected);
    let conn = sim.client.connection_mut(c).unwrap();
    conn.try_send_datagram(datagram(1000, 100)).unwrap();
}

#[test]
fn receive_queue_stays_bounded_under_a_flood() {
    let mut server = transport(Some(u16::MAX));
    let keep = 20;
    server.datagram_receive_buffer = keep * (100 + DATAGRAM_OVERHEAD);
    let (mut sim, c, s) = connect(seed(98), transport(None), server);
    let count = 2000;
    let mut longest = 0;
    for chunk in (0..count).collect::<Vec<_>>().chunks(100) {
        let conn = sim.client.connection_mut(c).unwrap();
        for &i in chunk {
            conn.send_datagram(datagram(i, 100)).unwrap();
        }
        sim.run_for(Duration::from_millis(10));
        let lens = sim.server.connection(s).unwrap().queue_lengths();
        let (_, n) = lens
            .iter()
            .find(|(name, _)| *name == "datagrams_in")
            .unwrap();
        longest = longest.max(*n);
    }
    sim.run_for(Duration::from_millis(100));
    assert!(longest <= keep, "{longest} datagrams held");
    let stats = sim.server.connection(s).unwrap().stats();
    assert_eq!(stats.datagram_frames_in, count as u64);
    assert_eq!(stats.datagram_frames_dropped_in, (count - keep) as u64);
    // The newest are kept, intact.
    let expected: Vec<Bytes> = (count - keep..count).map(|i| datagram(i, 100)).collect();
    assert_eq!(read_all(&mut sim, s), expected);
    assert!(!sim.server.connection(s).unwrap().is_closed());
}

/// The client sends `frames` raw; the server must close with PROTOCOL_VIOLATION.
fn expect_violation(server: TransportConfig, frames: &[u8]) {
    let (mut sim, c, s) = connect(seed(99), transport(None), server);
    sim.client
        .connection_mut(c)
        .unwrap()
        .inject_raw_frames(frames);
    sim.run_until(10_000, |sim| sim.server.connection(s).unwrap().is_closed());
    assert_eq!(
        server_error(&sim, s),
        TransportErrorCode::PROTOCOL_VIOLATION
    );
}

#[test]
fn unnegotiated_datagram_is_a_protocol_violation() {
    expect_violation(transport(None), &[0x31, 0x02, b'h', b'i']);
}

#[test]
fn oversized_datagram_is_a_protocol_violation() {
    let mut frame = vec![0x31, 0x40, 150];
    frame.extend_from_slice(&[7; 150]);
    expect_violation(transport(Some(100)), &frame);
}

#[test]
fn payload_limit_grows_with_the_discovered_path_mtu() {
    let both = transport(Some(u16::MAX));
    let (mut sim, c, s) = connect(seed(100), both.clone(), both);
    let before = sim
        .client
        .connection(c)
        .unwrap()
        .max_datagram_payload()
        .unwrap();
    // Enough datagrams that PMTU discovery starts (datagram traffic counts).
    for i in 0..200 {
        let conn = sim.client.connection_mut(c).unwrap();
        conn.send_datagram(datagram(i, 1000)).unwrap();
        sim.run_for(Duration::from_millis(1));
    }
    sim.run_for(Duration::from_secs(2));
    assert_eq!(read_all(&mut sim, s).len(), 200);
    let conn = sim.client.connection_mut(c).unwrap();
    let after = conn.max_datagram_payload().unwrap();
    // The simulated path carries 1472-byte UDP payloads.
    assert!(after > before && after < 1472, "{before} -> {after}");
    let big = datagram(1, after);
    conn.send_datagram(big.clone()).unwrap();
    // Probes above the path MTU were dropped; the datagram must not be.
    let too_big = sim.too_big;
    sim.run_for(Duration::from_millis(50));
    assert_eq!(read_all(&mut sim, s), [big]);
    assert_eq!(sim.too_big, too_big, "a datagram exceeded the path MTU");
}
