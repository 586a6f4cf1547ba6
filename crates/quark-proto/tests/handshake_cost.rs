//! What a full handshake costs quark's own code, in the simulator: the
//! datagrams and packets each side sends for one fresh connection with one
//! 2 KiB request (the lab's `ephemeral` workload), and the heap allocations
//! made inside protocol calls. The crypto (key exchange, signatures, hashing)
//! is rustls's and ring's; what is counted here is what quark adds around it.

mod common;

use std::alloc::System;
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use common::app::Echo;
use common::{Sim, packet_types, seed};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// The allocation counters are global: the tests take turns.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

thread_local! {
    static ALLOCS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

fn counted_step(f: &mut dyn FnMut()) {
    let region = Region::new(GLOBAL);
    f();
    let c = region.change();
    ALLOCS.with(|a| a.set(a.get() + (c.allocations + c.reallocations) as u64));
}

/// One datagram: towards the server?, size, packet types.
type Datagram = (bool, usize, Vec<&'static str>);

/// The datagrams in the order sent.
type Trace = Rc<RefCell<Vec<Datagram>>>;

/// One fresh connection, one 2 KiB request echoed, then closed: the trace and
/// the allocations inside protocol calls.
fn ephemeral_connection(seed: u64) -> (Vec<Datagram>, u64) {
    let (mut sim, tls) = Sim::pair(seed);
    let config = quark_proto::ClientConfig::new(tls.client_config(None));
    one_connection(&mut sim, &config).0
}

/// One connection of `sim` with `config`: its trace and allocations, and
/// whether it resumed a session.
fn one_connection(
    sim: &mut Sim,
    config: &quark_proto::ClientConfig,
) -> ((Vec<Datagram>, u64), bool) {
    sim.set_delay(Duration::from_micros(50));
    let trace: Trace = Rc::default();
    let t = trace.clone();
    sim.filter = Some(Box::new(move |up, d| {
        t.borrow_mut().push((up, d.len(), packet_types(d)));
        true
    }));
    ALLOCS.with(|a| a.set(0));
    sim.counted = Some(counted_step);
    let c = sim.connect_with(config.clone());
    let mut echo = Echo::new(c, vec![vec![7u8; 2048]]);
    sim.run_until(10_000, |s| {
        echo.drive(s);
        echo.done()
    });
    let resumed = sim.client.connection(c).unwrap().is_resumed();
    sim.close_all_and_remove(&[c], 10_000);
    sim.server_handles.clear();
    sim.counted = None;
    sim.filter = None;
    let allocs = ALLOCS.with(std::cell::Cell::get);
    let t = trace.borrow().clone();
    ((t, allocs), resumed)
}

/// A second connection with the same client configuration resumes the
/// session (rustls keeps the ticket), in as many datagrams as a full one.
#[test]
fn resumed_connection_packets() {
    let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (mut sim, tls) = Sim::pair(seed(31));
    let config = quark_proto::ClientConfig::new(tls.client_config(None));
    let ((full, full_allocs), first_resumed) = one_connection(&mut sim, &config);
    assert!(!first_resumed);
    let ((again, allocs), resumed) = one_connection(&mut sim, &config);
    assert!(resumed, "the second connection resumed");
    for (up, len, types) in &again {
        let dir = if *up { "c->s" } else { "s->c" };
        eprintln!("{dir} {len:5} {types:?}");
    }
    eprintln!("full: {full_allocs} allocations; resumed: {allocs}");
    assert!(again.len() <= full.len());
    assert!(allocs < full_allocs);
}

#[test]
fn ephemeral_connection_packets() {
    let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (trace, allocs) = ephemeral_connection(seed(30));
    for (up, len, types) in &trace {
        let dir = if *up { "c->s" } else { "s->c" };
        eprintln!("{dir} {len:5} {types:?}");
    }
    let up = trace.iter().filter(|t| t.0).count();
    let down = trace.len() - up;
    eprintln!("{up} datagrams up, {down} down, {allocs} allocations in protocol calls");
    // RFC 9000 §7 and §14.1: the client's Initial alone (padded), the
    // server's whole first flight in one datagram (an ECDSA certificate is
    // small), then the client's Finished with the request's first bytes.
    assert_eq!(trace[0], (true, 1200, vec!["initial"]));
    assert!(!trace[1].0);
    assert_eq!(trace[1].2, vec!["initial", "handshake"]);
    assert!(trace[2].0 && trace[2].2.contains(&"handshake") && trace[2].2.contains(&"1rtt"));
    // No ACK-only or PING datagrams beyond that: two datagrams of request,
    // two of response, the close.
    assert!(up <= 4, "{up} datagrams from the client");
    assert!(down <= 3, "{down} datagrams from the server");
    assert!(allocs < 400, "{allocs} allocations for one connection");
}
