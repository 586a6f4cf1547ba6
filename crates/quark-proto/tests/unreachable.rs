//! ICMP unreachable reports (`Endpoint::handle_unreachable`): a connection
//! still in its handshake ends at once when a report quotes one of its
//! packets, IDs and address matching; every other report changes nothing.

mod common;

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use common::{Sim, read_to_end, seed};
use proptest::prelude::*;
use quark_proto::{ConnectionError, Dir, Event};

/// Long-header datagrams one side sent, in order (kept by the path's watch).
fn record(sim: &mut Sim, from_client: bool) -> Rc<RefCell<Vec<Vec<u8>>>> {
    let sent = Rc::new(RefCell::new(Vec::new()));
    let keep = sent.clone();
    sim.watch = Some(Box::new(move |_, to_server, d: &[u8]| {
        if to_server == from_client && d.first().is_some_and(|b| b & 0x80 != 0) {
            keep.borrow_mut().push(d.to_vec());
        }
    }));
    sent
}

/// What an IPv4 ICMP message quotes of a datagram: its first 548 bytes.
fn quote(d: &[u8]) -> &[u8] {
    &d[..d.len().min(548)]
}

#[test]
fn a_client_at_a_closed_port_ends_at_once() {
    let (mut sim, tls) = Sim::pair(seed(31));
    let sent = record(&mut sim, true);
    sim.filter = Some(Box::new(|to_server, _| !to_server));
    let c = sim.connect(&tls);
    sim.run_for(Duration::from_millis(1));
    let initial = sent.borrow()[0].clone();
    let (now, server) = (sim.now, sim.server_addr);

    // Reports that do not fit change nothing.
    let mut other_id = initial.clone();
    other_id[6] ^= 1; // the destination ID's first byte
    assert_eq!(
        sim.client.handle_unreachable(now, server, &other_id, true),
        None
    );
    let elsewhere = "10.0.0.3:443".parse().unwrap();
    assert_eq!(
        sim.client
            .handle_unreachable(now, elsewhere, &initial, true),
        None
    );
    assert_eq!(
        sim.client
            .handle_unreachable(now, server, &initial[..10], true),
        None
    );
    let mut short = initial.clone();
    short[0] &= 0x7f;
    assert_eq!(
        sim.client.handle_unreachable(now, server, &short, true),
        None
    );
    assert!(!sim.client.connection(c).unwrap().is_closed());

    assert_eq!(
        sim.client
            .handle_unreachable(now, server, quote(&initial), true),
        Some(c)
    );
    let conn = sim.client.connection(c).unwrap();
    assert!(conn.is_drained());
    assert_eq!(
        conn.error(),
        Some(&ConnectionError::Unreachable { port_closed: true })
    );
    let events = sim.events(true, c);
    assert!(events.iter().any(|e| matches!(
        e,
        Event::ConnectionLost(ConnectionError::Unreachable { .. })
    )));
    // Gone without a CONNECTION_CLOSE: nothing listens there to read one.
    let before = sent.borrow().len();
    sim.run_for(Duration::from_secs(1));
    assert_eq!(sent.borrow().len(), before);
}

#[test]
fn a_server_forgets_a_client_that_is_gone() {
    let (mut sim, tls) = Sim::pair(seed(32));
    let sent = record(&mut sim, false);
    sim.filter = Some(Box::new(|to_server, _| to_server));
    sim.connect(&tls);
    sim.run_for(Duration::from_millis(5));
    let first = sent.borrow()[0].clone();
    let s = sim.server_handles[0];
    assert_eq!(sim.server.half_open().0, 1);
    let (now, client) = (sim.now, sim.client_addr);
    assert_eq!(
        sim.server
            .handle_unreachable(now, client, quote(&first), false),
        Some(s)
    );
    assert_eq!(
        sim.server.connection(s).unwrap().error(),
        Some(&ConnectionError::Unreachable { port_closed: false })
    );
}

#[test]
fn after_the_handshake_a_report_is_ignored() {
    let (mut sim, tls) = Sim::pair(seed(33));
    let sent = record(&mut sim, true);
    let c = sim.connect(&tls);
    let s = sim.handshake(c);
    // The client's last long-header packet carries its Finished, with the
    // server's ID: it went out after the client's handshake completed.
    let last = sent.borrow().last().unwrap().clone();
    let (now, server) = (sim.now, sim.server_addr);
    assert_eq!(
        sim.client.handle_unreachable(now, server, &last, true),
        None
    );
    let conn = sim.client.connection_mut(c).unwrap();
    assert!(!conn.is_closed());
    let id = conn.open_stream(Dir::Bi).expect("stream");
    conn.write(id, b"still here").unwrap();
    conn.finish(id).unwrap();
    sim.run_until(10_000, |sim| {
        sim.server.connection(s).unwrap().readable_bytes(id) == 10
    });
    let conn = sim.server.connection_mut(s).unwrap();
    assert_eq!(conn.accept_stream(Dir::Bi), Some(id));
    assert_eq!(read_to_end(conn, id), b"still here");
}

proptest! {
    #[test]
    fn any_quoted_bytes_are_safe(
        bytes in proptest::collection::vec(any::<u8>(), 0..80),
        port_closed in any::<bool>(),
    ) {
        let (mut sim, tls) = Sim::pair(seed(34));
        let c = sim.connect(&tls);
        let (now, server) = (sim.now, sim.server_addr);
        let ended = sim.client.handle_unreachable(now, server, &bytes, port_closed);
        // Random bytes cannot name the connection's random IDs.
        prop_assert_eq!(ended, None);
        prop_assert!(!sim.client.connection(c).unwrap().is_closed());
    }
}
