//! The readable bits of the 1-RTT header as an observer on the path sees
//! them:
//! - the latency spin bit (RFC 9000 §17.4): the bit of the client's 1-RTT
//!   packets flips once per round trip, so the time between flips is the
//!   RTT; with the bit turned off it never flips while the connection ID
//!   stays the same;
//! - the QUIC bit greased (RFC 9287): cleared in about half the 1-RTT
//!   packets each way when both ends announce grease_quic_bit, never when
//!   they do not; the data arrives either way.

mod common;

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::upload::Upload;
use common::{Sim, Tls, about_half, seed};
use quark_proto::{ClientConfig, EndpointConfig, ServerConfig, TransportConfig};

/// One 1-RTT packet as the observer saw it.
#[derive(Clone)]
struct Short {
    at: Instant,
    to_server: bool,
    dcid: Vec<u8>,
    spin: bool,
    quic_bit: bool,
}

/// What the observer saw, and what each end did.
struct Seen {
    seen: Vec<Short>,
    /// Both connections spin.
    both_spin: bool,
    /// Whether each end greases the QUIC bit (client, server).
    greasing: (bool, bool),
}

/// A client uploads 3 MB over a 50 ms RTT path with `spin_bit` and
/// `grease_quic_bit` on both sides. The upload arrives, every byte checked.
fn upload(tls: &Tls, seed: u64, spin_bit: bool, grease_quic_bit: bool) -> Seen {
    let transport = Arc::new(TransportConfig {
        spin_bit,
        ..TransportConfig::default()
    });
    let mut server = ServerConfig::new(tls.server_config(None));
    server.transport = transport.clone();
    let endpoint = EndpointConfig {
        grease_quic_bit,
        ..EndpointConfig::default()
    };
    let mut sim = Sim::new(seed, server, endpoint);
    sim.set_delay(Duration::from_millis(25));
    let seen: Rc<RefCell<Vec<Short>>> = Rc::default();
    let log = seen.clone();
    sim.watch = Some(Box::new(move |at, to_server, d| {
        // A short header: form bit 0. Its QUIC bit (0x40) and spin bit (0x20)
        // are outside header protection.
        if let Some(&first) = d.first().filter(|b| *b & 0x80 == 0) {
            log.borrow_mut().push(Short {
                at,
                to_server,
                dcid: d.get(1..9).unwrap_or_default().to_vec(),
                spin: first & 0x20 != 0,
                quic_bit: first & 0x40 != 0,
            });
        }
    }));
    let mut client = ClientConfig::new(tls.client_config(None));
    client.transport = transport;
    let c = sim.connect_with(client);
    let s = sim.handshake(c);
    let (client, server) = (
        sim.client.connection(c).unwrap(),
        sim.server.connection(s).unwrap(),
    );
    let both_spin = client.spin_bit_enabled() && server.spin_bit_enabled();
    let greasing = (client.greases_quic_bit(), server.greases_quic_bit());
    let mut up = Upload::new(&mut sim, c, s, 3_000_000, 5);
    sim.run_until(1_000_000, |sim| {
        up.pump(sim);
        up.done()
    });
    assert!(up.done(), "the upload did not arrive");
    let seen = seen.borrow().clone();
    Seen {
        seen,
        both_spin,
        greasing,
    }
}

/// The client's packets.
fn from_client(u: &Seen) -> Vec<Short> {
    u.seen.iter().filter(|p| p.to_server).cloned().collect()
}

/// Times between changes of the spin bit, within one connection ID.
fn flips(seen: &[Short]) -> Vec<Duration> {
    let mut edges = Vec::new();
    for w in seen.windows(2) {
        if w[0].dcid == w[1].dcid && w[0].spin != w[1].spin {
            edges.push(w[1].at);
        }
    }
    edges.windows(2).map(|e| e[1] - e[0]).collect()
}

/// 1-RTT packets one way with the QUIC bit cleared, and all of them.
fn cleared(u: &Seen, to_server: bool) -> (usize, usize) {
    let way: Vec<&Short> = u.seen.iter().filter(|p| p.to_server == to_server).collect();
    (way.iter().filter(|p| !p.quic_bit).count(), way.len())
}

#[test]
fn an_observer_reads_the_rtt_from_the_spin_bit() {
    let tls = Tls::new();
    // One connection in sixteen never spins: take the first seed where both do.
    let up = (seed(11)..)
        .take(20)
        .map(|seed| upload(&tls, seed, true, true))
        .find(|u| u.both_spin)
        .expect("both sides spin within 20 seeds");
    let mut gaps = flips(&from_client(&up));
    assert!(gaps.len() >= 5, "only {} flips seen", gaps.len());
    gaps.sort();
    let median = gaps[gaps.len() / 2];
    // The RTT is 50 ms; the server's ACK delay and the client's pacing add a little.
    assert!(
        median >= Duration::from_millis(50) && median <= Duration::from_millis(65),
        "median time between flips {median:?}: {gaps:?}"
    );
}

#[test]
fn with_the_spin_bit_off_it_never_flips() {
    let tls = Tls::new();
    let up = upload(&tls, seed(11), false, true);
    assert!(!up.both_spin, "no connection spins with spin_bit off");
    let seen = from_client(&up);
    assert!(seen.len() > 100, "the upload was seen");
    assert!(flips(&seen).is_empty());
}

#[test]
fn both_ends_grease_the_quic_bit() {
    let tls = Tls::new();
    let up = upload(&tls, seed(13), true, true);
    assert_eq!(up.greasing, (true, true));
    // Unpredictable: about half, each way (the server's packets are its
    // ACKs, far fewer than the client's, so judged on how many there are).
    let (c, s) = (cleared(&up, true), cleared(&up, false));
    assert!(
        about_half(c) && about_half(s),
        "cleared: {c:?} of the client's packets, {s:?} of the server's"
    );
}

#[test]
fn without_grease_quic_bit_the_quic_bit_stays_set() {
    let tls = Tls::new();
    let up = upload(&tls, seed(13), true, false);
    assert_eq!(up.greasing, (false, false));
    assert!(up.seen.len() > 100 && up.seen.iter().all(|p| p.quic_bit));
}
