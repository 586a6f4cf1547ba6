//! Connection migration (RFC 9000 §9) on the simulated pair: the server
//! follows a client whose address changes, validates the new path, resets
//! congestion state only for a new host, falls back when validation fails,
//! and does not let a forged source address amplify or steal the path.

mod common;

use std::cell::RefCell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Duration;

use common::app::Echo;
use common::downloads::Downloads;
use common::{Sim, payload, seed};
use quark_proto::{ConnectionHandle, ConnectionStats};

const MIB: usize = 1024 * 1024;

/// A pair with 10 ms each way, handshake done.
fn setup(s: u64) -> (Sim, ConnectionHandle, ConnectionHandle) {
    let (mut sim, tls) = Sim::pair(seed(s));
    sim.set_delay(Duration::from_millis(10));
    let c = sim.connect(&tls);
    let sh = sim.handshake(c);
    (sim, c, sh)
}

fn server_stats(sim: &Sim, sh: ConnectionHandle) -> ConnectionStats {
    sim.server.connection(sh).unwrap().stats()
}

/// Drive the echo until the server has received `bytes`.
fn run_until_server_got(sim: &mut Sim, echo: &mut Echo, sh: ConnectionHandle, bytes: u64) {
    for _ in 0..200_000 {
        echo.drive(sim);
        if server_stats(sim, sh).bytes_in >= bytes {
            return;
        }
        assert!(sim.step(), "simulation stopped");
    }
    panic!("server never received {bytes} bytes");
}

fn finish(sim: &mut Sim, echo: &mut Echo) {
    common::app::run_echo(sim, echo, 2_000_000);
}

#[test]
fn nat_rebinding_mid_transfer_keeps_going_without_congestion_reset() {
    let (mut sim, c, sh) = setup(1);
    let mut echo = Echo::new(c, vec![payload(2 * MIB, 1)]);
    run_until_server_got(&mut sim, &mut echo, sh, 600_000);
    // The connection IDs the server addresses the client with (short headers).
    let dcids: Rc<RefCell<Vec<Vec<u8>>>> = Rc::default();
    let tap = dcids.clone();
    sim.filter = Some(Box::new(move |to_server, d| {
        if !to_server && d[0] & 0x80 == 0 {
            tap.borrow_mut().push(d[1..9].to_vec());
        }
        true
    }));
    run_until_server_got(&mut sim, &mut echo, sh, 700_000);
    let before = dcids.borrow().last().cloned().unwrap();
    // The NAT gives the client a new port.
    sim.client_addr = "10.0.0.1:6123".parse().unwrap();
    finish(&mut sim, &mut echo);
    // On the new path the server used a fresh ID of the client (RFC 9000 §9.5).
    assert_ne!(dcids.borrow().last().unwrap(), &before);
    let conn = sim.server.connection(sh).unwrap();
    let st = conn.stats();
    assert_eq!(conn.remote_address(), sim.client_addr);
    assert!(st.migrations >= 1, "{st:?}");
    assert!(st.path_challenges >= 1, "no PATH_CHALLENGE: {st:?}");
    assert_eq!(st.congestion_resets, 0, "a port change reset congestion");
    assert_eq!(st.validation_failures, 0);
}

#[test]
fn address_change_resets_congestion_and_rtt() {
    let (mut sim, c, sh) = setup(2);
    let mut echo = Echo::new(c, vec![payload(2 * MIB, 2)]);
    run_until_server_got(&mut sim, &mut echo, sh, 600_000);
    sim.client_addr = "10.0.7.9:5000".parse().unwrap();
    finish(&mut sim, &mut echo);
    let conn = sim.server.connection(sh).unwrap();
    let st = conn.stats();
    assert_eq!(conn.remote_address(), sim.client_addr);
    assert!(st.congestion_resets >= 1, "{st:?}");
    assert!(st.path_challenges >= 1);
    assert_eq!(st.validation_failures, 0);
}

#[test]
fn rebinding_during_handshake_does_not_migrate() {
    let (mut sim, tls) = Sim::pair(seed(3));
    sim.set_delay(Duration::from_millis(10));
    let original = sim.client_addr;
    let c = sim.connect(&tls);
    sim.run_until(1_000, |s| !s.server_handles.is_empty());
    // The client's next handshake packets come from another port.
    sim.client_addr = "10.0.0.1:7000".parse().unwrap();
    sim.run_for(Duration::from_millis(300));
    let sh = sim.server_handles[0];
    let conn = sim.server.connection(sh).unwrap();
    assert_eq!(conn.remote_address(), original);
    assert!(!conn.is_handshake_complete());
    assert_eq!(conn.stats().migrations, 0);
    // Back on the old address, the handshake completes on the original path.
    sim.client_addr = original;
    sim.handshake(c);
    let conn = sim.server.connection(sh).unwrap();
    assert_eq!(conn.remote_address(), original);
    assert_eq!(conn.stats().migrations, 0);
}

#[test]
fn spoofed_source_gets_no_amplification_and_the_real_path_stays() {
    let (mut sim, c, sh) = setup(4);
    let real = sim.client_addr;
    let forged: SocketAddr = "10.66.6.6:666".parse().unwrap();
    let mut echo = Echo::new(c, vec![payload(2 * MIB, 4)]);
    run_until_server_got(&mut sim, &mut echo, sh, 500_000);
    // An off-path attacker sees the client's datagrams and races copies of
    // them to the server from a forged address.
    let copies: Rc<RefCell<Vec<Vec<u8>>>> = Rc::default();
    let tap = copies.clone();
    sim.filter = Some(Box::new(move |to_server, d| {
        if to_server {
            tap.borrow_mut().push(d.clone());
        }
        true
    }));
    let mut injected = 0u64;
    let mut count = 0;
    while count < 60 {
        echo.drive(&mut sim);
        assert!(sim.step());
        let batch: Vec<Vec<u8>> = copies.borrow_mut().drain(..).collect();
        for mut d in batch {
            injected += d.len() as u64;
            count += 1;
            sim.inject_to_server(forged, &mut d);
        }
    }
    sim.filter = None;
    finish(&mut sim, &mut echo);
    let conn = sim.server.connection(sh).unwrap();
    let to_forged = sim.sent_elsewhere.get(&forged).copied().unwrap_or(0);
    assert!(
        to_forged <= 3 * injected,
        "{to_forged} bytes to the forged address for {injected} received"
    );
    assert_eq!(conn.remote_address(), real, "the real path was lost");
    // The copies did move the server, and it came back.
    let st = conn.stats();
    assert!(st.migrations >= 2, "{st:?} {to_forged} {injected}");
}

#[test]
fn migration_under_five_percent_loss_completes() {
    let (mut sim, c, sh) = setup(5);
    sim.set_loss(0.05);
    let mut echo = Echo::new(c, vec![payload(MIB, 5)]);
    run_until_server_got(&mut sim, &mut echo, sh, 300_000);
    sim.client_addr = "10.0.0.1:6500".parse().unwrap();
    run_until_server_got(&mut sim, &mut echo, sh, 600_000);
    sim.client_addr = "10.0.3.3:6500".parse().unwrap();
    finish(&mut sim, &mut echo);
    let conn = sim.server.connection(sh).unwrap();
    assert_eq!(conn.remote_address(), sim.client_addr);
    assert!(conn.stats().migrations >= 2);
}

#[test]
fn path_validation_timeout_falls_back_to_the_old_path() {
    let (mut sim, c, sh) = setup(6);
    let real = sim.client_addr;
    let elsewhere: SocketAddr = "10.0.9.9:4000".parse().unwrap();
    let mut echo = Echo::new(c, vec![payload(MIB, 6)]);
    run_until_server_got(&mut sim, &mut echo, sh, 300_000);
    // One newer packet arrives from an address that never answers, then the
    // client's path goes quiet for a while.
    let grabbed: Rc<RefCell<Vec<Vec<u8>>>> = Rc::default();
    let tap = grabbed.clone();
    sim.filter = Some(Box::new(move |to_server, d| {
        if to_server {
            tap.borrow_mut().push(d.clone());
            return false;
        }
        true
    }));
    sim.run_until(100_000, |_| !grabbed.borrow().is_empty());
    let mut first = grabbed.borrow_mut().remove(0);
    sim.inject_to_server(elsewhere, &mut first);
    assert_eq!(
        sim.server.connection(sh).unwrap().remote_address(),
        elsewhere
    );
    sim.run_for(Duration::from_secs(6));
    let conn = sim.server.connection(sh).unwrap();
    assert_eq!(conn.remote_address(), real, "no fallback");
    assert_eq!(conn.stats().validation_failures, 1);
    sim.filter = None;
    finish(&mut sim, &mut echo);
}

#[test]
fn spare_connection_ids_come_with_the_handshake() {
    let (mut sim, tls) = Sim::pair(seed(7));
    sim.set_delay(Duration::from_millis(10));
    let c = sim.connect(&tls);
    let sh = sim.handshake(c);
    // Before any PTO could have fired (the old trigger for spare IDs).
    assert!(sim.server.connection(sh).unwrap().stats().ptos == 0);
    let limit = quark_proto::TransportConfig::default().active_connection_id_limit as usize;
    // Both sides issued theirs as the handshake ended, before any PTO.
    let server_ids = sim.server.connection(sh).unwrap().local_cids().len();
    let client_ids = sim.client.connection(c).unwrap().local_cids().len();
    assert_eq!(server_ids, limit, "server IDs: 1 + {} spare", limit - 1);
    assert_eq!(client_ids, limit);
    // One RTT later the client holds them: it can migrate at once.
    sim.run_for(Duration::from_millis(25));
    let now = sim.now;
    let conn = sim.client.connection_mut(c).unwrap();
    conn.migrate(now, false)
        .expect("a spare ID right after the handshake");
}

#[test]
fn client_migrates_on_purpose_with_a_new_connection_id() {
    let (mut sim, c, sh) = setup(8);
    let mut echo = Echo::new(c, vec![payload(MIB, 8)]);
    run_until_server_got(&mut sim, &mut echo, sh, 300_000);
    let old_dcid = sim.client.connection(c).unwrap().stats();
    sim.client_addr = "10.0.0.5:5100".parse().unwrap();
    let now = sim.now;
    sim.client
        .connection_mut(c)
        .unwrap()
        .migrate(now, false)
        .unwrap();
    finish(&mut sim, &mut echo);
    let client = sim.client.connection(c).unwrap().stats();
    assert_eq!(client.migrations, old_dcid.migrations + 1);
    assert!(client.path_challenges >= 1);
    assert_eq!(client.validation_failures, 0, "{client:?}");
    let conn = sim.server.connection(sh).unwrap();
    assert_eq!(conn.remote_address(), sim.client_addr);
}

/// A pair whose server announces `preferred` as its preferred address.
fn preferred_pair(s: u64, preferred: SocketAddr) -> (Sim, ConnectionHandle) {
    let tls = common::Tls::new();
    let mut server = quark_proto::ServerConfig::new(tls.server_config(None));
    server.preferred_address = Some(preferred);
    let mut sim = Sim::new(seed(s), server, Default::default());
    sim.set_delay(Duration::from_millis(10));
    let c = sim.connect(&tls);
    (sim, c)
}

#[test]
fn client_moves_to_the_servers_preferred_address() {
    let preferred: SocketAddr = "10.0.0.3:4433".parse().unwrap();
    let (mut sim, c) = preferred_pair(9, preferred);
    let sh = sim.handshake(c);
    let params = sim.client.connection(c).unwrap().peer_params().unwrap();
    assert_eq!(
        params.preferred_address.as_ref().map(|p| p.ipv4),
        Some("10.0.0.3:4433".parse().unwrap())
    );
    sim.run_until(10_000, |s| {
        s.client.connection(c).unwrap().remote_address() == preferred
    });
    // The server answers from there from now on.
    sim.server_addr = preferred;
    let mut echo = Echo::new(c, vec![payload(MIB, 9)]);
    echo.set_server(sh);
    finish(&mut sim, &mut echo);
    let client = sim.client.connection(c).unwrap();
    let st = client.stats();
    assert_eq!(client.remote_address(), preferred);
    assert_eq!(st.migrations, 1);
    assert!(st.path_challenges >= 1);
    assert_eq!(st.validation_failures, 0, "{st:?}");
}

#[test]
fn unreachable_preferred_address_falls_back_to_the_handshake_address() {
    let preferred: SocketAddr = "10.0.0.3:4433".parse().unwrap();
    let (mut sim, c) = preferred_pair(10, preferred);
    let original = sim.server_addr;
    sim.unreachable = Some(preferred);
    let sh = sim.handshake(c);
    sim.run_for(Duration::from_secs(8));
    let client = sim.client.connection(c).unwrap();
    assert_eq!(client.remote_address(), original);
    assert_eq!(client.stats().validation_failures, 1);
    let mut echo = Echo::new(c, vec![payload(MIB, 10)]);
    echo.set_server(sh);
    finish(&mut sim, &mut echo);
}

/// A download on a path of jumbo datagrams (so PMTU probes are in play), the
/// client having read `read` bytes of a 4 MiB body.
fn jumbo_download(s: u64, read: usize) -> (Sim, Downloads, ConnectionHandle) {
    let (mut sim, tls) = Sim::pair(seed(s));
    sim.set_delay(Duration::from_millis(10));
    sim.path_mtu = 40_000;
    let c = sim.connect(&tls);
    let sh = sim.handshake(c);
    let mut app = Downloads::new(c, sh);
    app.request(&mut sim, 4 * MIB, 9, None);
    sim.run_until(1_000_000, |sim| {
        app.drive(sim);
        app.read_total() >= read
    });
    (sim, app, sh)
}

#[test]
fn an_unvalidated_address_gets_at_most_three_times_what_it_sent_probes_included() {
    // Early in the download, while the PMTU search is under way: at some
    // of these points a probe falls due on the new path.
    for (i, read) in (50_000..=500_000).step_by(25_000).enumerate() {
        unvalidated_path_budget(8 + i as u64, read);
    }
}

fn unvalidated_path_budget(s: u64, read: usize) {
    let (mut sim, mut app, sh) = jumbo_download(s, read);
    // The NAT moves the client: what it has in flight arrives from the new
    // address (the simulation names the sender when it delivers), with one
    // datagram more, and then nothing: the path is never validated.
    sim.client_addr = "10.0.0.1:6124".parse().unwrap();
    let bytes_in = server_stats(&sim, sh).bytes_in;
    // (bytes to the new address, one client datagram let through)
    let counts: Rc<RefCell<(u64, bool)>> = Rc::default();
    let tap = counts.clone();
    sim.filter = Some(Box::new(move |to_server, d| {
        let mut c = tap.borrow_mut();
        if !to_server {
            c.0 += d.len() as u64;
            return true;
        }
        !std::mem::replace(&mut c.1, true)
    }));
    // Well within the validation timeout (3 PTOs, at least 3 s).
    let end = sim.now + Duration::from_millis(1500);
    sim.run_until(10_000_000, |sim| {
        app.drive(sim);
        sim.now >= end
    });
    let conn = sim.server.connection(sh).unwrap();
    assert_eq!(conn.remote_address(), sim.client_addr);
    assert_eq!(conn.stats().validation_failures, 0);
    let received = conn.stats().bytes_in - bytes_in;
    let sent = counts.borrow().0;
    assert!(received > 0);
    assert!(
        sent <= 3 * received,
        "{sent} bytes to an unvalidated address that sent {received} (read {read})"
    );
}

#[test]
fn a_rebinding_that_loses_the_first_challenge_still_completes_the_download() {
    let (mut sim, mut app, sh) = jumbo_download(9, MIB);
    let app_client = sim.client.handles().next().unwrap();
    let before = sim.server.connection(sh).unwrap().stats().path_challenges;
    // The client moves; what the server sends for the next 30 ms is lost
    // (its first challenge on the new path among it).
    sim.client_addr = "10.0.0.1:6125".parse().unwrap();
    let until = sim.now + Duration::from_millis(30);
    let clock: Rc<RefCell<std::time::Instant>> = Rc::new(RefCell::new(sim.now));
    let seen = clock.clone();
    sim.filter = Some(Box::new(move |to_server, _| {
        to_server || *seen.borrow() >= until
    }));
    sim.run_until(10_000_000, |sim| {
        *clock.borrow_mut() = sim.now;
        app.drive(sim);
        app.all_done()
    });
    assert!(app.list[0].is_whole(), "the body differs");
    let conn = sim.server.connection(sh).unwrap();
    let st = conn.stats();
    assert_eq!(conn.remote_address(), sim.client_addr);
    assert_eq!(st.validation_failures, 0, "{st:?}");
    assert!(st.path_challenges >= before + 2, "{st:?}");
    // Nothing reached the client for a while: its PING showed the server
    // the new address (the stall pings, `stall_pings.rs`).
    let client = sim.client.connection(app_client).unwrap().stats();
    assert!(client.stall_pings >= 1, "{client:?}");
}
