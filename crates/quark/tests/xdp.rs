//! Whole QUIC connections over AF_XDP, between two network namespaces joined by
//! veth (`quark_udp::netns`): an echo of 8 MiB each way, compared by SHA-256,
//! with both ends on AF_XDP and with an AF_XDP server and a kernel-UDP client.
//!
//! Needs root, `ip`, and a kernel with AF_XDP and BPF; otherwise each test says
//! why and passes.

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use common::{data, sha};
use quark::tls::{self, Identity, Verify};
use quark::{Connection, Endpoint};
use quark_udp::netns::{self, VethPair};
use quark_udp::{Socket, XdpConfig, XdpSocket};

const ALPN: &[u8] = b"test";
const SIZE: usize = 8 << 20;

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

/// Which datagram backend one end uses in [`measure_cpu_per_gigabyte`].
#[derive(Debug, Clone, Copy)]
enum Backend {
    Xdp,
    /// Kernel UDP with GSO and GRO (quark's default).
    Udp,
    /// Kernel UDP, one system call per `BATCH_SIZE` datagrams, no GSO/GRO.
    UdpPlain,
}

fn open(side: &netns::Side, port: u16, backend: Backend) -> Socket {
    let addr = SocketAddr::new(side.ip.into(), port);
    match backend {
        Backend::Xdp => XdpSocket::bind(addr, &XdpConfig::new(&side.interface))
            .unwrap()
            .into(),
        Backend::Udp | Backend::UdpPlain => {
            let s = quark_udp::UdpSocket::bind(addr).unwrap();
            let offload = matches!(backend, Backend::Udp);
            s.set_gso(offload);
            s.set_gro(offload).unwrap();
            s.into()
        }
    }
}

fn thread_cpu() -> Duration {
    let (user, sys) = netns::thread_cpu_time();
    user + sys
}

/// Downloads `size` bytes from a server in namespace a to a client in b; returns
/// (server CPU, client CPU, ksoftirqd CPU, wall time of the download).
fn download(backend: Backend, size: usize) -> Option<(Duration, Duration, Duration, Duration)> {
    let pair = pair("cpu")?;
    let (a, b) = (pair.a.clone(), pair.b.clone());
    let server_addr = SocketAddr::new(a.ip.into(), 4433);
    let id = Identity::self_signed(&["localhost"]).unwrap();
    let cert = id.cert.clone();
    let (ready, wait) = tokio::sync::oneshot::channel::<()>();
    let server = run_in(&pair.a.netns, move || async move {
        let config = tls::server_config(&id, &[ALPN]).unwrap();
        let sock = open(&a, 4433, backend);
        let ep = Endpoint::with_socket(Default::default(), Some(config), sock).unwrap();
        ready.send(()).unwrap();
        let start = thread_cpu();
        let conn = ep.accept().await.unwrap();
        let (mut send, mut recv) = conn.accept_bi().await.unwrap();
        recv.read_to_end(64).await.unwrap();
        let chunk = data(1 << 20, 1);
        let mut left = size;
        while left > 0 {
            let n = left.min(chunk.len());
            send.write_all(&chunk[..n]).await.unwrap();
            left -= n;
        }
        send.finish().unwrap();
        let _ = send.stopped().await;
        conn.closed().await;
        thread_cpu() - start
    });
    let client = run_in(&pair.b.netns, move || async move {
        wait.await.unwrap();
        let sock = open(&b, 0, backend);
        let ep = Endpoint::with_socket(Default::default(), None, sock).unwrap();
        let config = tls::client_config(Verify::Roots(vec![cert]), &[ALPN]).unwrap();
        let (start, cpu) = (std::time::Instant::now(), thread_cpu());
        let conn = ep
            .connect(config, server_addr, "localhost")
            .unwrap()
            .await
            .unwrap();
        let (mut send, mut recv) = conn.open_bi().await.unwrap();
        send.write_all(b"get").await.unwrap();
        send.finish().unwrap();
        let mut buf = vec![0u8; 1 << 16];
        let mut got = 0;
        while let Some(n) = recv.read(&mut buf).await.unwrap() {
            got += n;
        }
        assert_eq!(got, size);
        let wall = start.elapsed();
        conn.close(0, b"done");
        ep.wait_idle().await;
        (thread_cpu() - cpu, wall)
    });
    let soft = netns::ksoftirqd_time();
    let (client_cpu, wall) = client.join().unwrap().unwrap();
    let server_cpu = server.join().unwrap().unwrap();
    Some((server_cpu, client_cpu, netns::ksoftirqd_time() - soft, wall))
}

/// CPU seconds per GB for a download between the namespaces, AF_XDP against
/// kernel UDP. A measurement (`cargo test -p quark --release --test xdp --
/// --ignored --nocapture`); results in BENCHMARKS.md.
#[test]
#[ignore = "measurement"]
fn measure_cpu_per_gigabyte() {
    const SIZE: usize = 512 << 20;
    println!(
        "| backend | server CPU s/GB | client CPU s/GB | ksoftirqd s/GB | total | goodput Mbit/s |"
    );
    println!("|---|---|---|---|---|---|");
    // `MEASURE_ONLY=Xdp` (or Udp, UdpPlain) runs one backend once, e.g. under perf.
    let only = std::env::var("MEASURE_ONLY").ok();
    let rounds = if only.is_some() { 1 } else { 3 };
    for _round in 0..rounds {
        for backend in [Backend::Xdp, Backend::Udp, Backend::UdpPlain] {
            if only.as_ref().is_some_and(|o| *o != format!("{backend:?}")) {
                continue;
            }
            let Some((server, client, soft, wall)) = download(backend, SIZE) else {
                return;
            };
            let per_gb = |d: Duration| d.as_secs_f64() / (SIZE as f64 / 1e9);
            println!(
                "| {backend:?} | {:.2} | {:.2} | {:.2} | {:.2} | {:.0} |",
                per_gb(server),
                per_gb(client),
                per_gb(soft),
                per_gb(server + client + soft),
                SIZE as f64 * 8.0 / wall.as_secs_f64() / 1e6
            );
        }
    }
}
