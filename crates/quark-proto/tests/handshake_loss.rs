//! Handshakes under heavy loss (the interop runner's handshakeloss and
//! handshakecorruption cases): every seeded handshake completes, and the
//! client's Initial probes always carry the ClientHello (RFC 9002 §6.2.4), so
//! a server never meets a connection that begins without a CRYPTO frame.

mod common;

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use common::{Sim, Tls, seed};
use quark_proto::frame::{Frame, Iter};
use quark_proto::packet::craft::open_client_initial;
use quark_proto::{ClientConfig, EndpointConfig, PacketKind, ServerConfig, TransportConfig};

/// Simulated time a handshake may take at 30 % loss: the default
/// handshake timeout. The PTO backs off from 1 s (no RTT sample yet), so a
/// flight lost four times in a row needs the PTO at 15 s.
const BOUND: Duration = Duration::from_secs(30);

/// Run a fresh handshake under `impair`; the simulated time it took, or
/// `None` if it did not complete within [`BOUND`].
fn handshake_time(
    tls: &Tls,
    seed: u64,
    impair: impl FnMut(&mut common::LinkConfig),
) -> Option<Duration> {
    handshake_within(tls, seed, impair, BOUND)
}

/// [`handshake_time`] with another bound.
fn handshake_within(
    tls: &Tls,
    seed: u64,
    impair: impl FnMut(&mut common::LinkConfig),
    bound: Duration,
) -> Option<Duration> {
    // The default handshake timeout (10 s) bounds half-open state under
    // floods and cuts off ~1 in 1 000 handshakes at 30 % loss; this measures
    // loss recovery, so it allows the whole bound.
    let transport = Arc::new(TransportConfig {
        handshake_timeout: bound,
        max_idle_timeout: bound.max(Duration::from_secs(30)),
        ..TransportConfig::default()
    });
    let mut server = ServerConfig::new(tls.server_config(None));
    server.transport = transport.clone();
    let mut sim = Sim::new(seed, server, EndpointConfig::default());
    sim.set_delay(Duration::from_millis(10));
    sim.impair(impair);
    let start = sim.now;
    let mut client = ClientConfig::new(tls.client_config(None));
    client.transport = transport;
    let c = sim.connect_with(client);
    loop {
        let client = sim.client.connection(c).unwrap();
        if client.error().is_some() {
            return None; // the handshake (or idle) timeout
        }
        let server_done = sim.server_handles.first().is_some_and(|&h| {
            sim.server
                .connection(h)
                .is_some_and(|s| s.is_handshake_complete())
        });
        if client.is_handshake_complete() && server_done {
            return Some(sim.now - start);
        }
        if sim.now - start > bound || !sim.step() {
            return None;
        }
    }
}

/// A certificate of ~6 KB (many names): the server's first flight exceeds
/// three times the client's Initial, so the server waits on the
/// anti-amplification limit (RFC 9000 §8.1) for more client datagrams.
/// At 30 % loss 9 of 5 000 such handshakes still take over 30 s (PTO
/// backoff while the client's ACKs are lost too); see `big_cert_tail`.
fn big_tls() -> Tls {
    let names = (0..250)
        .map(|i| format!("host-{i:04}.example.com"))
        .chain(["localhost".into()]);
    let ck = rcgen::generate_simple_self_signed(names.collect::<Vec<_>>()).unwrap();
    Tls {
        cert: ck.cert.der().clone(),
        key: rustls::pki_types::PrivatePkcs8KeyDer::from(ck.signing_key.serialize_der()).into(),
    }
}

fn run_seeds(name: &str, tls: &Tls, impair: impl Fn(&mut common::LinkConfig) + Copy) {
    let base = seed(1);
    let mut failed = Vec::new();
    let mut slowest = Duration::ZERO;
    for i in 0..200 {
        match handshake_time(tls, base.wrapping_add(i), impair) {
            Some(t) => slowest = slowest.max(t),
            None => failed.push(base.wrapping_add(i)),
        }
    }
    assert!(
        failed.is_empty(),
        "{name}: {} of 200 handshakes stalled (seeds {failed:?})",
        failed.len()
    );
    eprintln!("{name}: slowest handshake {slowest:?}");
}

#[test]
fn handshakes_complete_at_30_percent_loss() {
    run_seeds("loss", &Tls::new(), |c| c.loss = 0.3);
}

#[test]
fn handshakes_complete_at_30_percent_corruption() {
    run_seeds("corruption", &Tls::new(), |c| c.corrupt = 0.3);
}

/// Whether a client datagram's first packet is an Initial holding a CRYPTO frame.
fn has_crypto(datagram: &[u8]) -> bool {
    let Some((packet, frames)) = open_client_initial(datagram, 8) else {
        return false;
    };
    Iter::new(&packet[frames], PacketKind::Initial).any(|f| matches!(f, Ok(Frame::Crypto(_))))
}

/// Drops the client's first `lost` datagrams, so it probes again and again;
/// every Initial it sends before the server answers must carry CRYPTO.
fn probes_carry_crypto(lost: usize) {
    let tls = Tls::new();
    let server = ServerConfig::new(tls.server_config(None));
    let mut sim = Sim::new(seed(7), server, EndpointConfig::default());
    sim.set_delay(Duration::from_millis(10));
    // (client datagrams seen, datagrams without CRYPTO, server answered)
    let seen = Rc::new(RefCell::new((0usize, 0usize, false)));
    let log = seen.clone();
    sim.filter = Some(Box::new(move |to_server, d| {
        let mut log = log.borrow_mut();
        if !to_server {
            log.2 = true;
            return true;
        }
        if log.2 {
            return true;
        }
        log.0 += 1;
        if !has_crypto(d) {
            log.1 += 1;
        }
        log.0 > lost
    }));
    let c = sim.connect(&tls);
    sim.handshake(c);
    let (count, bare, _) = *seen.borrow();
    assert!(count > lost, "only {count} client datagrams");
    assert_eq!(bare, 0, "{bare} of {count} client Initials without CRYPTO");
}

#[test]
fn client_initial_probes_carry_crypto() {
    // Both datagrams of a PTO pair lost, then the first of the next pair:
    // the second alone must start the connection.
    for lost in 1..=6 {
        probes_carry_crypto(lost);
    }
}

/// Pass a datagram only if `keep(towards the server, its number in that
/// direction from 1)`; the counts so far, (client's, server's).
fn keep_by_number(
    sim: &mut Sim,
    keep: impl Fn(bool, usize) -> bool + 'static,
) -> Rc<RefCell<(usize, usize)>> {
    let counts = Rc::new(RefCell::new((0usize, 0usize)));
    let log = counts.clone();
    sim.filter = Some(Box::new(move |to_server, _| {
        let mut n = log.borrow_mut();
        let seen = if to_server { &mut n.0 } else { &mut n.1 };
        *seen += 1;
        keep(to_server, *seen)
    }));
    counts
}

/// The server's first flight exceeds its amplification limit; one datagram of
/// it and the client's ACK are lost. The server may send nothing more until
/// the client speaks: the client must keep probing though it has received
/// Handshake packets, as none of its own was acknowledged (RFC 9002 §6.2.2.1).
#[test]
fn client_probes_while_server_is_amplification_limited() {
    let tls = big_tls();
    let server = ServerConfig::new(tls.server_config(None));
    let mut sim = Sim::new(seed(3), server, EndpointConfig::default());
    sim.set_delay(Duration::from_millis(10));
    // The client's ACK of the first flight, and a Handshake datagram of it.
    let counts = keep_by_number(&mut sim, |_, n| n != 2);
    let start = sim.now;
    let c = sim.connect(&tls);
    sim.handshake(c);
    let (_, server_datagrams) = *counts.borrow();
    assert!(server_datagrams > 3, "the first flight was not limited");
    // Done on the client's anti-deadlock PTO (~1 s before an RTT sample...
    // here one RTT is known), not on an idle or handshake timeout.
    let took = sim.now - start;
    assert!(took < Duration::from_secs(3), "handshake took {took:?}");
}

/// The server's first flight (its Initial with the ServerHello and the
/// Handshake packets after it, one datagram) is lost, and every datagram of
/// the client after its first. The server may send only twice more
/// (RFC 9000 §8.1's 3x): its Initial PTO's probes must carry the Handshake
/// flight too (RFC 9002 §6.2.4: "packets from other packet number spaces
/// with in-flight data"), or the client gets two copies of the ServerHello
/// and waits on its own backed-off probes to lift the limit.
#[test]
fn server_initial_probes_carry_the_handshake_flight() {
    let (mut sim, tls) = Sim::pair(seed(5));
    sim.set_delay(Duration::from_millis(10));
    let counts = keep_by_number(&mut sim, |to_server, n| (n == 1) == to_server);
    let c = sim.connect(&tls);
    sim.run_for(Duration::from_secs(3));
    let (_, server_datagrams) = *counts.borrow();
    assert!(server_datagrams <= 3, "the server sent past its limit");
    assert!(
        sim.client.connection(c).unwrap().is_handshake_complete(),
        "the client lacks the server's Handshake flight after 3 s"
    );
}

/// The distribution of handshake times with the ~6 KB certificate at 30 %
/// loss (`HS_SEEDS` seeds, default 1000; up to 120 s each; `HS_CERT=small`:
/// the usual certificate instead). A measurement, not a check: `cargo test
/// -p quark-proto --test handshake_loss -- --ignored --nocapture
/// big_cert_tail`.
#[test]
#[ignore]
fn big_cert_tail() {
    let n: u64 = std::env::var("HS_SEEDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let tls = match std::env::var("HS_CERT").as_deref() {
        Ok("small") => Tls::new(),
        _ => big_tls(),
    };
    let base = seed(1);
    let mut times = Vec::new();
    let mut stalled = Vec::new();
    for i in 0..n {
        let s = base.wrapping_add(i);
        match handshake_within(&tls, s, |c| c.loss = 0.3, Duration::from_secs(120)) {
            Some(t) => {
                times.push(t);
                if t > Duration::from_secs(10) {
                    eprintln!("seed {s:#x}: {t:?}");
                }
            }
            None => stalled.push(s),
        }
    }
    times.sort();
    let at = |q: f64| times[((times.len() - 1) as f64 * q) as usize];
    let over = |secs| {
        times
            .iter()
            .filter(|t| **t > Duration::from_secs(secs))
            .count()
    };
    eprintln!(
        "{n} handshakes: median {:?}, p99 {:?}, p99.9 {:?}, slowest {:?}; over 10 s: {}, over 30 s: {}, not done in 120 s: {} {stalled:x?}",
        at(0.5),
        at(0.99),
        at(0.999),
        times.last().copied().unwrap_or_default(),
        over(10),
        over(30),
        stalled.len()
    );
}

/// Seeds (with `seed(1)` at its default) whose handshake with the ~6 KB
/// certificate at 30 % loss never completed before the fix (the server's
/// ServerHello was declared lost, so no Initial PTO fired for it, and its
/// Handshake probes could not be read: 10 of 5 000 seeds), and 0x39, which
/// took 63 s while the probes resent the start of the flight.
const FORMERLY_STUCK: [u64; 11] = [
    0x23b, 0x749, 0x88e, 0x8ab, 0x8c2, 0xb6c, 0xd64, 0xd87, 0xf60, 0x10fa, 0x39,
];

/// The big-certificate handshakes that stalled or crawled now finish within
/// 40 s (simulated; each took over 60 s before). RFC 9002 §6.2.4.
#[test]
fn big_cert_probes_carry_the_data_most_likely_lost() {
    let tls = big_tls();
    let bound = Duration::from_secs(40);
    let mut slow = Vec::new();
    for s in FORMERLY_STUCK {
        let t = handshake_within(&tls, s, |c| c.loss = 0.3, bound);
        eprintln!("seed {s:#x}: {t:?}");
        if t.is_none() {
            slow.push(s);
        }
    }
    assert!(slow.is_empty(), "not done within {bound:?}: {slow:x?}");
}

/// 600 big-certificate handshakes at 30 % loss all finish within 60 s
/// (before the fix: 0x39 took 63 s and 0x23b never finished).
#[test]
fn big_cert_handshakes_finish_at_30_percent_loss() {
    let tls = big_tls();
    let bound = Duration::from_secs(60);
    let mut slow = Vec::new();
    for i in 0..600 {
        let s = 1 + i;
        if handshake_within(&tls, s, |c| c.loss = 0.3, bound).is_none() {
            slow.push(s);
        }
    }
    assert!(slow.is_empty(), "not done within {bound:?}: {slow:x?}");
}

/// Whether a datagram begins with a short (1-RTT) header.
fn is_short(d: &[u8]) -> bool {
    d.first().is_some_and(|b| b & 0x80 == 0)
}

/// Whether a datagram begins with a Handshake packet (QUIC v1).
fn is_handshake(d: &[u8]) -> bool {
    d.first().is_some_and(|b| b & 0xb0 == 0xa0)
}

/// The server's first 1-RTT datagram (HANDSHAKE_DONE) is lost and so is
/// every 1-RTT datagram of the client (its ACKs of the server's probes).
/// The client, not confirmed, probes only its Handshake space (RFC 9002
/// §6.2.1), which the server has dropped; with `late_handshake` those
/// probes reach the server, else only its first Handshake datagram
/// (the Finished) does. How long until the client is confirmed, if within
/// 20 s (simulated; 10 ms one way).
fn confirmed_after_lost_handshake_done(late_handshake: bool) -> Option<Duration> {
    let tls = Tls::new();
    let server = ServerConfig::new(tls.server_config(None));
    let mut sim = Sim::new(seed(11), server, EndpointConfig::default());
    sim.set_delay(Duration::from_millis(10));
    // (server 1-RTT datagrams seen, client Handshake datagrams seen)
    let counts = Rc::new(RefCell::new((0usize, 0usize)));
    let log = counts.clone();
    sim.filter = Some(Box::new(move |to_server, d| {
        let mut n = log.borrow_mut();
        match (to_server, is_short(d), is_handshake(d)) {
            (false, true, _) => {
                n.0 += 1;
                n.0 > 1
            }
            (true, true, _) => false,
            (true, false, true) => {
                n.1 += 1;
                late_handshake || n.1 == 1
            }
            _ => true,
        }
    }));
    let start = sim.now;
    let c = sim.connect(&tls);
    let bound = start + Duration::from_secs(20);
    sim.run_until(1_000_000, |sim| {
        sim.now > bound || sim.client.connection(c).unwrap().is_handshake_confirmed()
    });
    let took = sim.now - start;
    assert!(counts.borrow().0 >= 1, "the server sent no 1-RTT datagram");
    sim.client
        .connection(c)
        .unwrap()
        .is_handshake_confirmed()
        .then_some(took)
}

/// The client's Handshake probes, arriving after the server dropped its
/// Handshake keys, say HANDSHAKE_DONE is missing: it goes again at once
/// (before, the server's 1-RTT probes were bare PINGs and, their ACKs lost,
/// quic-go clients timed out in the runner's handshakeloss case).
#[test]
fn a_lost_handshake_done_goes_again_when_the_client_probes() {
    let took = confirmed_after_lost_handshake_done(true).expect("client never confirmed");
    assert!(
        took < Duration::from_millis(500),
        "confirmed after {took:?}"
    );
}

/// With the client's later Handshake packets lost too, the server's own
/// 1-RTT probes carry HANDSHAKE_DONE again (RFC 9000 §13.3: retransmitted
/// until acknowledged), rather than a bare PING.
#[test]
fn the_servers_probes_carry_an_unacknowledged_handshake_done() {
    let took = confirmed_after_lost_handshake_done(false).expect("client never confirmed");
    assert!(took < Duration::from_secs(3), "confirmed after {took:?}");
}

/// A ClientHello too big for one Initial (a long ALPN list) goes out in two
/// datagrams, and the first (the ClientHello's start) is lost. The server
/// keeps the connection for the later piece alone and acknowledges it, so
/// the client resends the start on its loss detection, a round trip later.
/// It used to keep nothing for an Initial that starts no ClientHello, and
/// the client waited for its PTO (1 s here); quic-go, which splits every
/// ClientHello over two Initials, then timed out now and then at 30 % loss
/// (its 5 s handshake idle timeout).
#[test]
fn a_clienthello_piece_that_arrives_alone_is_acknowledged() {
    let tls = Tls::new();
    let server = ServerConfig::new(tls.server_config(None));
    let mut sim = Sim::new(seed(12), server, EndpointConfig::default());
    sim.set_delay(Duration::from_millis(10));
    let client_datagrams = Rc::new(RefCell::new(0usize));
    let log = client_datagrams.clone();
    sim.filter = Some(Box::new(move |to_server, _| {
        if !to_server {
            return true;
        }
        let mut n = log.borrow_mut();
        *n += 1;
        *n != 1
    }));
    let mut rustls_config = (*tls.client_config(None)).clone();
    // ~1 300 bytes of protocols the server does not speak, then its own.
    rustls_config.alpn_protocols = (0..13u8)
        .map(|i| vec![b'a' + i; 100])
        .chain(rustls_config.alpn_protocols.clone())
        .collect();
    let start = sim.now;
    let c = sim.connect_with(ClientConfig::new(Arc::new(rustls_config)));
    sim.handshake(c);
    let took = sim.now - start;
    assert!(
        *client_datagrams.borrow() >= 3,
        "the ClientHello fitted one datagram"
    );
    assert!(took < Duration::from_millis(300), "handshake took {took:?}");
}

/// A client whose Handshake packets put CRYPTO before ACK (quinn's do, in
/// some): the Finished ends the server's Handshake space, and the ACK after
/// it in the same packet must not be read against that space's dropped
/// state. The server closed such connections with PROTOCOL_VIOLATION ("ACK
/// of a packet number never sent"), seen in the runner's handshakeloss case
/// with quinn's client.
#[test]
fn an_ack_after_the_finished_in_one_packet_is_ignored() {
    let (mut sim, tls) = Sim::pair(seed(13));
    sim.set_delay(Duration::from_millis(10));
    let c = sim.connect(&tls);
    sim.client
        .connection_mut(c)
        .unwrap()
        .misbehave(quark_proto::connection::Misbehave {
            crypto_before_ack: true,
            ..Default::default()
        });
    let s = sim.handshake(c);
    let mut echo = common::app::Echo::new(c, vec![common::payload(10_000, 5)]);
    common::app::run_echo(&mut sim, &mut echo, 200_000);
    assert!(echo.done());
    let server = sim.server.connection(s).unwrap();
    assert!(server.error().is_none(), "{:?}", server.error());
}

/// The server's first flight is lost; the client (an initial RTT of 100 ms,
/// as quic-go's, so its PTO comes before the server's 1 s) sends its
/// ClientHello again. The server resends its flight on that duplicate
/// rather than at its own PTO (RFC 9002 §6.2.3).
#[test]
fn a_duplicate_clienthello_brings_the_servers_flight_again_at_once() {
    let tls = Tls::new();
    let server = ServerConfig::new(tls.server_config(None));
    let mut sim = Sim::new(seed(14), server, EndpointConfig::default());
    sim.set_delay(Duration::from_millis(10));
    let server_datagrams = Rc::new(RefCell::new(0usize));
    let log = server_datagrams.clone();
    let dropped_until = Rc::new(RefCell::new(None::<usize>));
    let first_flight = dropped_until.clone();
    sim.filter = Some(Box::new(move |to_server, _| {
        if to_server {
            // The first client datagram after the server's flight is its
            // probe: from then on the server's datagrams go through.
            let n = *log.borrow();
            if n > 0 && first_flight.borrow().is_none() {
                *first_flight.borrow_mut() = Some(n);
            }
            return true;
        }
        *log.borrow_mut() += 1;
        first_flight.borrow().is_some()
    }));
    let mut client = ClientConfig::new(tls.client_config(None));
    client.transport = Arc::new(TransportConfig {
        initial_rtt: Duration::from_millis(100),
        ..TransportConfig::default()
    });
    let start = sim.now;
    let c = sim.connect_with(client);
    sim.handshake(c);
    let took = sim.now - start;
    assert!(dropped_until.borrow().is_some(), "the client never probed");
    // The client's PTO (300 ms) and a round trip: 330 ms; waiting for the
    // server's own PTO, 490 ms.
    assert!(took < Duration::from_millis(400), "handshake took {took:?}");
}
