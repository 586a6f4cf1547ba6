//! The latency spin bit (RFC 9000 §17.4) as an observer on the path sees
//! it: the bit of the client's 1-RTT packets flips once per round trip,
//! so the time between flips is the RTT; with the bit turned off it never
//! flips while the connection ID stays the same.

mod common;

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{Sim, Tls, payload, read_more, seed};
use quark_proto::{ClientConfig, Dir, EndpointConfig, ServerConfig, TransportConfig};

/// What an observer saw of the client's 1-RTT packets: (time, destination
/// connection ID, spin bit).
type Seen = Rc<RefCell<Vec<(Instant, Vec<u8>, bool)>>>;

/// A client uploads 3 MB over a 50 ms RTT path with `spin_bit` on both
/// sides; what the observer saw, and whether both connections spin. The
/// upload arrives byte for byte.
fn upload(tls: &Tls, seed: u64, spin_bit: bool) -> (Vec<(Instant, Vec<u8>, bool)>, bool) {
    let transport = Arc::new(TransportConfig {
        spin_bit,
        ..TransportConfig::default()
    });
    let mut server = ServerConfig::new(tls.server_config(None));
    server.transport = transport.clone();
    let mut sim = Sim::new(seed, server, EndpointConfig::default());
    sim.set_delay(Duration::from_millis(25));
    let seen: Seen = Rc::default();
    let log = seen.clone();
    sim.watch = Some(Box::new(move |now, to_server, d| {
        // A short header: form bit 0. Its spin bit (0x20) is not protected.
        if to_server && d.first().is_some_and(|b| b & 0x80 == 0) {
            let dcid = d.get(1..9).unwrap_or_default().to_vec();
            log.borrow_mut().push((now, dcid, d[0] & 0x20 != 0));
        }
    }));
    let mut client = ClientConfig::new(tls.client_config(None));
    client.transport = transport;
    let c = sim.connect_with(client);
    let s = sim.handshake(c);
    let both = sim.client.connection(c).unwrap().spin_bit_enabled()
        && sim.server.connection(s).unwrap().spin_bit_enabled();
    let data = payload(3_000_000, 5);
    let id = sim
        .client
        .connection_mut(c)
        .unwrap()
        .open_stream(Dir::Uni)
        .unwrap();
    let (mut sent, mut got) = (0, Vec::new());
    sim.run_until(1_000_000, |sim| {
        let conn = sim.client.connection_mut(c).unwrap();
        if sent < data.len() {
            sent += conn.write(id, &data[sent..]).unwrap();
            if sent == data.len() {
                conn.finish(id).unwrap();
            }
        }
        let conn = sim.server.connection_mut(s).unwrap();
        let _ = conn.accept_stream(Dir::Uni);
        read_more(conn, id, &mut got)
    });
    assert!(got == data, "the upload differs");
    let seen = seen.borrow().clone();
    (seen, both)
}

/// Times between changes of the spin bit, within one connection ID.
fn flips(seen: &[(Instant, Vec<u8>, bool)]) -> Vec<Duration> {
    let mut edges = Vec::new();
    for w in seen.windows(2) {
        if w[0].1 == w[1].1 && w[0].2 != w[1].2 {
            edges.push(w[1].0);
        }
    }
    edges.windows(2).map(|e| e[1] - e[0]).collect()
}

#[test]
fn an_observer_reads_the_rtt_from_the_spin_bit() {
    let tls = Tls::new();
    // One connection in sixteen never spins: take the first seed where both do.
    let (seen, _) = (seed(11)..)
        .take(20)
        .map(|seed| upload(&tls, seed, true))
        .find(|(_, both)| *both)
        .expect("both sides spin within 20 seeds");
    let mut gaps = flips(&seen);
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
    let (seen, both) = upload(&tls, seed(11), false);
    assert!(!both, "no connection spins with spin_bit off");
    assert!(seen.len() > 100, "the upload was seen");
    assert!(
        flips(&seen).is_empty()
            && seen
                .windows(2)
                .all(|w| w[0].1 != w[1].1 || w[0].2 == w[1].2)
    );
}
