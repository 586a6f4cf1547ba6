//! Whole QUIC connections over AF_XDP, between two network namespaces joined by
//! veth (`quark_udp::netns`): an echo of 8 MiB each way, compared by SHA-256,
//! with both ends on AF_XDP and with an AF_XDP server and a kernel-UDP client.
//!
//! Needs root, `ip`, and a kernel with AF_XDP and BPF; otherwise each test says
//! why and passes.

use std::net::SocketAddr;
use std::time::Duration;

use quark::tls::{self, Identity, Verify};
use quark::{Connection, Endpoint};
use quark_udp::netns::{self, VethPair};
use quark_udp::{Socket, XdpConfig, XdpSocket};
use sha2::{Digest, Sha256};

const ALPN: &[u8] = b"test";
const SIZE: usize = 8 << 20;

fn data(len: usize, seed: u8) -> Vec<u8> {
    let mut out = Vec::with_capacity(len);
    let mut x = u32::from(seed) | 1;
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(len);
    out
}

fn sha(b: &[u8]) -> [u8; 32] {
    Sha256::digest(b).into()
}

/// Runs `f` in a current-thread runtime on a thread inside `netns`.
fn run_in<T: Send + 'static, Fut: Future<Output = T>>(
    netns: &str,
    f: impl FnOnce() -> Fut + Send + 'static,
) -> std::thread::JoinHandle<std::io::Result<T>> {
    netns::spawn_in(netns, move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(f())
    })
}

/// A namespace pair, or `None` after saying why there can't be one.
fn pair(test: &str) -> Option<VethPair> {
    if let Some(why) = netns::unavailable() {
        eprintln!("skipped: {why}");
        return None;
    }
    match VethPair::create(&format!("qq{}-{test}", std::process::id())) {
        Ok(p) => Some(p),
        Err(e) => {
            eprintln!("skipped: {e}");
            None
        }
    }
}

/// Binds `addr` over AF_XDP on `interface`, or over UDP when it is `None`.
fn socket(addr: SocketAddr, interface: Option<&str>) -> Option<Socket> {
    match interface {
        None => Some(Socket::bind_with(addr, None).unwrap()),
        Some(name) => match XdpSocket::bind(addr, &XdpConfig::new(name)) {
            Ok(s) => {
                eprintln!("AF_XDP on {name}: {}", s.mode());
                Some(s.into())
            }
            Err(e) => {
                eprintln!("skipped: no AF_XDP socket on {name}: {e}");
                None
            }
        },
    }
}

/// The server echoes one stream; the client sends `SIZE` bytes and checks the
/// echo. `client_xdp` chooses the client's backend.
fn echo(test: &str, client_xdp: bool) {
    let Some(pair) = pair(test) else { return };
    let (a, b) = (pair.a.clone(), pair.b.clone());
    let server_addr = SocketAddr::new(a.ip.into(), 4433);
    let id = Identity::self_signed(&["localhost"]).unwrap();
    let cert = id.cert.clone();
    let (ready, wait) = tokio::sync::oneshot::channel::<bool>();
    let server = run_in(&a.netns, move || async move {
        let Some(sock) = socket(server_addr, Some(&a.interface)) else {
            let _ = ready.send(false);
            return None;
        };
        let config = tls::server_config(&id, &[ALPN]).unwrap();
        let ep = Endpoint::with_socket(Default::default(), Some(config), sock).unwrap();
        ready.send(true).unwrap();
        let conn: Connection = ep.accept().await.unwrap();
        let (mut send, mut recv) = conn.accept_bi().await.unwrap();
        let body = recv.read_to_end(usize::MAX).await.unwrap();
        send.write_all(&body).await.unwrap();
        send.finish().unwrap();
        let _ = send.stopped().await;
        conn.closed().await;
        Some(sha(&body))
    });
    let client = run_in(&b.netns, move || async move {
        if !wait.await.unwrap() {
            return None;
        }
        let iface = client_xdp.then_some(b.interface.as_str());
        let sock = socket(SocketAddr::new(b.ip.into(), 0), iface)?;
        let ep = Endpoint::with_socket(Default::default(), None, sock).unwrap();
        let config = tls::client_config(Verify::Roots(vec![cert]), &[ALPN]).unwrap();
        let conn = ep
            .connect(config, server_addr, "localhost")
            .unwrap()
            .await
            .unwrap();
        let (mut send, mut recv) = conn.open_bi().await.unwrap();
        let body = data(SIZE, 7);
        let sent = sha(&body);
        let writer = tokio::spawn(async move {
            send.write_all(&body).await.unwrap();
            send.finish().unwrap();
        });
        // A guard against hanging forever, not a timing assertion.
        let got = tokio::time::timeout(Duration::from_secs(120), recv.read_to_end(usize::MAX))
            .await
            .expect("echo did not finish")
            .unwrap();
        writer.await.unwrap();
        let stats = conn.stats();
        conn.close(0, b"done");
        ep.wait_idle().await;
        Some((sent, got.len(), sha(&got), stats))
    });
    let client = client.join().unwrap().unwrap();
    let server = server.join().unwrap().unwrap();
    let (Some((sent, len, echoed, stats)), Some(received)) = (client, server) else {
        return;
    };
    eprintln!("client stats: {stats:?}");
    assert_eq!(received, sent, "what the server received");
    assert_eq!(len, SIZE);
    assert_eq!(echoed, sent, "what came back");
}

#[test]
fn echo_with_both_ends_on_af_xdp() {
    echo("xx", true);
}

#[test]
fn echo_between_af_xdp_server_and_udp_client() {
    echo("xu", false);
}
