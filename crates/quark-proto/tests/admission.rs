//! What an unauthenticated peer can make a server hold: Initials without
//! CRYPTO data make no connection, and pieces of a ClientHello count as
//! half-open connections as its start does; half-open connections are counted per
//! server and per source; past the limits the server switches to Retry, then
//! refuses, and switches back as the load falls; a handshake never finished
//! is given up after `handshake_timeout`; a legitimate client is served
//! during a flood.

mod common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::app::Echo;
use common::{Sim, Tls, payload, seed};
use quark_proto::config::HandshakeLimits;
use quark_proto::crypto::tls::TlsSession;
use quark_proto::endpoint::local_params;
use quark_proto::frame::{Crypto, Frame, Iter};
use quark_proto::packet::craft::{client_initial, open_server_initial};
use quark_proto::packet::{HeaderType, PartialDecode, VERSION_1};
use quark_proto::{
    ConnectionId, DatagramEvent, Endpoint, EndpointConfig, MemoryBudget, PacketKind, ServerConfig,
    TransportConfig, TransportErrorCode,
};

const CID_LEN: usize = 8;

fn server(tls: &Tls, limits: HandshakeLimits) -> Endpoint {
    let mut config = ServerConfig::new(tls.server_config(None));
    config.handshakes = limits;
    let endpoint = EndpointConfig {
        rng_seed: Some(seed(90)),
        ..EndpointConfig::default()
    };
    Endpoint::new(Arc::new(endpoint), Some(Arc::new(config)))
}

/// Limits small enough for a test to reach each of them.
const SMALL_LIMITS: HandshakeLimits = HandshakeLimits {
    max_half_open: 30,
    max_half_open_per_source: 12,
    retry_above: 10,
};

/// A real ClientHello (the CRYPTO bytes of a client's first Initial).
fn client_hello(tls: &Tls) -> Vec<u8> {
    let mut params = local_params(&TransportConfig::default());
    params.initial_source_connection_id = Some(ConnectionId::new(&[1; 8]).unwrap());
    let mut session = TlsSession::client(tls.client_config(None), "localhost", &params).unwrap();
    let mut out = Vec::new();
    session.write_handshake(&mut out);
    assert!(out.len() > 100 && out[0] == 1, "a ClientHello");
    out
}

fn crypto(offset: u64, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    Frame::Crypto(Crypto { offset, data }).encode(&mut out);
    out
}

fn cid(n: u64) -> ConnectionId {
    ConnectionId::new(&n.to_be_bytes()).unwrap()
}

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

#[allow(clippy::disallowed_methods)] // the start of a simulated clock
fn start() -> Instant {
    Instant::now()
}

/// Hand the server one datagram; its stateless answers, if any.
fn send(
    ep: &mut Endpoint,
    now: Instant,
    from: SocketAddr,
    mut d: Vec<u8>,
) -> (Option<DatagramEvent>, Vec<Vec<u8>>) {
    let event = ep.handle_datagram(now, from, None, None, &mut d);
    let mut out = Vec::new();
    let mut buf = Vec::new();
    while let Some(t) = ep.poll_transmit(&mut buf) {
        assert_eq!(t.destination, from);
        out.push(buf[..t.size].to_vec());
    }
    (event, out)
}

#[test]
fn initials_without_a_client_hello_keep_no_state() {
    let tls = Tls::new();
    let mut ep = server(&tls, HandshakeLimits::default());
    let now = start();
    let hello = client_hello(&tls);
    let mut ping = Vec::new();
    Frame::Ping.encode(&mut ping);
    for n in 0..2_000u64 {
        let from = addr(&format!("10.1.{}.{}:4000", n / 250, n % 250));
        let (event, out) = send(
            &mut ep,
            now,
            from,
            client_initial(VERSION_1, &cid(n), &cid(1), &[], 0, &ping),
        );
        assert_eq!(event, None, "datagram {n}");
        assert!(out.is_empty(), "nothing to answer");
    }
    assert!(ep.is_empty());
    assert_eq!(ep.half_open(), (0, 0));
    assert_eq!(ep.table_sizes(), (0, 0));
    // The same endpoint still takes a real ClientHello.
    let (event, _) = send(
        &mut ep,
        now,
        addr("10.9.9.9:1"),
        client_initial(
            VERSION_1,
            &cid(1 << 40),
            &cid(1),
            &[],
            0,
            &crypto(0, &hello),
        ),
    );
    assert!(matches!(event, Some(DatagramEvent::NewConnection(_))));
    assert_eq!(ep.half_open(), (1, 1));
}

/// A later piece of a ClientHello (split over several Initials, its start
/// lost) keeps a half-open connection, acknowledged so that the client
/// resends the start at once, and counts against the same limits as a
/// ClientHello's start: past `retry_above`, a Retry.
#[test]
fn clienthello_pieces_are_half_open_connections_under_the_same_limits() {
    let tls = Tls::new();
    let mut ep = server(&tls, SMALL_LIMITS);
    let now = start();
    let hello = client_hello(&tls);
    let attacker = addr("10.6.6.7:666");
    let (mut accepted, mut retries) = (0, 0);
    for n in 0..40u64 {
        let frames = match n % 2 {
            0 => crypto(1, &hello[1..]),
            _ => crypto(600, &[0x55; 300]),
        };
        let (event, out) = send(
            &mut ep,
            now,
            attacker,
            client_initial(VERSION_1, &cid(n), &cid(n), &[], 0, &frames),
        );
        match event {
            Some(DatagramEvent::NewConnection(h)) => {
                accepted += 1;
                let mut buf = Vec::new();
                let answer = ep
                    .connection_mut(h)
                    .unwrap()
                    .poll_transmit(now, 1, &mut buf);
                let size = answer.expect("the piece is acknowledged").size;
                let (packet, frames) =
                    open_server_initial(&buf[..size], &cid(n), CID_LEN).expect("an Initial");
                let frames = Iter::new(&packet[frames], PacketKind::Initial);
                assert!(frames.flatten().any(|f| matches!(f, Frame::Ack(_))));
                assert!(out.is_empty());
            }
            Some(DatagramEvent::Response) => {
                let pd = PartialDecode::new(&out[0], CID_LEN).unwrap();
                assert_eq!(pd.ty, HeaderType::Retry);
                retries += 1;
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!((accepted, retries), (10, 30));
    assert_eq!(ep.half_open(), (10, 1));
}

/// The error code of the CONNECTION_CLOSE in a server's Initial.
fn close_code(datagram: &[u8], client_dcid: &ConnectionId) -> Option<u64> {
    let (packet, frames) = open_server_initial(datagram, client_dcid, CID_LEN)?;
    Iter::new(&packet[frames], PacketKind::Initial).find_map(|f| match f {
        Ok(Frame::Close(c)) => Some(c.error_code),
        _ => None,
    })
}

#[test]
fn a_flood_of_handshakes_meets_retry_then_refusal_and_the_server_recovers() {
    let tls = Tls::new();
    let mut ep = server(&tls, SMALL_LIMITS);
    let now = start();
    let hello = client_hello(&tls);
    let attacker = addr("10.6.6.6:666");
    // One ClientHello replayed under fresh connection IDs.
    let mut accepted = 0;
    let mut retries = Vec::new();
    for n in 0..100u64 {
        let (event, out) = send(
            &mut ep,
            now,
            attacker,
            client_initial(VERSION_1, &cid(n), &cid(n), &[], 0, &crypto(0, &hello)),
        );
        match event {
            Some(DatagramEvent::NewConnection(_)) => accepted += 1,
            Some(DatagramEvent::Response) => {
                let pd = PartialDecode::new(&out[0], CID_LEN).unwrap();
                assert_eq!(pd.ty, HeaderType::Retry, "unvalidated: Retry, not refusal");
                retries.push((n, out[0].clone()));
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(accepted, 10, "direct accepts up to retry_above");
    assert_eq!(retries.len(), 90);
    assert_eq!(ep.half_open(), (10, 1));
    // An attacker that does answer its Retries is validated, and stopped at
    // its source's limit with CONNECTION_REFUSED.
    let mut refused = 0;
    for (n, retry) in &retries[..20] {
        let pd = PartialDecode::new(retry, CID_LEN).unwrap();
        let token = &retry[pd.token.clone()];
        let dcid = pd.src_cid;
        let (event, out) = send(
            &mut ep,
            now,
            attacker,
            client_initial(VERSION_1, &dcid, &cid(*n), token, 1, &crypto(0, &hello)),
        );
        match event {
            Some(DatagramEvent::NewConnection(_)) => {}
            Some(DatagramEvent::Response) => {
                let code = close_code(&out[0], &dcid);
                assert_eq!(code, Some(TransportErrorCode::CONNECTION_REFUSED.0));
                refused += 1;
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(ep.half_open(), (12, 1), "the source's limit");
    assert_eq!(refused, 18);
    // Other sources, validated, fill the server's limit; then everyone is refused.
    for n in 0..30u64 {
        let from = addr(&format!("10.7.0.{n}:5000"));
        let (_, out) = send(
            &mut ep,
            now,
            from,
            client_initial(
                VERSION_1,
                &cid(1000 + n),
                &cid(n),
                &[],
                0,
                &crypto(0, &hello),
            ),
        );
        let Some(retry) = out.first() else { continue };
        let pd = PartialDecode::new(retry, CID_LEN).unwrap();
        let token = retry[pd.token.clone()].to_vec();
        send(
            &mut ep,
            now,
            from,
            client_initial(
                VERSION_1,
                &pd.src_cid,
                &cid(n),
                &token,
                1,
                &crypto(0, &hello),
            ),
        );
    }
    assert_eq!(ep.half_open().0, 30);
    // None of them finishes: after the handshake timeout they are all gone,
    // and the server accepts directly again.
    let later = now + TransportConfig::default().handshake_timeout + Duration::from_millis(1);
    let handles: Vec<_> = ep.handles().collect();
    for h in handles {
        ep.handle_timeout(h, later);
        let conn = ep.connection(h).unwrap();
        assert!(conn.is_closed(), "handshake given up");
        assert!(!conn.is_handshake_complete());
        if conn.is_drained() {
            ep.remove(h);
        }
    }
    assert_eq!(ep.half_open(), (0, 0));
    assert!(ep.is_empty(), "{} left", ep.len());
    let (event, _) = send(
        &mut ep,
        later,
        attacker,
        client_initial(
            VERSION_1,
            &cid(1 << 50),
            &cid(1),
            &[],
            0,
            &crypto(0, &hello),
        ),
    );
    assert!(matches!(event, Some(DatagramEvent::NewConnection(_))));
}

#[test]
fn a_bad_client_hello_is_answered_and_forgotten() {
    let tls = Tls::new();
    let mut ep = server(&tls, HandshakeLimits::default());
    let now = start();
    // A handshake message of an unexpected type: TLS refuses it.
    let garbage = [&[2u8, 0, 0, 4][..], &[0; 4]].concat();
    let dcid = cid(77);
    let (event, out) = send(
        &mut ep,
        now,
        addr("10.3.3.3:3"),
        client_initial(VERSION_1, &dcid, &cid(1), &[], 0, &crypto(0, &garbage)),
    );
    assert_eq!(event, Some(DatagramEvent::Response));
    let code = close_code(&out[0], &dcid).expect("a CONNECTION_CLOSE");
    assert!(
        (0x100..0x200).contains(&code) || code == TransportErrorCode::PROTOCOL_VIOLATION.0,
        "{code:#x}"
    );
    assert!(ep.is_empty());
    assert_eq!(ep.half_open(), (0, 0));
}

#[test]
fn a_legitimate_client_is_served_during_a_flood() {
    let tls = Tls::new();
    let mut config = ServerConfig::new(tls.server_config(None));
    config.handshakes = HandshakeLimits {
        max_half_open: 64,
        max_half_open_per_source: 32,
        retry_above: 16,
    };
    let mut sim = Sim::new(seed(91), config, EndpointConfig::default());
    let hello = client_hello(&tls);
    // Before the client starts, the flood has filled the direct-accept slots:
    // the client is asked to validate its address (one more round trip).
    let attacker = addr("10.6.6.6:666");
    let mut n = 0u64;
    let mut flood = |sim: &mut Sim, count: u64| {
        for _ in 0..count {
            let mut d = client_initial(VERSION_1, &cid(n), &cid(n), &[], 0, &crypto(0, &hello));
            n += 1;
            sim.server
                .handle_datagram(sim.now, attacker, None, None, &mut d);
        }
    };
    flood(&mut sim, 40);
    assert_eq!(sim.server.half_open(), (16, 1));
    let c = sim.connect(&tls);
    let data = payload(200_000, 3);
    let mut echo = Echo::new(c, vec![data]);
    let mut rounds = 0;
    while !echo.done() {
        flood(&mut sim, 50);
        echo.drive(&mut sim);
        assert!(sim.step(), "the simulation stopped");
        rounds += 1;
        assert!(rounds < 200_000, "the client was not served");
    }
    assert!(sim.client.connection(c).unwrap().is_handshake_complete());
    // The flood went on all along: the server held its limits throughout.
    assert!(sim.server.half_open().0 <= 64);
}

#[test]
fn past_the_memory_budget_new_connections_are_refused_until_memory_is_back() {
    let tls = Tls::new();
    let mut config = ServerConfig::new(tls.server_config(None));
    config.memory = MemoryBudget::new(100_000);
    let budget = config.memory.clone();
    let endpoint = EndpointConfig {
        rng_seed: Some(seed(92)),
        ..EndpointConfig::default()
    };
    let mut ep = Endpoint::new(Arc::new(endpoint), Some(Arc::new(config)));
    let now = start();
    let hello = client_hello(&tls);
    let mut accepted = 0;
    let mut refused = 0;
    for n in 0..40u64 {
        let from = addr(&format!("10.8.0.{n}:443"));
        let dcid = cid(5000 + n);
        let (event, out) = send(
            &mut ep,
            now,
            from,
            client_initial(VERSION_1, &dcid, &cid(n), &[], 0, &crypto(0, &hello)),
        );
        match event {
            Some(DatagramEvent::NewConnection(_)) => accepted += 1,
            Some(DatagramEvent::Response) => {
                assert_eq!(
                    close_code(&out[0], &dcid),
                    Some(TransportErrorCode::CONNECTION_REFUSED.0)
                );
                refused += 1;
            }
            other => panic!("{other:?}"),
        }
    }
    assert!(
        accepted >= 2 && refused > 0,
        "{accepted} accepted, {refused} refused"
    );
    assert!(budget.exceeded());
    // Each connection counts what it holds; the budget's total is their sum.
    let held: usize = ep
        .handles()
        .map(|h| ep.connection(h).unwrap().memory())
        .sum();
    assert_eq!(budget.used(), held);
    assert!(
        held <= 100_000 + held / accepted,
        "at most one connection past the limit"
    );
    // When they are gone, so is their memory, and connections are accepted again.
    let later = now + TransportConfig::default().handshake_timeout + Duration::from_millis(1);
    let handles: Vec<_> = ep.handles().collect();
    for h in handles {
        ep.handle_timeout(h, later);
        ep.remove(h);
    }
    assert_eq!(budget.used(), 0);
    let (event, _) = send(
        &mut ep,
        later,
        addr("10.8.1.1:1"),
        client_initial(VERSION_1, &cid(9999), &cid(1), &[], 0, &crypto(0, &hello)),
    );
    assert!(matches!(event, Some(DatagramEvent::NewConnection(_))));
}
