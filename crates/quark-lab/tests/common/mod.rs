//! A server and a client of the lab's adapters on loopback, as most lab tests
//! start.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;

use quark_lab::adapter::{
    Cipher, Client, ClientConfig, Identity, ServeConfig, Server, ServerStats, find,
};

pub(crate) struct Pair {
    pub(crate) server: Box<dyn Server>,
    pub(crate) stats: Arc<ServerStats>,
    pub(crate) client: Arc<dyn Client>,
    pub(crate) addr: SocketAddr,
    pub(crate) identity: Identity,
}

/// `client`'s adapter against `server`'s, AES-128-GCM, one client socket.
pub(crate) async fn pair(server: &str, client: &str) -> Pair {
    pair_with(server, client, Cipher::Aes128Gcm, None, 1).await
}

pub(crate) async fn pair_with(
    server: &str,
    client: &str,
    cipher: Cipher,
    workers: Option<usize>,
    sockets: usize,
) -> Pair {
    let identity = Identity::generate().unwrap();
    let stats = Arc::new(ServerStats::default());
    let srv = find(server)
        .unwrap()
        .serve(ServeConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            identity: identity.clone(),
            cipher,
            stats: stats.clone(),
            workers,
        })
        .await
        .unwrap();
    let addr = srv.local_addr();
    let cl = find(client)
        .unwrap()
        .client(ClientConfig {
            server: addr,
            cert: identity.cert.clone(),
            cipher,
            sockets,
        })
        .await
        .unwrap();
    Pair {
        server: srv,
        stats,
        client: cl,
        addr,
        identity,
    }
}
