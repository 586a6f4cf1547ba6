//! The set-up the driver's simulations share: a client and a server endpoint
//! (seeded, hq-interop, a self-signed certificate) with the same transport,
//! their addresses and a simulated clock.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use bytes::BytesMut;
use quark_proto::{
    ClientConfig, Connection, DatagramEvent, Endpoint, EndpointConfig, TransportConfig,
};

use crate::tls::{Identity, Verify};

/// A client and a server endpoint on a simulated clock.
pub(super) struct Pair {
    pub(super) now: Instant,
    pub(super) client: Endpoint,
    pub(super) server: Endpoint,
    pub(super) client_addr: SocketAddr,
    pub(super) server_addr: SocketAddr,
    /// Scratch for building datagrams.
    pub(super) buf: Vec<u8>,
}

impl Pair {
    /// The pair, and the client's connection config.
    pub(super) fn new(transport: TransportConfig) -> (Pair, ClientConfig) {
        let (client, server, cfg) = endpoints(transport);
        // The simulated clock starts anywhere; only the simulation moves it.
        #[allow(clippy::disallowed_methods)]
        let now = Instant::now();
        let pair = Pair {
            now,
            client,
            server,
            client_addr: "10.0.0.1:5000".parse().unwrap(),
            server_addr: "10.0.0.2:443".parse().unwrap(),
            buf: Vec::new(),
        };
        (pair, cfg)
    }

    /// Deliver datagram `d` to the client, from the server.
    pub(super) fn deliver_to_client(&mut self, d: &[u8]) {
        let from = self.server_addr;
        deliver(&mut self.client, self.now, from, d, |_| {});
    }

    /// Deliver datagram `d` to the server, from the client; `on_event` sees
    /// what it did.
    pub(super) fn deliver_to_server(&mut self, d: &[u8], on_event: impl FnMut(DatagramEvent)) {
        let from = self.client_addr;
        deliver(&mut self.server, self.now, from, d, on_event);
    }
}

/// One datagram into `ep`, in a receive buffer of its own (lent, as the
/// driver's are).
fn deliver(
    ep: &mut Endpoint,
    now: Instant,
    from: SocketAddr,
    d: &[u8],
    mut on_event: impl FnMut(DatagramEvent),
) {
    let mut buf = BytesMut::from(d);
    let len = d.len();
    ep.handle_batch(now, from, None, None, &mut buf, len, true, |e, _| {
        on_event(e)
    });
}

/// Byte `i` of every response.
pub(super) fn pattern(i: usize) -> u8 {
    (i % 251) as u8
}

/// Fires the timers of `ep`'s connections whose next timer `when` says is
/// at or before `now`.
pub(super) fn fire_due(
    ep: &mut Endpoint,
    now: Instant,
    when: impl Fn(&Connection) -> Option<Instant>,
) {
    let due: Vec<_> = ep
        .handles()
        .filter(|&h| ep.connection(h).and_then(&when).is_some_and(|t| t <= now))
        .collect();
    for h in due {
        ep.handle_timeout(h, now);
    }
}

/// (client endpoint, server endpoint, the client's connection config).
fn endpoints(transport: TransportConfig) -> (Endpoint, Endpoint, ClientConfig) {
    let id = Identity::self_signed(&["localhost"]).unwrap();
    let transport = Arc::new(transport);
    let mut server_cfg = crate::tls::server_config(&id, &[b"hq-interop"]).unwrap();
    server_cfg.transport = transport.clone();
    let mut client_cfg =
        crate::tls::client_config(Verify::Roots(vec![id.cert.clone()]), &[b"hq-interop"]).unwrap();
    client_cfg.transport = transport;
    let ep = |seed| {
        Arc::new(EndpointConfig {
            rng_seed: Some(seed),
            ..EndpointConfig::default()
        })
    };
    let client = Endpoint::new(ep(1), None);
    let server = Endpoint::new(ep(2), Some(Arc::new(server_cfg)));
    (client, server, client_cfg)
}
