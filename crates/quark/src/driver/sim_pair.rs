//! The set-up the driver's simulations share: a client and a server endpoint
//! (seeded, hq-interop, a self-signed certificate) with the same transport.

use std::sync::Arc;

use quark_proto::{ClientConfig, Endpoint, EndpointConfig, TransportConfig};

use crate::tls::{Identity, Verify};

/// (client endpoint, server endpoint, the client's connection config).
pub(super) fn endpoints(transport: TransportConfig) -> (Endpoint, Endpoint, ClientConfig) {
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
