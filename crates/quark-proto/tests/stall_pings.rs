//! A client waiting for a response that hears nothing pings (at most three
//! times per silence of the server), and only then: a steady download, an
//! idle connection and a client with the pings off send none. The rescue
//! they exist for (a NAT rebinding that loses the server's flight) is in
//! `migration.rs`.

mod common;

use std::time::Duration;

use common::downloads::Downloads;
use common::{Sim, Tls, seed};
use quark_proto::{ClientConfig, ConnectionHandle, Dir, TransportConfig};

const KIB: usize = 1024;

/// A pair with 10 ms each way, the client's transport as given.
fn pair(s: u64, transport: TransportConfig) -> (Sim, ConnectionHandle, ConnectionHandle) {
    let tls = Tls::new();
    let server = quark_proto::ServerConfig::new(tls.server_config(None));
    let mut sim = Sim::new(seed(s), server, Default::default());
    sim.set_delay(Duration::from_millis(10));
    let mut cc = ClientConfig::new(tls.client_config(None));
    cc.transport = transport.into();
    let c = sim.connect_with(cc);
    let sh = sim.handshake(c);
    (sim, c, sh)
}

/// The client sends a request the server never answers, and waits.
fn hung_request(transport: TransportConfig) -> (Sim, ConnectionHandle) {
    let (mut sim, c, _) = pair(41, transport);
    let conn = sim.client.connection_mut(c).unwrap();
    let id = conn.open_stream(Dir::Bi).unwrap();
    conn.write(id, b"GET /slow").unwrap();
    conn.finish(id).unwrap();
    sim.run_for(Duration::from_secs(20));
    (sim, c)
}

#[test]
fn a_server_that_never_answers_gets_three_pings_and_no_more() {
    let (mut sim, c) = hung_request(TransportConfig::default());
    let st = sim.client.connection(c).unwrap().stats();
    assert_eq!(st.stall_pings, 3, "{st:?}");
    // The pings do not keep the connection open: the idle timeout (30 s)
    // still ends it.
    sim.run_for(Duration::from_secs(40));
    let conn = sim.client.connection(c);
    assert!(conn.is_none_or(|c| c.is_closed()), "still open");
}

#[test]
fn off_means_no_pings() {
    let transport = TransportConfig {
        stall_pings: false,
        ..TransportConfig::default()
    };
    let (sim, c) = hung_request(transport);
    assert_eq!(sim.client.connection(c).unwrap().stats().stall_pings, 0);
}

#[test]
fn a_steady_download_and_an_idle_connection_send_none() {
    let (mut sim, c, sh) = pair(42, TransportConfig::default());
    let mut app = Downloads::new(c, sh);
    app.request(&mut sim, 512 * KIB, 1, None);
    sim.run_until(1_000_000, |sim| {
        app.drive(sim);
        app.all_done()
    });
    assert!(app.list[0].is_whole());
    // Nothing open now: an idle connection is left to its idle timeout.
    sim.run_for(Duration::from_secs(10));
    let st = sim.client.connection(c).unwrap().stats();
    assert_eq!(st.stall_pings, 0, "{st:?}");
}
