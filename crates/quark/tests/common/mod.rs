//! Helpers shared by the integration tests: deterministic payloads, their
//! digests and a client-side echo, so every test checks transfers the same way;
//! and the sockets a test's two endpoints use (kernel UDP or AF_XDP).

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};

use quark::{Connection, Endpoint};
use quark_udp::netns::{self, Side, VethPair};
use quark_udp::{Socket, XdpConfig, XdpSocket};
use sha2::{Digest, Sha256};

/// Set to run the loopback suite over AF_XDP (root; see [`sockets`]).
pub(crate) const XDP_TESTS_ENV: &str = "QUARK_TEST_XDP";

/// Sockets for a test's server and client, and the namespaces that must outlive
/// them. Kernel UDP on 127.0.0.1 normally; with `QUARK_TEST_XDP=1`, AF_XDP
/// sockets in two network namespaces joined by veth, so the same tests check
/// quark over kernel bypass. Must be called inside a tokio runtime.
pub(crate) fn sockets() -> (Socket, Socket, Option<VethPair>) {
    if std::env::var_os(XDP_TESTS_ENV).is_none() {
        let local: SocketAddr = "127.0.0.1:0".parse().unwrap();
        return (
            Socket::bind(local).unwrap(),
            Socket::bind(local).unwrap(),
            None,
        );
    }
    if let Some(why) = netns::unavailable() {
        panic!("{XDP_TESTS_ENV} is set but AF_XDP test beds cannot be made: {why}");
    }
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let pair = VethPair::create(&format!("qt{}-{n}", std::process::id() % 100_000))
        .expect("creating the veth test bed");
    let runtime = tokio::runtime::Handle::current();
    // A socket belongs to the namespace it is made in; it registers with this
    // test's runtime, which then drives it from the test's own thread.
    let bind = |side: &Side| -> Socket {
        let addr = SocketAddr::new(side.ip.into(), 0);
        let config = XdpConfig::new(&side.interface);
        let runtime = runtime.clone();
        netns::spawn_in(&side.netns, move || {
            let _entered = runtime.enter();
            XdpSocket::bind(addr, &config)
        })
        .join()
        .unwrap()
        .and_then(|bound| bound)
        .expect("binding an AF_XDP socket")
        .into()
    };
    (bind(&pair.a), bind(&pair.b), Some(pair))
}

/// Deterministic pseudo-random bytes (xorshift from `seed`) that a test can regenerate.
pub(crate) fn data(len: usize, seed: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 4);
    let mut x = seed | 1;
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(len);
    out
}

/// SHA-256 of `b`: transfers are compared by digest, not byte by byte.
pub(crate) fn sha(b: &[u8]) -> [u8; 32] {
    Sha256::digest(b).into()
}

/// Sends `body` on a new bidirectional stream and returns what the peer echoes back.
pub(crate) async fn echo(conn: &Connection, body: &[u8]) -> Vec<u8> {
    let (mut send, mut recv) = conn.open_bi().await.unwrap();
    let body = body.to_vec();
    let writer = tokio::spawn(async move {
        send.write_all(&body).await.unwrap();
        send.finish().unwrap();
    });
    let out = recv.read_to_end(usize::MAX).await.unwrap();
    writer.await.unwrap();
    out
}

/// The client's connection to `server` and the server's side of it.
pub(crate) async fn connect(
    server: &Endpoint,
    client: &Endpoint,
    config: quark::ClientConfig,
) -> (Connection, Connection) {
    let addr = server.local_addr().unwrap();
    let connecting = client.connect(config, addr, "localhost").unwrap();
    let (c, s) = tokio::join!(connecting, server.accept());
    (c.unwrap(), s.unwrap())
}

/// Server: echo every bidirectional stream.
pub(crate) fn spawn_echo(conn: Connection) {
    tokio::spawn(async move {
        while let Ok((mut send, mut recv)) = conn.accept_bi().await {
            tokio::spawn(async move {
                let body = recv.read_to_end(usize::MAX).await.unwrap();
                send.write_all(&body).await.unwrap();
                send.finish().unwrap();
                let _ = send.stopped().await;
            });
        }
    });
}

/// A server endpoint on 127.0.0.1 that echoes every stream of every connection,
/// a client endpoint beside it, a client configuration trusting the server,
/// and the server's address.
pub(crate) fn echo_server_and_client(
    alpn: &[u8],
) -> (Endpoint, Endpoint, quark::ClientConfig, SocketAddr) {
    echo_server_and_client_on(alpn, "127.0.0.1")
}

/// As `echo_server_and_client`, on the address `localhost` (127.0.0.1 or ::1).
pub(crate) fn echo_server_and_client_on(
    alpn: &[u8],
    localhost: &str,
) -> (Endpoint, Endpoint, quark::ClientConfig, SocketAddr) {
    use quark::tls::{self, Identity, Verify};
    let id = Identity::self_signed(&["localhost"]).unwrap();
    let localhost = SocketAddr::new(localhost.parse().unwrap(), 0);
    let server = Endpoint::server(tls::server_config(&id, &[alpn]).unwrap(), localhost).unwrap();
    let client = Endpoint::client(localhost).unwrap();
    let config = tls::client_config(Verify::Roots(vec![id.cert.clone()]), &[alpn]).unwrap();
    let addr = server.local_addr().unwrap();
    let accepting = server.clone();
    tokio::spawn(async move {
        while let Some(conn) = accepting.accept().await {
            spawn_echo(conn);
        }
    });
    (server, client, config, addr)
}
