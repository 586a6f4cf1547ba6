//! `WorkerGroup` over real sockets: many connections from many client sockets
//! spread over workers with every byte echoed intact, a client socket's
//! connections on one worker, datagrams delivered to the wrong worker passed to
//! the right one, and a clean shutdown. Kernel UDP on loopback by default;
//! `QUARK_TEST_XDP=1` (root) runs the same tests with the group on AF_XDP (a
//! socket per queue of a multi-queue veth) and kernel-UDP clients in the other
//! namespace (see [`Bed`]).

mod common;

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{XDP_TESTS_ENV, data, echo, sha};
use quark::tls::{self, Identity, Verify};
use quark::{Connection, ConnectionError, Endpoint, WorkerGroup};
use quark_proto::{EndpointConfig, ServerConfig};
use quark_udp::XdpConfig;
use quark_udp::netns::{self, VethPair};

const ALPN: &[u8] = b"test";
const LIMIT: Duration = Duration::from_secs(120);

/// Where a test's group and clients live: loopback; or, with `QUARK_TEST_XDP`,
/// the group on AF_XDP in namespace a of a veth pair with a queue per worker and
/// the clients on kernel UDP in namespace b (one XDP program per interface
/// leaves no room for many AF_XDP clients; their flows' hash picks the queue).
struct Bed {
    pair: Option<VethPair>,
}

impl Bed {
    fn new(workers: u32) -> Self {
        if std::env::var_os(XDP_TESTS_ENV).is_none() {
            return Self { pair: None };
        }
        if let Some(why) = netns::unavailable() {
            panic!("{XDP_TESTS_ENV} is set but AF_XDP test beds cannot be made: {why}");
        }
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let name = format!("qw{}-{n}", std::process::id() % 100_000);
        let pair = VethPair::with_queues(&name, workers).expect("creating the veth test bed");
        Self { pair: Some(pair) }
    }

    /// Runs `f` on a thread in the server's namespace (this one on loopback).
    fn on_server<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> T {
        match &self.pair {
            None => f(),
            Some(p) => netns::spawn_in(&p.a.netns, f).join().unwrap().unwrap(),
        }
    }

    fn group(&self, server: ServerConfig, workers: usize) -> std::io::Result<WorkerGroup> {
        let (addr, xdp) = match &self.pair {
            None => ("127.0.0.1:0".parse().unwrap(), None),
            Some(p) => (
                SocketAddr::new(p.a.ip.into(), 0),
                Some(XdpConfig::new(&p.a.interface)),
            ),
        };
        self.on_server(move || {
            let config = EndpointConfig::default();
            WorkerGroup::bind_with(config, server, addr, workers, xdp.as_ref())
        })
    }

    /// A client endpoint in the current runtime.
    fn client(&self) -> Endpoint {
        let Some(p) = &self.pair else {
            return Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
        };
        let runtime = tokio::runtime::Handle::current();
        let addr = SocketAddr::new(p.b.ip.into(), 0);
        netns::spawn_in(&p.b.netns, move || {
            let _entered = runtime.enter();
            let socket = quark_udp::Socket::bind_with(addr, None).unwrap();
            Endpoint::with_socket(EndpointConfig::default(), None, socket).unwrap()
        })
        .join()
        .unwrap()
        .unwrap()
    }

    /// Over AF_XDP: each of `workers` took datagrams off its own queue's rings.
    fn check_xdp(&self, group: &WorkerGroup, workers: &[usize]) {
        if self.pair.is_none() {
            return;
        }
        for &i in workers {
            let stats = group.worker(i).unwrap().xdp_stats();
            let stats = stats.expect("an AF_XDP worker").unwrap();
            assert!(stats.received_xdp > 0, "worker {i}: {stats:?}");
        }
    }
}

/// Remote address → workers that held a connection from it.
type Placement = Arc<Mutex<HashMap<SocketAddr, HashSet<usize>>>>;

/// A group of `workers` echoing every bidirectional stream, recording where each
/// connection landed.
fn echo_group(bed: &Bed, workers: usize) -> (WorkerGroup, quark::ClientConfig, Placement) {
    let id = Identity::self_signed(&["localhost"]).unwrap();
    let server = tls::server_config(&id, &[ALPN]).unwrap();
    let group = bed.group(server, workers).unwrap();
    let placement = Placement::default();
    let seen = placement.clone();
    group.serve(move |conn| {
        let worker = conn.worker().expect("a worker's connection");
        seen.lock()
            .unwrap()
            .entry(conn.remote_address())
            .or_default()
            .insert(worker);
        serve_echo(conn)
    });
    let config = tls::client_config(Verify::Roots(vec![id.cert.clone()]), &[ALPN]).unwrap();
    (group, config, placement)
}

async fn serve_echo(conn: Connection) {
    while let Ok((mut send, mut recv)) = conn.accept_bi().await {
        // On the worker's runtime, as the connection is.
        tokio::spawn(async move {
            let Ok(body) = recv.read_to_end(usize::MAX).await else {
                return;
            };
            if send.write_all(&body).await.is_ok() {
                let _ = send.finish();
            }
        });
    }
}

#[tokio::test]
async fn two_hundred_connections_from_twenty_sockets() {
    let bed = Bed::new(2);
    let (group, config, placement) = echo_group(&bed, 2);
    let addr = group.local_addr();
    let clients: Vec<Endpoint> = (0..20).map(|_| bed.client()).collect();
    let mut tasks = Vec::new();
    for i in 0..200u32 {
        let client = clients[i as usize % clients.len()].clone();
        let config = config.clone();
        tasks.push(tokio::spawn(async move {
            let conn = client
                .connect(config, addr, "localhost")
                .unwrap()
                .await
                .unwrap();
            for (s, len) in [1usize, 3000, 40_000].into_iter().enumerate() {
                let body = data(len + i as usize, i * 3 + s as u32);
                let got = echo(&conn, &body).await;
                assert_eq!(got.len(), body.len(), "connection {i}");
                assert_eq!(sha(&got), sha(&body), "connection {i}");
            }
            conn
        }));
    }
    let mut conns = Vec::new();
    for t in tasks {
        conns.push(tokio::time::timeout(LIMIT, t).await.unwrap().unwrap());
    }
    let placement = placement.lock().unwrap().clone();
    assert_eq!(
        placement.len(),
        clients.len(),
        "one entry per client socket"
    );
    for (remote, workers) in &placement {
        assert_eq!(workers.len(), 1, "{remote}'s connections span {workers:?}");
    }
    let used: HashSet<usize> = placement.values().flatten().copied().collect();
    // 20 sockets all hashed to one of 2 workers: odds 2^-19.
    assert_eq!(
        used.len(),
        2,
        "the kernel spread the sockets over both workers"
    );
    let stats = group.stats();
    assert_eq!(stats.iter().map(|s| s.connections).sum::<usize>(), 200);
    for s in &stats {
        assert_eq!(s.forwarded, 0, "nothing needed forwarding: {stats:?}");
        assert_eq!(s.dropped, 0);
    }
    bed.check_xdp(&group, &[0, 1]);
    drop(conns);
    group.shutdown(0, b"done").await;
}

/// Connect clients until one connection lands on `worker`.
async fn connection_on(
    bed: &Bed,
    group: &WorkerGroup,
    config: &quark::ClientConfig,
    placement: &Placement,
    worker: usize,
) -> (Endpoint, Connection) {
    for _ in 0..64 {
        let client = bed.client();
        let conn = client
            .connect(config.clone(), group.local_addr(), "localhost")
            .unwrap()
            .await
            .unwrap();
        // The server records the placement before serving the first stream.
        assert_eq!(echo(&conn, &[7]).await, [7]);
        let local = client.local_addr().unwrap();
        if placement.lock().unwrap()[&local].contains(&worker) {
            return (client, conn);
        }
        conn.close(0, b"");
    }
    panic!("no client socket hashed to worker {worker} in 64 tries");
}

#[tokio::test]
async fn misdelivered_datagrams_are_forwarded_to_their_worker() {
    let bed = Bed::new(2);
    let (group, config, placement) = echo_group(&bed, 2);
    let (_client, conn) = connection_on(&bed, &group, &config, &placement, 0).await;
    // From now on whatever worker 0's socket receives is handed to worker 1 as
    // if the kernel had put it there; worker 1 must pass it back, not reset.
    group.test_misdeliver(Some(1));
    let body = data(2 << 20, 99);
    let got = tokio::time::timeout(LIMIT, echo(&conn, &body))
        .await
        .unwrap();
    assert_eq!(sha(&got), sha(&body));
    let stats = group.stats();
    assert!(stats[0].misdelivered > 0, "{stats:?}");
    assert!(stats[1].forwarded > 0, "{stats:?}");
    assert!(stats[0].received_forwarded > 0, "{stats:?}");
    assert_eq!(stats[1].misdelivered + stats[0].forwarded, 0, "{stats:?}");
    group.test_misdeliver(None);
    // The connection is fine afterwards too.
    let body = data(100_000, 5);
    assert_eq!(sha(&echo(&conn, &body).await), sha(&body));
    bed.check_xdp(&group, &[0]);
    group.shutdown(0, b"done").await;
}

#[tokio::test]
async fn shutdown_closes_every_worker() {
    let bed = Bed::new(3);
    let (group, config, _placement) = echo_group(&bed, 3);
    let addr = group.local_addr();
    let mut conns = Vec::new();
    for _ in 0..12 {
        let client = bed.client();
        let conn = client
            .connect(config.clone(), addr, "localhost")
            .unwrap()
            .await
            .unwrap();
        assert_eq!(echo(&conn, &[1, 2, 3]).await, [1, 2, 3]);
        conns.push((client, conn));
    }
    assert_eq!(group.connection_count(), 12);
    tokio::time::timeout(LIMIT, group.shutdown(42, b"bye"))
        .await
        .unwrap();
    for (_, conn) in &conns {
        match conn.closed().await {
            ConnectionError::ApplicationClosed { code, reason } => {
                assert_eq!((code, reason.as_str()), (42, "bye"));
            }
            e => panic!("unexpected close: {e:?}"),
        }
    }
    // Every worker's socket is gone: the port can be bound without SO_REUSEPORT
    // (and over AF_XDP a new program can be attached: the old one went with
    // the last socket).
    // Over AF_XDP the last socket went a moment after shutdown returned in
    // one CI run of 2026-11-30 (AddrInUse; not reproduced in 10 local
    // runs): allow the kernel a second.
    bed.on_server(move || {
        let end = std::time::Instant::now() + Duration::from_secs(1);
        loop {
            match std::net::UdpSocket::bind(addr) {
                Ok(s) => break s,
                Err(e) if std::time::Instant::now() >= end => panic!("port released: {e}"),
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
    });
    if bed.pair.is_some() {
        let id = Identity::self_signed(&["localhost"]).unwrap();
        let again = bed.group(tls::server_config(&id, &[ALPN]).unwrap(), 3);
        again.expect("the interface is free for a new group");
    }
}

#[tokio::test]
async fn accept_yields_connections_of_every_worker() {
    let bed = Bed::new(2);
    let id = Identity::self_signed(&["localhost"]).unwrap();
    let group = bed
        .group(tls::server_config(&id, &[ALPN]).unwrap(), 2)
        .unwrap();
    let config = tls::client_config(Verify::Roots(vec![id.cert.clone()]), &[ALPN]).unwrap();
    let addr = group.local_addr();
    let mut clients = Vec::new();
    let mut workers = HashSet::new();
    for i in 0..24u32 {
        let client = bed.client();
        let connecting = client.connect(config.clone(), addr, "localhost").unwrap();
        let (c, s) = tokio::join!(connecting, group.accept());
        let (c, s) = (c.unwrap(), s.unwrap());
        workers.insert(s.worker().unwrap());
        // The connection's tasks run on its worker.
        let echo_task = s.spawn(serve_echo(s.clone()));
        let body = data(5000, i);
        assert_eq!(sha(&echo(&c, &body).await), sha(&body));
        clients.push((client, c, echo_task));
    }
    assert_eq!(workers.len(), 2, "24 sockets all on one worker: odds 2^-23");
    bed.check_xdp(&group, &[0, 1]);
    group.shutdown(0, b"").await;
    for (_, _, task) in clients {
        // Dropped with the worker's runtime, or ended with the connection.
        let _ = task.await;
    }
    assert!(
        bed.group(tls::server_config(&id, &[ALPN]).unwrap(), 0)
            .is_err()
    );
}

#[tokio::test]
async fn the_workers_learn_path_rtts_together() {
    let bed = Bed::new(3);
    let (group, config, placement) = echo_group(&bed, 3);
    let first = group.worker(0).unwrap();
    for i in 1..3 {
        assert!(group.worker(i).unwrap().shares_path_rtts_with(first), "{i}");
    }
    // An endpoint of its own does not, and the shared cache serves
    // connections on every worker.
    let client = bed.client();
    assert!(!client.shares_path_rtts_with(first));
    let mut conns = Vec::new();
    for _ in 0..12 {
        let client = bed.client();
        let conn = client
            .connect(config.clone(), group.local_addr(), "localhost")
            .unwrap()
            .await
            .unwrap();
        assert_eq!(echo(&conn, &data(3000, 7)).await, data(3000, 7));
        conns.push((client, conn));
    }
    let workers: HashSet<usize> = placement
        .lock()
        .unwrap()
        .values()
        .flatten()
        .copied()
        .collect();
    assert!(workers.len() > 1, "{workers:?}");
}
