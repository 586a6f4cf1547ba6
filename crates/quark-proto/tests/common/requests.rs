//! Four requests from a client whose connection window is fixed and small:
//! the set-up of the tests on connection-level credit.

use std::time::Duration;

use quark_proto::{ClientConfig, ConnectionHandle, Dir, ServerConfig, StreamId, TransportConfig};

use super::{Sim, Tls, seed};

/// A pair (seed `n`, 5 ms each way) where the client's receive window is
/// `window` and stays so; the client has sent four one-byte requests and the
/// server has accepted them. Returns the sim, both handles and the streams.
pub fn four_requests(
    n: u64,
    window: u64,
) -> (Sim, ConnectionHandle, ConnectionHandle, Vec<StreamId>) {
    let tls = Tls::new();
    let sc = ServerConfig::new(tls.server_config(None));
    let mut sim = Sim::new(seed(n), sc, Default::default());
    sim.set_delay(Duration::from_millis(5));
    let mut cc = ClientConfig::new(tls.client_config(None));
    cc.transport = TransportConfig {
        receive_window: window,
        receive_window_max: window,
        ..TransportConfig::default()
    }
    .into();
    let c = sim.connect_with(cc);
    let s = sim.handshake(c);
    let conn = sim.client.connection_mut(c).unwrap();
    let ids: Vec<StreamId> = (0..4)
        .map(|_| {
            let id = conn.open_stream(Dir::Bi).unwrap();
            conn.write(id, b"?").unwrap();
            conn.finish(id).unwrap();
            id
        })
        .collect();
    let mut accepted = 0;
    sim.run_until(10_000, |sim| {
        let conn = sim.server.connection_mut(s).unwrap();
        while conn.accept_stream(Dir::Bi).is_some() {
            accepted += 1;
        }
        accepted == ids.len()
    });
    (sim, c, s, ids)
}
