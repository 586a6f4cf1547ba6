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
    assert!(idle.streams > 1024, "kept without trimming: {idle}");
}
