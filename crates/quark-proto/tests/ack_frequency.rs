//! The ACK Frequency extension in use: during a bulk transfer the sender asks
//! the receiver for far fewer ACKs, and the transfer still completes intact.

mod common;

use std::time::Duration;

use common::app::{Echo, run_echo};
use common::{Sim, Tls, payload, seed};
use quark_netem::RateLimit;
use quark_proto::{ClientConfig, EndpointConfig, ServerConfig, TransportConfig};

/// ACK frames the server sent per packet the client sent, for a 4 MB upload echoed back.
fn acks_per_packet(ack_frequency: bool) -> f64 {
    let tls = Tls::new();
    let transport = TransportConfig {
        ack_frequency,
        ..TransportConfig::default()
    };
    let mut server = ServerConfig::new(tls.server_config(None));
    server.transport = transport.clone().into();
    let mut sim = Sim::new(seed(80), server, EndpointConfig::default());
    sim.set_delay(Duration::from_millis(10));
    // A 100 Mbit/s bottleneck spaces each paced burst out, as a real path
    // does: packets arrive one by one, and the RFC's one ACK per two
    // ack-eliciting packets is the baseline.
    sim.impair(|c| {
        c.rate = Some(RateLimit::with_bdp_queue(
            100_000_000,
            Duration::from_millis(20),
        ))
    });
    let mut cc = ClientConfig::new(tls.client_config(None));
    cc.transport = transport.into();
    let c = sim.connect_with(cc);
    // The echo doubles the traffic: 4 MB up and 4 MB back.
    let mut echo = Echo::new(c, vec![payload(4_000_000, 1)]);
    run_echo(&mut sim, &mut echo, 2_000_000);
    let client = sim.client.connection(c).unwrap().stats();
    let server = sim
        .server
        .connection(sim.server_handles[0])
        .unwrap()
        .stats();
    server.acks_out as f64 / client.packets_out as f64
}

#[test]
fn bulk_transfers_ask_for_fewer_acks() {
    let with = acks_per_packet(true);
    let without = acks_per_packet(false);
    eprintln!("ACKs per packet: {with:.3} with ACK_FREQUENCY, {without:.3} without");
    assert!(
        without > 0.3,
        "RFC 9000 default is about one ACK per two packets: {without}"
    );
    assert!(
        with * 4.0 < without,
        "ACK frequency should cut ACKs by 4x or more: {with} vs {without}"
    );
}
