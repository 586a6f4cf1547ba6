//! `quark relay`: a UDP relay that puts quark-netem's emulated link between
//! real processes. Each client source address gets its own upstream socket
//! (so the server sees one peer per client); both directions are impaired and
//! share one emulated path, as flows share a bottleneck.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow};
use quark_netem::Path;
use tokio::net::UdpSocket;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;

use crate::impair::{ImpairArgs, Impairment};
use crate::timer::Timer;

/// Options of `quark relay`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Address clients send to, e.g. 127.0.0.1:4434 (port 0: any; printed).
    #[arg(long)]
    listen: String,
    /// The server's address, e.g. 127.0.0.1:4433.
    #[arg(long)]
    to: String,
    /// Largest UDP payload the link carries; bigger datagrams are dropped, as
    /// on a real path with this MTU (loopback's 64 KiB lets PMTU discovery
    /// grow datagrams far past what the interop runner's links carry).
    #[arg(long, value_name = "BYTES")]
    mtu: Option<usize>,
    #[command(flatten)]
    impair: ImpairArgs,
}

/// Most clients relayed at once; the least recently active is forgotten beyond.
const MAX_SESSIONS: usize = 1024;
/// Most datagrams inside the emulated path per direction (bounds memory).
const MAX_QUEUED: usize = 100_000;
const MAX_DATAGRAM: usize = 65_535;

/// A datagram tagged with the session it belongs to.
#[derive(Clone)]
struct Tagged {
    session: u32,
    data: Vec<u8>,
}

impl AsRef<[u8]> for Tagged {
    fn as_ref(&self) -> &[u8] {
        &self.data
    }
}

impl AsMut<[u8]> for Tagged {
    fn as_mut(&mut self) -> &mut [u8] {
        &mut self.data
    }
}

enum Event {
    FromClient(SocketAddr, Vec<u8>),
    FromServer(u32, Vec<u8>),
}

struct Session {
    client: SocketAddr,
    upstream: Arc<UdpSocket>,
    reader: tokio::task::JoinHandle<()>,
    last: Instant,
}

/// Runs `quark relay`; returns the exit code.
pub(crate) fn run(args: Args) -> i32 {
    let parsed = (|| -> anyhow::Result<_> {
        let listen: SocketAddr = args.listen.parse().map_err(|_| {
            anyhow!(
                "--listen: '{}' is not an address like 127.0.0.1:4434",
                args.listen
            )
        })?;
        let to: SocketAddr = args
            .to
            .parse()
            .map_err(|_| anyhow!("--to: '{}' is not an address like 127.0.0.1:4433", args.to))?;
        let overhead = if to.is_ipv4() { 28 } else { 48 };
        Ok((listen, to, args.impair.build(overhead)?))
    })();
    let (listen, to, impairment) = match parsed {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e:#}");
            return 2;
        }
    };
    crate::run_async(relay(
        listen,
        to,
        impairment,
        args.mtu.unwrap_or(MAX_DATAGRAM),
    ))
}

/// A UDP socket with large buffers (bursts from a sender's window must not be
/// dropped by the relay's own socket before the emulated link sees them).
fn socket(addr: SocketAddr) -> anyhow::Result<UdpSocket> {
    let domain = socket2::Domain::for_address(addr);
    let s = socket2::Socket::new(domain, socket2::Type::DGRAM, None)?;
    for size in [8 << 20, 1 << 20] {
        if s.set_recv_buffer_size(size).is_ok() && s.set_send_buffer_size(size).is_ok() {
            break;
        }
    }
    s.set_nonblocking(true)?;
    s.bind(&addr.into())
        .with_context(|| format!("cannot bind {addr}"))?;
    Ok(UdpSocket::from_std(s.into())?)
}

async fn relay(
    listen: SocketAddr,
    to: SocketAddr,
    imp: Impairment,
    mtu: usize,
) -> anyhow::Result<()> {
    let listener = Arc::new(socket(listen)?);
    let local = listener.local_addr()?;
    listener.writable().await?;
    println!("listening {local}");
    eprintln!("relaying {local} -> {to}: {}", imp.describe());
    let mut path: Path<Tagged> = Path::new(imp.up.clone(), imp.down.clone(), imp.seed);
    path.up.set_max_queued(MAX_QUEUED);
    path.down.set_max_queued(MAX_QUEUED);
    let (tx, mut rx) = mpsc::channel::<Event>(4096);
    let reader = {
        let (listener, tx) = (listener.clone(), tx.clone());
        tokio::spawn(async move {
            let mut buf = vec![0u8; MAX_DATAGRAM];
            while let Ok((n, from)) = listener.recv_from(&mut buf).await {
                if tx
                    .send(Event::FromClient(from, buf[..n].to_vec()))
                    .await
                    .is_err()
                {
                    break;
                }
            }
        })
    };
    let timer = Timer::new()?;
    let mut int = signal(SignalKind::interrupt())?;
    let mut term = signal(SignalKind::terminate())?;
    let mut hup = signal(SignalKind::hangup())?;
    let mut sessions: HashMap<u32, Session> = HashMap::new();
    let mut by_client: HashMap<SocketAddr, u32> = HashMap::new();
    let mut next_id = 0u32;
    let mut send_errors = 0u64;
    let mut too_big = 0u64;
    let upstream_bind = match to.ip() {
        IpAddr::V4(v) if v.is_loopback() => SocketAddr::new(Ipv4Addr::LOCALHOST.into(), 0),
        IpAddr::V4(_) => SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), 0),
        IpAddr::V6(v) if v.is_loopback() => SocketAddr::new(Ipv6Addr::LOCALHOST.into(), 0),
        IpAddr::V6(_) => SocketAddr::new(Ipv6Addr::UNSPECIFIED.into(), 0),
    };
    let why = loop {
        let deadline = path.next_deadline();
        let mut events = Vec::new();
        tokio::select! {
            n = rx.recv_many(&mut events, 256) => if n == 0 {
                break "the listener stopped";
            },
            () = timer.sleep_until(deadline) => {}
            _ = int.recv() => break "interrupted",
            _ = term.recv() => break "terminated",
            _ = hup.recv() => break "hung up",
        }
        let now = Instant::now();
        for ev in events {
            let len = match &ev {
                Event::FromClient(_, d) | Event::FromServer(_, d) => d.len(),
            };
            if len > mtu {
                too_big += 1;
                continue;
            }
            match ev {
                Event::FromClient(from, data) => {
                    let id = match by_client.get(&from) {
                        Some(&id) => id,
                        None => {
                            if sessions.len() >= MAX_SESSIONS {
                                forget_oldest(&mut sessions, &mut by_client);
                            }
                            let upstream = Arc::new(socket(upstream_bind)?);
                            upstream.connect(to).await?;
                            // `try_send` trusts the readiness tokio has seen, and a
                            // new socket has seen none: without this each new
                            // client's first datagram was dropped (a 1 s handshake
                            // retransmission through the relay).
                            upstream.writable().await?;
                            let id = next_id;
                            next_id = next_id.wrapping_add(1);
                            let reader = spawn_upstream_reader(id, upstream.clone(), tx.clone());
                            sessions.insert(
                                id,
                                Session {
                                    client: from,
                                    upstream,
                                    reader,
                                    last: now,
                                },
                            );
                            by_client.insert(from, id);
                            id
                        }
                    };
                    if let Some(s) = sessions.get_mut(&id) {
                        s.last = now;
                    }
                    path.up.send(now, Tagged { session: id, data });
                }
                Event::FromServer(id, data) => path.down.send(now, Tagged { session: id, data }),
            }
        }
        while let Some(t) = path.up.poll(now) {
            if let Some(s) = sessions.get(&t.session)
                && s.upstream.try_send(&t.data).is_err()
            {
                send_errors += 1;
            }
        }
        while let Some(t) = path.down.poll(now) {
            if let Some(s) = sessions.get(&t.session)
                && listener.try_send_to(&t.data, s.client).is_err()
            {
                send_errors += 1;
            }
        }
    };
    reader.abort();
    for s in sessions.values() {
        s.reader.abort();
    }
    eprintln!("relay stopped ({why}) after {} clients", next_id);
    eprintln!("  client -> server: {}", path.up.counters());
    eprintln!("  server -> client: {}", path.down.counters());
    if too_big > 0 {
        eprintln!("  {too_big} datagrams dropped: larger than --mtu {mtu}");
    }
    if send_errors > 0 {
        eprintln!("  {send_errors} datagrams could not be sent (socket buffer full)");
    }
    Ok(())
}

fn spawn_upstream_reader(
    id: u32,
    upstream: Arc<UdpSocket>,
    tx: mpsc::Sender<Event>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut buf = vec![0u8; MAX_DATAGRAM];
        loop {
            match upstream.recv(&mut buf).await {
                Ok(n) => {
                    if tx
                        .send(Event::FromServer(id, buf[..n].to_vec()))
                        .await
                        .is_err()
                    {
                        break;
                    }
                }
                // ICMP port unreachable (server not up yet) surfaces here: keep going.
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                Err(_) => break,
            }
        }
    })
}

fn forget_oldest(sessions: &mut HashMap<u32, Session>, by_client: &mut HashMap<SocketAddr, u32>) {
    if let Some((&id, _)) = sessions.iter().min_by_key(|(_, s)| s.last)
        && let Some(s) = sessions.remove(&id)
    {
        s.reader.abort();
        by_client.remove(&s.client);
    }
}
