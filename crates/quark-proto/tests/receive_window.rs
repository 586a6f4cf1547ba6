//! Receive windows that grow to the path: over a long fat path a fixed window
//! caps a transfer at one window per round trip; a reader that keeps up earns
//! the sender a bigger one (never above the configured maximum).

mod common;

use std::time::Duration;

use common::upload::Upload;
use common::{Sim, Tls, seed};
use quark_proto::{ClientConfig, EndpointConfig, ServerConfig, TransportConfig};

const TOTAL: usize = 8 * 1000 * 1000;

/// Simulated time an 8 MB upload (checked byte for byte) takes over a 20 ms
/// RTT path, with a 256 KB stream window that may grow to `max`.
fn upload(max: u64) -> Duration {
    let tls = Tls::new();
    let transport = TransportConfig {
        stream_receive_window: 256 * 1024,
        stream_receive_window_max: max,
        receive_window: 512 * 1024,
        receive_window_max: 2 * max,
        ..TransportConfig::default()
    };
    let mut server = ServerConfig::new(tls.server_config(None));
    server.transport = transport.clone().into();
    let mut sim = Sim::new(seed(90), server, EndpointConfig::default());
    sim.set_delay(Duration::from_millis(10));
    let mut cc = ClientConfig::new(tls.client_config(None));
    cc.transport = transport.into();
    let c = sim.connect_with(cc);
    let s = sim.handshake(c);
    let start = sim.now;
    let mut up = Upload::new(&mut sim, c, s, TOTAL, 0x3c);
    while !up.done() {
        up.pump(&mut sim);
        assert!(sim.step(), "simulation stalled at {} bytes", up.read);
    }
    sim.now - start
}

#[test]
fn a_reader_that_keeps_up_earns_a_bigger_window() {
    let fixed = upload(256 * 1024);
    let grown = upload(4 * 1024 * 1024);
    eprintln!("8 MB over 20 ms RTT: fixed 256 KB window {fixed:?}, growing to 4 MB {grown:?}");
    // Fixed: at most 256 KB per 20 ms round trip, so at least 600 ms.
    assert!(fixed >= Duration::from_millis(600), "{fixed:?}");
    assert!(
        grown * 2 < fixed,
        "growing {grown:?} against fixed {fixed:?}"
    );
}
