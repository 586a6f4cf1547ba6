//! Windows that grow to the path: over a long fat path a fixed receive window
//! or send buffer caps a transfer at one window per round trip. A reader that
//! keeps up earns the sender a bigger receive window, and a sender's buffer
//! follows its congestion window (never above the configured maxima).

mod common;

use std::time::Duration;

use common::upload::Upload;
use common::{Sim, Tls, seed};
use quark_proto::{ClientConfig, EndpointConfig, ServerConfig, TransportConfig};

const TOTAL: usize = 8 * 1000 * 1000;

/// Simulated time an 8 MB upload (checked byte for byte) takes over a 20 ms
/// RTT path, with a 256 KB stream window that may grow to `max`.
fn upload(max: u64) -> Duration {
    let transport = TransportConfig {
        stream_receive_window: 256 * 1024,
        stream_receive_window_max: max,
        receive_window: 512 * 1024,
        receive_window_max: 2 * max,
        ..TransportConfig::default()
    };
    timed_upload(transport, Duration::from_millis(20), TOTAL)
}

/// Simulated time an upload of `total` bytes takes over a path of `rtt`.
fn timed_upload(transport: TransportConfig, rtt: Duration, total: usize) -> Duration {
    let tls = Tls::new();
    let mut server = ServerConfig::new(tls.server_config(None));
    server.transport = transport.clone().into();
    let mut sim = Sim::new(seed(90), server, EndpointConfig::default());
    sim.set_delay(rtt / 2);
    let mut cc = ClientConfig::new(tls.client_config(None));
    cc.transport = transport.into();
    let c = sim.connect_with(cc);
    let s = sim.handshake(c);
    let start = sim.now;
    let mut up = Upload::new(&mut sim, c, s, total, 0x3c);
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

/// Simulated time a 32 MB upload takes over a 100 ms RTT path with ample
/// receive windows and a 1 MiB send buffer that may grow to `max`.
fn upload_buffered(max: usize) -> Duration {
    let transport = TransportConfig {
        stream_receive_window: 64 << 20,
        receive_window: 64 << 20,
        send_buffer: 1 << 20,
        send_buffer_max: max,
        ..TransportConfig::default()
    };
    timed_upload(transport, Duration::from_millis(100), 32_000_000)
}

#[test]
fn a_sender_buffer_follows_the_congestion_window() {
    let fixed = upload_buffered(1 << 20);
    let grown = upload_buffered(32 << 20);
    eprintln!("32 MB over 100 ms RTT: fixed 1 MiB send buffer {fixed:?}, growing {grown:?}");
    // Fixed: at most 1 MiB in flight per 100 ms round trip, so over 3 s.
    assert!(fixed >= Duration::from_secs(3), "{fixed:?}");
    assert!(
        grown * 2 < fixed,
        "growing {grown:?} against fixed {fixed:?}"
    );
}
