//! BBR's Startup ends once the pipe is full even when the transport, not the
//! application, holds the sender back: writes refused for want of the peer's
//! flow-control credit or of room in the send budget do not make the
//! delivery-rate samples app-limited (as a full receive window or send
//! buffer does not for Linux TCP). When they did, the full-pipe check skipped
//! every such round: a 50 MB download through `quark link` (10 ms, 1 % loss,
//! 500 Mbit/s), whose Startup overshoot left holes that pinned the client's
//! 4 MB stream window, stayed in Startup to the end, overfilling the queue.
//! The simulator's link does not reproduce those holes' timing, so the tests
//! pin the window (and the budget) below the pipe instead.

mod common;

use std::sync::Arc;

use common::downloads::Downloads;
use common::{Sim, Tls, seed};
use quark_proto::cc::CcAlgorithm;
use quark_proto::{ClientConfig, EndpointConfig, ServerConfig, TransportConfig};

/// 100 Mbit/s, 40 ms: a pipe of 500 KB (and a queue of as much).
const PATH: &str = "rtt40-rate100";
const LEN: usize = 4 << 20;

/// Downloads `LEN` bytes over [`PATH`] from a BBR server with `server`'s
/// settings to a client with `client`'s; returns the server's BBR phase at
/// the end, checking the body byte for byte.
fn download(server: TransportConfig, client: TransportConfig, default_seed: u64) -> &'static str {
    let tls = Tls::new();
    let mut server_config = ServerConfig::new(tls.server_config(None));
    server_config.transport = Arc::new(TransportConfig {
        congestion_control: CcAlgorithm::Bbr,
        ..server
    });
    let mut sim = Sim::new(seed(default_seed), server_config, EndpointConfig::default());
    sim.set_profile(PATH);
    let mut client_config = ClientConfig::new(tls.client_config(None));
    client_config.transport = Arc::new(client);
    let c = sim.connect_with(client_config);
    let s = sim.handshake(c);
    let mut downloads = Downloads::new(c, s);
    let d = downloads.request(&mut sim, LEN, 7, None);
    let start = sim.now;
    sim.run_until(20_000_000, |sim| {
        downloads.drive(sim);
        downloads.all_done()
    });
    assert!(downloads.list[d].is_whole(), "body differs");
    let server = sim.server.connection(s).unwrap();
    let phase = server.congestion_phase().unwrap();
    eprintln!(
        "{:.2} s simulated, {} packets lost, phase {phase}",
        (sim.now - start).as_secs_f64(),
        server.stats().packets_lost,
    );
    phase
}

/// A stream window of half the pipe holds the sender to half the link for
/// the whole download: the bandwidth stops growing, so Startup ends.
#[test]
fn a_peer_window_smaller_than_the_pipe_ends_startup() {
    let window = 256 * 1024;
    let client = TransportConfig {
        stream_receive_window: window,
        stream_receive_window_max: window,
        ..TransportConfig::default()
    };
    let phase = download(TransportConfig::default(), client, 11);
    assert_ne!(phase, "startup");
}

/// The same with the server's send budget (what its streams may hold
/// unacknowledged) at half the pipe.
#[test]
fn a_send_budget_smaller_than_the_pipe_ends_startup() {
    let budget = 256 * 1024;
    let server = TransportConfig {
        send_budget: budget,
        send_budget_max: budget,
        ..TransportConfig::default()
    };
    let phase = download(server, TransportConfig::default(), 12);
    assert_ne!(phase, "startup");
}
