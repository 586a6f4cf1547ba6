//! `quark relay`: a UDP relay that puts quark-netem's emulated link between
//! real processes. Each client source address gets its own upstream socket
//! (so the server sees one peer per client); both directions are impaired and
//! share one emulated path, as flows share a bottleneck. ECN marks are
//! read and forwarded; what the relay saw is printed when it stops
//! (`relay_watch`). `--rebind` emulates a NAT rebinding the client's address.

use std::collections::HashMap;
use std::io::IoSliceMut;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow};
use quark_netem::Path;
use quark_udp::{RecvMeta, Transmit, UdpSocket};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;

use crate::impair::{ImpairArgs, Impairment};
use crate::relay_watch::{MAX_PATHS, PathSeen, Watch};
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
    /// Drop these client-to-server datagrams (1-based, counted over all
    /// clients), like the interop runner's droplist scenario: 2,3,4,5,6,7.
    #[arg(long, value_name = "N,N,..", value_delimiter = ',')]
    drop_to_server: Vec<u64>,
    /// NAT rebinding: each client's upstream socket moves to a new port at
    /// FIRST and then every EVERY, e.g. 1s/5s (the runner's rebind scenario).
    #[arg(long, value_name = "FIRST/EVERY")]
    rebind: Option<String>,
    /// With --rebind, the source address changes too (cycling through
    /// 127.0.0.1-127.0.0.4; IPv4 loopback only).
    #[arg(long)]
    rebind_addr: bool,
    #[command(flatten)]
    impair: ImpairArgs,
}

/// When and how the relay rebinds its clients' upstream sockets.
#[derive(Clone, Copy)]
struct Rebind {
    first: Duration,
    every: Duration,
    addr: bool,
}

fn parse_rebind(spec: &str, addr: bool, to: SocketAddr) -> anyhow::Result<Rebind> {
    let (first, every) = spec
        .split_once('/')
        .ok_or_else(|| anyhow!("--rebind: '{spec}' is not FIRST/EVERY like 1s/5s"))?;
    let first = quark_netem::parse::duration(first).map_err(|e| anyhow!("--rebind: {}", e.0))?;
    let every = quark_netem::parse::duration(every).map_err(|e| anyhow!("--rebind: {}", e.0))?;
    if every.is_zero() {
        return Err(anyhow!("--rebind: EVERY must be more than 0"));
    }
    if addr && !matches!(to.ip(), IpAddr::V4(v) if v.is_loopback()) {
        return Err(anyhow!("--rebind-addr needs an IPv4 loopback --to"));
    }
    Ok(Rebind { first, every, addr })
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
    ecn: u8,
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
    FromClient(SocketAddr, u8, Vec<u8>),
    /// Session, upstream socket generation (rebinding), ECN bits, datagram.
    FromServer(u32, u32, u8, Vec<u8>),
}

struct Session {
    client: SocketAddr,
    upstream: Arc<UdpSocket>,
    reader: tokio::task::JoinHandle<()>,
    last: Instant,
    /// Upstream sockets so far (1 + rebindings); packets to an older one are
    /// dropped, as a NAT drops them after a rebinding.
    generation: u32,
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
        let rebind = match &args.rebind {
            Some(spec) => Some(parse_rebind(spec, args.rebind_addr, to)?),
            None if args.rebind_addr => return Err(anyhow!("--rebind-addr needs --rebind")),
            None => None,
        };
        let knobs = Knobs {
            mtu: args.mtu.unwrap_or(MAX_DATAGRAM),
            drop_to_server: args.drop_to_server.clone(),
            rebind,
        };
        Ok((listen, to, args.impair.build(overhead)?, knobs))
    })();
    let (listen, to, impairment, knobs) = match parsed {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e:#}");
            return 2;
        }
    };
    crate::run_async(relay(listen, to, impairment, knobs))
}

/// The relay's options besides the link.
struct Knobs {
    mtu: usize,
    drop_to_server: Vec<u64>,
    rebind: Option<Rebind>,
}

/// A UDP socket with large buffers (bursts from a sender's window must not be
/// dropped by the relay's own socket before the emulated link sees them),
/// reading ECN marks (quark-udp), one datagram per receive (no GRO).
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
    let s = UdpSocket::from_std(s.into())?;
    s.set_gro(false)?;
    s.set_gso(false);
    Ok(s)
}

/// Sends one datagram with its ECN bits; false if the socket buffer is full.
fn send(socket: &UdpSocket, to: SocketAddr, ecn: u8, data: &[u8]) -> bool {
    let t = Transmit {
        destination: to,
        ecn,
        contents: data,
        segment_size: None,
        src_ip: None,
    };
    matches!(socket.try_send(&[t]), Ok(1))
}

/// The address of the `n`th upstream socket: the same loopback address (a
/// new port) or, with `--rebind-addr`, the next of 127.0.0.1-127.0.0.4.
fn upstream_addr(base: SocketAddr, rebind: Option<Rebind>, n: u32) -> SocketAddr {
    match rebind {
        Some(r) if r.addr => {
            let last = u8::try_from(n % 4).unwrap_or(0) + 1;
            SocketAddr::new(Ipv4Addr::new(127, 0, 0, last).into(), 0)
        }
        _ => base,
    }
}

async fn relay(
    listen: SocketAddr,
    to: SocketAddr,
    imp: Impairment,
    knobs: Knobs,
) -> anyhow::Result<()> {
    let mtu = knobs.mtu;
    let listener = Arc::new(socket(listen)?);
    let local = listener.local_addr()?;
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
            let mut meta = [RecvMeta::default()];
            loop {
                let got = listener
                    .recv(&mut [IoSliceMut::new(&mut buf)], &mut meta)
                    .await;
                match got {
                    Ok(1) => {
                        let m = meta[0];
                        let ev = Event::FromClient(m.addr, m.ecn, buf[..m.len].to_vec());
                        if tx.send(ev).await.is_err() {
                            break;
                        }
                    }
                    Ok(_) => {}
                    Err(_) => break,
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
    let mut to_server_seen = 0u64;
    let mut dropped_by_list = 0u64;
    let mut watch = Watch::default();
    let started = Instant::now();
    let mut next_rebind = knobs.rebind.map(|r| started + r.first);
    let upstream_bind = match to.ip() {
        IpAddr::V4(v) if v.is_loopback() => SocketAddr::new(Ipv4Addr::LOCALHOST.into(), 0),
        IpAddr::V4(_) => SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), 0),
        IpAddr::V6(v) if v.is_loopback() => SocketAddr::new(Ipv6Addr::LOCALHOST.into(), 0),
        IpAddr::V6(_) => SocketAddr::new(Ipv6Addr::UNSPECIFIED.into(), 0),
    };
    let why = loop {
        let deadline = match (path.next_deadline(), next_rebind) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
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
        // A NAT forgets the old mapping at the rebinding instant, but what
        // reached it before then still passes: take everything already
        // received (queued by the readers or still in the old sockets)
        // before the sockets move. A relay starved of CPU would otherwise
        // drop a whole flight the server sent well before the rebinding.
        let rebind_due = next_rebind.is_some_and(|at| now >= at);
        if rebind_due {
            while let Ok(ev) = rx.try_recv() {
                events.push(ev);
            }
            for (&id, s) in &sessions {
                drain(id, s, &mut events);
            }
        }
        for ev in events {
            let len = match &ev {
                Event::FromClient(_, _, d) | Event::FromServer(_, _, _, d) => d.len(),
            };
            if len > mtu {
                too_big += 1;
                continue;
            }
            match ev {
                Event::FromClient(from, ecn, data) => {
                    watch.up.saw(&data, ecn, now);
                    to_server_seen += 1;
                    if knobs.drop_to_server.contains(&to_server_seen) {
                        dropped_by_list += 1;
                        continue;
                    }
                    let id = match by_client.get(&from) {
                        Some(&id) => id,
                        None => {
                            if sessions.len() >= MAX_SESSIONS {
                                forget_oldest(&mut sessions, &mut by_client);
                            }
                            // quark-udp's `try_send` calls sendmmsg directly (tokio's
                            // waited for readiness a new socket had not seen yet and
                            // dropped each new client's first datagram).
                            let upstream = Arc::new(socket(upstream_bind)?);
                            let id = next_id;
                            next_id = next_id.wrapping_add(1);
                            if id == 0 {
                                watch.paths.push(path_seen(&upstream));
                            }
                            let reader = spawn_upstream_reader(id, 1, upstream.clone(), tx.clone());
                            sessions.insert(
                                id,
                                Session {
                                    client: from,
                                    upstream,
                                    reader,
                                    last: now,
                                    generation: 1,
                                },
                            );
                            by_client.insert(from, id);
                            id
                        }
                    };
                    if let Some(s) = sessions.get_mut(&id) {
                        s.last = now;
                    }
                    path.up.send(
                        now,
                        Tagged {
                            session: id,
                            ecn,
                            data,
                        },
                    );
                }
                Event::FromServer(id, generation, ecn, data) => {
                    // After a rebinding the NAT has forgotten the old mapping.
                    if sessions.get(&id).is_none_or(|s| s.generation != generation) {
                        continue;
                    }
                    watch.down.saw(&data, ecn, now);
                    if id == 0 {
                        watch.amplification.server_sent(data.len());
                        if let Some(p) = watch.paths.last_mut() {
                            p.from_server += 1;
                        }
                    }
                    path.down.send(
                        now,
                        Tagged {
                            session: id,
                            ecn,
                            data,
                        },
                    );
                }
            }
        }
        if let (true, Some(at), Some(r)) = (rebind_due, next_rebind, knobs.rebind) {
            next_rebind = Some(at + r.every);
            for (&id, s) in sessions.iter_mut() {
                let addr = upstream_addr(upstream_bind, knobs.rebind, s.generation);
                let upstream = Arc::new(socket(addr)?);
                s.reader.abort();
                s.generation += 1;
                s.reader = spawn_upstream_reader(id, s.generation, upstream.clone(), tx.clone());
                s.upstream = upstream;
                if id == 0 && watch.paths.len() < MAX_PATHS {
                    watch.paths.push(path_seen(&s.upstream));
                }
            }
        }
        while let Some(t) = path.up.poll(now) {
            if let Some(s) = sessions.get(&t.session) {
                if t.session == 0 {
                    watch.amplification.client_sent(&t.data);
                    if let Some(p) = watch.paths.last_mut() {
                        p.to_server += 1;
                    }
                }
                if !send(&s.upstream, to, t.ecn, &t.data) {
                    send_errors += 1;
                }
            }
        }
        while let Some(t) = path.down.poll(now) {
            if let Some(s) = sessions.get(&t.session)
                && !send(&listener, s.client, t.ecn, &t.data)
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
    if dropped_by_list > 0 {
        eprintln!("  {dropped_by_list} client datagrams dropped by --drop-to-server");
    }
    if send_errors > 0 {
        eprintln!("  {send_errors} datagrams could not be sent (socket buffer full)");
    }
    eprintln!("{}", watch.report());
    Ok(())
}

fn path_seen(upstream: &UdpSocket) -> PathSeen {
    PathSeen {
        local: upstream
            .local_addr()
            .map(|a| a.to_string())
            .unwrap_or_default(),
        to_server: 0,
        from_server: 0,
    }
}

/// Datagrams waiting in a session's upstream socket, as its reader would
/// have queued them.
fn drain(id: u32, s: &Session, events: &mut Vec<Event>) {
    let mut buf = vec![0u8; MAX_DATAGRAM];
    let mut meta = [RecvMeta::default()];
    let mut bufs = [IoSliceMut::new(&mut buf)];
    while let Ok(1) = s.upstream.try_recv(&mut bufs, &mut meta) {
        events.push(from_server(id, s.generation, meta[0], &bufs[0]));
    }
}

/// The event for one datagram a session's upstream socket received.
fn from_server(id: u32, generation: u32, m: RecvMeta, buf: &[u8]) -> Event {
    Event::FromServer(id, generation, m.ecn, buf[..m.len].to_vec())
}

fn spawn_upstream_reader(
    id: u32,
    generation: u32,
    upstream: Arc<UdpSocket>,
    tx: mpsc::Sender<Event>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut buf = vec![0u8; MAX_DATAGRAM];
        let mut meta = [RecvMeta::default()];
        loop {
            match upstream
                .recv(&mut [IoSliceMut::new(&mut buf)], &mut meta)
                .await
            {
                Ok(1) => {
                    let ev = from_server(id, generation, meta[0], &buf);
                    if tx.send(ev).await.is_err() {
                        break;
                    }
                }
                Ok(_) => {}
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
