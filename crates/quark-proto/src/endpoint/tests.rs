use std::net::Ipv4Addr;

use rand::SeedableRng;

use super::*;
use crate::config::Worker;

fn worker(index: usize) -> Endpoint {
    let config = EndpointConfig {
        reset_key: [3; 32],
        rng_seed: Some(index as u64),
        worker: Worker::new(index, 2),
        ..EndpointConfig::default()
    };
    Endpoint::new(Arc::new(config), None)
}

#[allow(clippy::disallowed_methods)] // any instant will do: no timers run
fn start() -> Instant {
    Instant::now()
}

fn remote() -> SocketAddr {
    (Ipv4Addr::LOCALHOST, 5000).into()
}

/// A short-header datagram of `len` bytes to `dcid`.
fn short(dcid: &ConnectionId, len: usize) -> Vec<u8> {
    let mut d = vec![0x41];
    d.extend_from_slice(dcid);
    d.resize(len, 0xab);
    d
}

/// A long-header datagram of type `ty` (0 Initial, 2 Handshake) to `dcid`.
fn long(ty: u8, dcid: &ConnectionId, payload: usize) -> Vec<u8> {
    let mut d = vec![0xc0 | (ty << 4)];
    d.extend_from_slice(&crate::packet::VERSION_1.to_be_bytes());
    d.push(dcid.len() as u8);
    d.extend_from_slice(dcid);
    d.push(0); // SCID length
    if ty == 0 {
        d.push(0); // token length
    }
    d.extend_from_slice(&(0x4000 | payload as u16).to_be_bytes());
    d.resize(d.len() + payload, 0xcd);
    d
}

#[test]
fn another_workers_ids_are_forwarded_not_reset() {
    let mut w0 = worker(0);
    let w1 = worker(1);
    let mut rng = StdRng::seed_from_u64(9);
    let now = start();
    for _ in 0..20 {
        let theirs = w1.cids.generate(&mut rng);
        let mut d = short(&theirs, 60);
        let before = d.clone();
        let ev = w0.handle_datagram(now, remote(), None, None, &mut d);
        assert_eq!(ev, Some(DatagramEvent::Forward(1)));
        assert_eq!(d, before, "forwarded untouched");
        let mut d = long(2, &theirs, 100);
        let ev = w0.handle_datagram(now, remote(), None, None, &mut d);
        assert_eq!(ev, Some(DatagramEvent::Forward(1)));
    }
    assert!(w0.poll_transmit(&mut Vec::new()).is_none(), "no reset sent");
    // An unknown ID of its own gets the usual stateless reset.
    let ours = w0.new_cid();
    let ev = w0.handle_datagram(now, remote(), None, None, &mut short(&ours, 60));
    assert_eq!(ev, Some(DatagramEvent::Response));
}

#[test]
fn initials_stay_where_they_arrive() {
    let w1 = worker(1);
    let mut w0 = worker(0);
    w0.set_server_config(None);
    let mut rng = StdRng::seed_from_u64(10);
    let now = start();
    for _ in 0..20 {
        // An Initial whose (client-chosen) ID happens to look like worker 1's.
        let dcid = w1.cids.generate(&mut rng);
        let ev = w0.handle_datagram(now, remote(), None, None, &mut long(0, &dcid, 1200));
        assert_eq!(ev, None);
    }
}

#[test]
fn without_workers_nothing_is_forwarded() {
    let mut plain = Endpoint::new(Arc::new(EndpointConfig::default()), None);
    let w1 = worker(1);
    let mut rng = StdRng::seed_from_u64(11);
    let theirs = w1.cids.generate(&mut rng);
    let ev = plain.handle_datagram(start(), remote(), None, None, &mut short(&theirs, 60));
    assert_eq!(ev, Some(DatagramEvent::Response));
}
