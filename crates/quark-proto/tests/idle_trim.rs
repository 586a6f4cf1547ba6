//! An established connection that goes quiet gives back what only a busy
//! connection needs (`TransportConfig::idle_trim`), and works as before when
//! traffic comes back: the next requests are echoed byte for byte.

mod common;

use std::time::Duration;

use common::app::{Echo, run_echo};
use common::{Sim, Tls, payload, seed};
use quark_proto::{EndpointConfig, ServerConfig};

#[test]
fn a_quiet_connection_trims_and_serves_again() {
    let (mut sim, tls) = Sim::pair(seed(83));
    let c = sim.connect(&tls);
    let s = sim.handshake(c);
    let mut echo = Echo::new(c, vec![payload(2048, 1), payload(64 * 1024, 2)]);
    echo.set_server(s);
    run_echo(&mut sim, &mut echo, 100_000);
    assert!(echo.done());
    let busy = sim.server.connection(s).unwrap().memory_breakdown();
    // Quiet: past the end of PMTU discovery's probing, within the idle timeout.
    sim.run_for(Duration::from_secs(10));
    let idle = sim.server.connection(s).unwrap().memory_breakdown();
    eprintln!("after the requests:\n{busy}\nquiet for 10 s:\n{idle}");
    assert!(
        busy.streams > 4096,
        "streams kept buffers while busy: {busy}"
    );
    assert!(idle.streams <= 512, "stream storage given back: {idle}");
    assert!(idle.recovery <= 512, "sent records given back: {idle}");
    assert_eq!(idle.scratch, 0);
    // Traffic again: storage comes back on use, data arrives intact.
    let mut again = Echo::new(c, vec![payload(100_000, 3), payload(10, 4)]);
    again.set_server(s);
    run_echo(&mut sim, &mut again, 100_000);
    assert!(again.done(), "requests after the trim answered");
    assert!(!sim.server.connection(s).unwrap().is_closed());
}

#[test]
fn trimming_can_be_turned_off() {
    let transport = quark_proto::TransportConfig {
        idle_trim: Duration::ZERO,
        ..Default::default()
    };
    let tls = Tls::new();
    let mut server = ServerConfig::new(tls.server_config(None));
    server.transport = transport.into();
    let mut sim = Sim::new(seed(84), server, EndpointConfig::default());
    let c = sim.connect(&tls);
    let s = sim.handshake(c);
    let mut echo = Echo::new(c, vec![payload(2048, 1)]);
    echo.set_server(s);
    run_echo(&mut sim, &mut echo, 100_000);
    sim.run_for(Duration::from_secs(10));
    let idle = sim.server.connection(s).unwrap().memory_breakdown();
    // Stream rings go to the thread's pool after every small burst (issue
    // #33), trim or not; the 1-RTT keys sleep only when trimmed.
    assert!(idle.keys > 1024, "kept without trimming: {idle}");
}

/// The keys' heap of `h` on `side` (server if true).
fn keys(sim: &Sim, h: quark_proto::ConnectionHandle, server: bool) -> usize {
    let ep = if server { &sim.server } else { &sim.client };
    ep.connection(h).unwrap().memory_breakdown().keys
}

#[test]
fn idle_keys_sleep_and_wake_across_key_updates() {
    let (mut sim, tls) = Sim::pair(seed(86));
    sim.set_delay(Duration::from_millis(2));
    let c = sim.connect(&tls);
    let s = sim.handshake(c);
    let mut round = 0u8;
    let mut echo_once = |sim: &mut Sim| {
        round += 1;
        let mut echo = Echo::new(c, vec![payload(30_000, round), payload(10, round)]);
        echo.set_server(s);
        run_echo(sim, &mut echo, 200_000);
        assert!(echo.done(), "round {round} answered byte for byte");
    };
    echo_once(&mut sim);
    // (Both sides sleep alike here: `crypto::reserve`'s tests check woken
    // keys against a peer that never slept.)
    for update_by_server in [false, true, false] {
        // Quiet: both sides give their 1-RTT keys back (1.6 KiB with
        // AES-GCM), keeping the secrets to derive them again.
        sim.run_for(Duration::from_secs(5));
        assert!(keys(&sim, s, true) < 512, "server: {}", keys(&sim, s, true));
        assert!(
            keys(&sim, c, false) < 512,
            "client: {}",
            keys(&sim, c, false)
        );
        // A key update started while asleep: the keys come back, then
        // roll; the next phase's secrets stay in step with the peer's.
        let now = sim.now;
        let started = if update_by_server {
            sim.server
                .connection_mut(s)
                .unwrap()
                .initiate_key_update(now)
        } else {
            sim.client
                .connection_mut(c)
                .unwrap()
                .initiate_key_update(now)
        };
        assert!(started);
        echo_once(&mut sim);
        assert!(keys(&sim, s, true) > 1024, "awake while busy");
        // Asleep again in the new phase; the next packets wake it.
        sim.run_for(Duration::from_secs(5));
        assert!(keys(&sim, s, true) < 512);
        echo_once(&mut sim);
    }
    let stats = sim.client.connection(c).unwrap().stats();
    assert_eq!(stats.key_updates, 3);
    assert!(!sim.client.connection(c).unwrap().is_closed());
    assert!(!sim.server.connection(s).unwrap().is_closed());
}
