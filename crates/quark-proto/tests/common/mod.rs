//! A deterministic, in-memory network between a client and a server endpoint on a
//! simulated clock. The network is quark-netem's emulator (a `Path` of two links:
//! delay, jitter, loss, burst loss, reordering, duplication, corruption, rate limit,
//! blackholes) seeded from the test's seed: a failing seed replays exactly
//! (`SIM_SEED=<n> cargo test ...`).

#![allow(dead_code, unreachable_pub)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
pub use quark_netem::{LinkConfig, Path, Profile};
use quark_proto::{
    ClientConfig, Connection, ConnectionHandle, Endpoint, EndpointConfig, Event, ReadOutcome,
    ServerConfig, StreamId, TransportConfig,
};

pub mod app;
pub mod downloads;
pub mod requests;
pub mod upload;

pub const ALPN: &[u8] = b"hq-interop";

/// Inspects or rewrites a datagram: `(to_server, datagram) -> deliver?`.
pub type Filter = Box<dyn FnMut(bool, &mut Vec<u8>) -> bool>;
/// An observer of the datagrams sent: (now, to_server, datagram).
pub type Watch = Box<dyn FnMut(Instant, bool, &[u8])>;

/// Certificates and TLS configurations for tests.
pub struct Tls {
    pub cert: rustls::pki_types::CertificateDer<'static>,
    pub key: rustls::pki_types::PrivateKeyDer<'static>,
}

impl Tls {
    pub fn new() -> Self {
        let ck = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        Tls {
            cert: ck.cert.der().clone(),
            key: rustls::pki_types::PrivatePkcs8KeyDer::from(ck.signing_key.serialize_der()).into(),
        }
    }

    pub fn provider(
        suites: Option<&[rustls::SupportedCipherSuite]>,
    ) -> Arc<rustls::crypto::CryptoProvider> {
        let mut p = rustls::crypto::ring::default_provider();
        if let Some(s) = suites {
            p.cipher_suites = s.to_vec();
        }
        Arc::new(p)
    }

    pub fn server_config(
        &self,
        suites: Option<&[rustls::SupportedCipherSuite]>,
    ) -> Arc<rustls::ServerConfig> {
        let mut c = rustls::ServerConfig::builder_with_provider(Self::provider(suites))
            .with_protocol_versions(&[&rustls::version::TLS13])
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![self.cert.clone()], self.key.clone_key())
            .unwrap();
        c.alpn_protocols = vec![ALPN.to_vec()];
        c.max_early_data_size = 0;
        Arc::new(c)
    }

    pub fn client_config(
        &self,
        suites: Option<&[rustls::SupportedCipherSuite]>,
    ) -> Arc<rustls::ClientConfig> {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(self.cert.clone()).unwrap();
        let mut c = rustls::ClientConfig::builder_with_provider(Self::provider(suites))
            .with_protocol_versions(&[&rustls::version::TLS13])
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        c.alpn_protocols = vec![ALPN.to_vec()];
        Arc::new(c)
    }
}

/// Whether `k` of `n` fair coin flips coming up heads is within four standard
/// deviations of half (a false alarm about once in 16 000 runs per check,
/// whatever the seed), on enough flips to tell.
pub fn about_half((k, n): (usize, usize)) -> bool {
    let sigma = (n as f64 * 0.25).sqrt();
    n >= 30 && (k as f64 - n as f64 / 2.0).abs() <= 4.0 * sigma
}

/// The seed for a test: `SIM_SEED` if set, else the given default.
pub fn seed(default: u64) -> u64 {
    std::env::var("SIM_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

pub struct Sim {
    pub now: Instant,
    pub client: Endpoint,
    pub server: Endpoint,
    pub client_addr: SocketAddr,
    pub server_addr: SocketAddr,
    /// The network: `up` carries client → server, `down` server → client.
    pub path: Path,
    buf: Vec<u8>,
    /// Datagrams delivered per direction (client→server, server→client).
    pub delivered: (u64, u64),
    /// Datagrams the network dropped per direction, any cause.
    pub dropped: (u64, u64),
    /// Largest datagram seen.
    pub max_datagram: usize,
    /// Datagrams larger than this (UDP payload bytes) are dropped, like a real
    /// path with an MTU. Default 1472 (Ethernet, IPv4).
    pub path_mtu: usize,
    /// Datagrams dropped for exceeding `path_mtu`.
    pub too_big: u64,
    /// The path answers each datagram it drops for its size with an ICMP
    /// Packet Too Big to the sender, as a router does (quoting its start,
    /// and `path_mtu` as the size), and the sender's endpoint reads it.
    pub report_too_big: bool,
    /// Set to inspect/corrupt datagrams: called with (to_server, datagram) and
    /// returns whether to deliver.
    pub filter: Option<Filter>,
    /// Sees each datagram as it is sent, with the time: (now, to_server,
    /// datagram). An observer on the path.
    pub watch: Option<Watch>,
    pub server_handles: Vec<ConnectionHandle>,
    /// Wraps each protocol call (e.g. to count allocations inside it only).
    pub counted: Option<fn(&mut dyn FnMut())>,
    /// Deliver runs of equal-sized datagrams as one GRO buffer (`handle_batch`).
    pub gro: bool,
    /// Lend the receive buffers to connections, as the driver does (zero-copy
    /// receive): in-order stream data may stay in them until read. On by
    /// default; off, every byte a connection keeps is copied.
    pub share: bool,
    /// Receive buffers, reused once nothing holds them (as the driver's).
    rx_bufs: Vec<BytesMut>,
    /// Bytes the server sent to addresses other than `client_addr`, per address
    /// (the client's old address after it moved, a forged one).
    pub sent_elsewhere: std::collections::HashMap<SocketAddr, u64>,
    /// Datagrams the client sends to this address are lost (a server address
    /// that does not answer).
    pub unreachable: Option<SocketAddr>,
}

impl Sim {
    pub fn new(seed: u64, server: ServerConfig, endpoint_config: EndpointConfig) -> Self {
        let mut client_cfg = endpoint_config.clone();
        client_cfg.rng_seed = Some(seed ^ 0xc1);
        let mut server_cfg = endpoint_config;
        server_cfg.rng_seed = Some(seed ^ 0x5e);
        // The simulated clock starts at an arbitrary instant; only `step` moves it.
        #[allow(clippy::disallowed_methods)]
        let start = Instant::now();
        Sim {
            now: start,
            client: Endpoint::new(Arc::new(client_cfg), None),
            server: Endpoint::new(Arc::new(server_cfg), Some(Arc::new(server))),
            client_addr: "10.0.0.1:5000".parse().unwrap(),
            server_addr: "10.0.0.2:443".parse().unwrap(),
            path: Path::symmetric(LinkConfig::default(), seed),
            buf: Vec::new(),
            delivered: (0, 0),
            dropped: (0, 0),
            max_datagram: 0,
            path_mtu: 1472,
            too_big: 0,
            report_too_big: false,
            filter: None,
            watch: None,
            server_handles: Vec::new(),
            counted: None,
            gro: false,
            share: true,
            rx_bufs: Vec::new(),
            sent_elsewhere: std::collections::HashMap::new(),
            unreachable: None,
        }
    }

    /// A pair with default settings and a fresh certificate.
    pub fn pair(seed: u64) -> (Self, Tls) {
        let tls = Tls::new();
        let server = ServerConfig::new(tls.server_config(None));
        (Self::new(seed, server, EndpointConfig::default()), tls)
    }

    pub fn connect(&mut self, tls: &Tls) -> ConnectionHandle {
        self.connect_with(ClientConfig::new(tls.client_config(None)))
    }

    pub fn connect_with(&mut self, config: ClientConfig) -> ConnectionHandle {
        self.client
            .connect(self.now, &config, self.server_addr, "localhost")
            .unwrap()
    }

    /// Changes both directions' impairments (for datagrams sent from now on).
    pub fn impair(&mut self, mut f: impl FnMut(&mut LinkConfig)) {
        f(self.path.up.config_mut());
        f(self.path.down.config_mut());
    }

    pub fn set_delay(&mut self, one_way: Duration) {
        self.impair(|c| c.delay = one_way);
    }

    pub fn set_loss(&mut self, loss: f64) {
        self.impair(|c| c.loss = loss);
    }

    /// Puts both directions under a network profile (`lan`, `rtt30-loss1`, ...).
    pub fn set_profile(&mut self, name: &str) {
        let p = Profile::parse(name).unwrap();
        *self.path.up.config_mut() = p.up;
        *self.path.down.config_mut() = p.down;
    }

    fn enqueue(&mut self, to_server: bool, mut data: Vec<u8>) {
        if data.len() > self.path_mtu {
            self.too_big += 1;
            if self.report_too_big {
                let size = u16::try_from(self.path_mtu).unwrap_or(u16::MAX);
                // What an IPv4 ICMP message quotes: at most 548 bytes.
                let quoted = &data[..data.len().min(548)];
                let (sender, to) = if to_server {
                    (&mut self.client, self.server_addr)
                } else {
                    (&mut self.server, self.client_addr)
                };
                sender.handle_too_big(self.now, to, quoted, size);
            }
            return;
        }
        self.max_datagram = self.max_datagram.max(data.len());
        if let Some(w) = self.watch.as_mut() {
            w(self.now, to_server, &data);
        }
        if let Some(f) = self.filter.as_mut() {
            if !f(to_server, &mut data) {
                return;
            }
        }
        let link = if to_server {
            &mut self.path.up
        } else {
            &mut self.path.down
        };
        link.send(self.now, data);
        self.dropped = (
            self.path.up.counters().dropped(),
            self.path.down.counters().dropped(),
        );
    }

    /// Collect everything both sides want to send right now.
    fn flush(&mut self) -> bool {
        let mut any = false;
        let mut buf = std::mem::take(&mut self.buf);
        for to_server in [true, false] {
            loop {
                let ep = if to_server {
                    &mut self.client
                } else {
                    &mut self.server
                };
                let Some(t) = ep.poll_transmit(&mut buf) else {
                    break;
                };
                any = true;
                if !to_server && t.destination != self.client_addr {
                    // For a peer outside the simulation (a test's attacker).
                    *self.sent_elsewhere.entry(t.destination).or_default() += t.size as u64;
                    continue;
                }
                self.enqueue(to_server, buf[..t.size].to_vec());
            }
            let handles: Vec<ConnectionHandle> = if to_server {
                self.client.handles().collect()
            } else {
                self.server.handles().collect()
            };
            for h in handles {
                loop {
                    let ep = if to_server {
                        &mut self.client
                    } else {
                        &mut self.server
                    };
                    let conn = ep.connection_mut(h).unwrap();
                    let now = self.now;
                    // What a driver sizes its buffer by: 10 datagrams of this size.
                    let sized_for = 10 * conn.max_datagram_size();
                    let mut out = None;
                    let mut call = || out = conn.poll_transmit(now, 10, &mut buf);
                    match self.counted {
                        Some(wrap) => wrap(&mut call),
                        None => call(),
                    }
                    let Some(t) = out else {
                        break;
                    };
                    assert!(
                        t.size <= sized_for.max(t.segment_size.unwrap_or(t.size)),
                        "a batch of {} bytes where 10 datagrams of the size announced \
                         before the call make {sized_for}",
                        t.size
                    );
                    ep.sync(h);
                    any = true;
                    if to_server && Some(t.destination) == self.unreachable {
                        continue;
                    }
                    if !to_server && t.destination != self.client_addr {
                        *self.sent_elsewhere.entry(t.destination).or_default() += t.size as u64;
                        continue;
                    }
                    let seg = t.segment_size.unwrap_or(t.size);
                    for chunk in buf[..t.size].chunks(seg) {
                        self.enqueue(to_server, chunk.to_vec());
                    }
                }
            }
        }
        self.buf = buf;
        any
    }

    /// Deliver datagrams due now, earliest first across both directions.
    /// Returns whether any was delivered.
    fn deliver(&mut self) -> bool {
        let mut any = false;
        loop {
            let up = self.path.up.next_deadline().filter(|&t| t <= self.now);
            let down = self.path.down.next_deadline().filter(|&t| t <= self.now);
            let to_server = match (up, down) {
                (Some(u), Some(d)) => u <= d,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => return any,
            };
            let now = self.now;
            let link = if to_server {
                &mut self.path.up
            } else {
                &mut self.path.down
            };
            let Some(mut data) = link.poll(now) else {
                return any; // unreachable: a deadline at or before now has a datagram
            };
            any = true;
            // GRO: the kernel coalesces back-to-back datagrams of one size.
            let stride = data.len();
            let mut segments = 1;
            let mut carry = None;
            while self.gro && segments < 64 && link.next_deadline().is_some_and(|t| t <= now) {
                let Some(next) = link.poll(now) else { break };
                if next.len() > stride {
                    carry = Some(next); // not coalescible: delivered on its own
                    break;
                }
                let last = next.len() < stride;
                data.extend_from_slice(&next);
                segments += 1;
                if last {
                    break;
                }
            }
            let stride = if segments > 1 { stride } else { data.len() };
            self.deliver_one(to_server, &mut data, stride);
            if let Some(mut next) = carry {
                let len = next.len();
                self.deliver_one(to_server, &mut next, len);
            }
        }
    }

    /// Hand one receive (a datagram, or a GRO buffer of `stride`-sized ones) to
    /// the receiving endpoint.
    fn deliver_one(&mut self, to_server: bool, data: &mut [u8], stride: usize) {
        let now = self.now;
        let (ep, from) = if to_server {
            self.delivered.0 += 1;
            (&mut self.server, self.client_addr)
        } else {
            self.delivered.1 += 1;
            (&mut self.client, self.server_addr)
        };
        let mut events = Vec::with_capacity(8); // allocated outside the counted call
        let mut buf = reusable(&mut self.rx_bufs, data.len());
        buf.extend_from_slice(data);
        let share = self.share;
        let mut call = || {
            ep.handle_batch(
                now,
                from,
                None,
                None,
                &mut buf,
                stride.max(1),
                share,
                |e, _| events.push(e),
            )
        };
        match self.counted {
            Some(wrap) => wrap(&mut call),
            None => call(),
        }
        self.rx_bufs.push(buf);
        for ev in events {
            if let quark_proto::DatagramEvent::NewConnection(h) = ev {
                self.server_handles.push(h);
            }
        }
    }

    /// Hand `data` to the server at once as if it came from `from` (a copy
    /// racing ahead of the genuine datagram, a spoofed source).
    pub fn inject_to_server(&mut self, from: SocketAddr, data: &mut [u8]) {
        let now = self.now;
        let len = data.len();
        let mut buf = BytesMut::from(&data[..]);
        self.server
            .handle_batch(now, from, None, None, &mut buf, len, self.share, |_, _| {});
    }

    fn next_timeout(&self) -> Option<Instant> {
        let c = self
            .client
            .handles()
            .filter_map(|h| self.client.connection(h).unwrap().poll_timeout());
        let s = self
            .server
            .handles()
            .filter_map(|h| self.server.connection(h).unwrap().poll_timeout());
        c.chain(s).chain(self.path.next_deadline()).min()
    }

    /// Run one step: send, deliver, or advance the clock to the next event.
    /// Returns false when nothing will ever happen again.
    pub fn step(&mut self) -> bool {
        let sent = self.flush();
        let delivered = self.deliver();
        if sent || delivered {
            return true;
        }
        let Some(next) = self.next_timeout() else {
            return false;
        };
        if next > self.now {
            self.now = next;
        }
        let now = self.now;
        let ch: Vec<_> = self.client.handles().collect();
        for h in ch {
            self.client.handle_timeout(h, now);
        }
        let sh: Vec<_> = self.server.handles().collect();
        for h in sh {
            self.server.handle_timeout(h, now);
        }
        true
    }

    /// Run the network for `d` of simulated time (timers due within it fire).
    pub fn run_for(&mut self, d: Duration) {
        let end = self.now + d;
        loop {
            let sent = self.flush();
            let delivered = self.deliver();
            if sent || delivered {
                continue;
            }
            match self.next_timeout() {
                Some(next) if next <= end => {
                    self.step();
                }
                _ => {
                    self.now = end;
                    return;
                }
            }
        }
    }

    /// Step until `done` holds, panicking after `max_steps` or if the network dies.
    pub fn run_until(&mut self, max_steps: usize, mut done: impl FnMut(&mut Sim) -> bool) {
        for _ in 0..max_steps {
            if done(self) {
                return;
            }
            if !self.step() {
                assert!(done(self), "simulation went idle before the condition held");
                return;
            }
        }
        panic!("condition not reached within {max_steps} steps");
    }

    /// Drain both endpoints' connection events into vectors.
    pub fn events(&mut self, client: bool, h: ConnectionHandle) -> Vec<Event> {
        let ep = if client {
            &mut self.client
        } else {
            &mut self.server
        };
        let conn = ep.connection_mut(h).unwrap();
        std::iter::from_fn(|| conn.poll_event()).collect()
    }

    /// Close the client connections `clients`, run until they and every server
    /// connection have drained, and remove them all from both endpoints.
    pub fn close_all_and_remove(&mut self, clients: &[ConnectionHandle], max_steps: usize) {
        let now = self.now;
        for &c in clients {
            self.client.connection_mut(c).unwrap().close(now, 0, b"");
        }
        let servers = self.server_handles.clone();
        self.run_until(max_steps, |s| {
            clients
                .iter()
                .all(|&c| s.client.connection(c).unwrap().is_drained())
                && servers
                    .iter()
                    .all(|&h| s.server.connection(h).unwrap().is_drained())
        });
        for &c in clients {
            self.client.remove(c).unwrap();
        }
        for h in servers {
            self.server.remove(h).unwrap();
        }
    }

    /// Run until the client connection `h` and a server connection are both established.
    pub fn handshake(&mut self, h: ConnectionHandle) -> ConnectionHandle {
        self.run_until(10_000, |s| {
            s.client.connection(h).unwrap().is_handshake_complete()
                && s.server_handles.first().is_some_and(|&sh| {
                    s.server
                        .connection(sh)
                        .is_some_and(|c| c.is_handshake_complete())
                })
        });
        self.server_handles[0]
    }
}

/// A transport config with small windows to exercise flow control.
pub fn small_windows() -> TransportConfig {
    TransportConfig {
        stream_receive_window: 16 * 1024,
        stream_receive_window_max: 16 * 1024,
        receive_window: 48 * 1024,
        receive_window_max: 48 * 1024,
        send_buffer: 32 * 1024,
        ..TransportConfig::default()
    }
}

/// Deterministic payload of `len` bytes for stream `tag`.
pub fn payload(len: usize, tag: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[i % 4] ^ tag)
        .collect()
}

/// Appends what `id` holds to `got`; true once its end has been read (false
/// while more is to come, or if the stream cannot be read).
pub fn read_more(conn: &mut Connection, id: StreamId, got: &mut Vec<u8>) -> bool {
    let mut buf = [0u8; 4096];
    loop {
        match conn.read(id, &mut buf) {
            Ok(ReadOutcome::Data(n)) => got.extend_from_slice(&buf[..n]),
            Ok(ReadOutcome::Finished) => return true,
            Ok(ReadOutcome::Blocked) | Err(_) => return false,
        }
    }
}

/// Everything a stream holds up to its end, which must have arrived.
pub fn read_to_end(conn: &mut Connection, id: StreamId) -> Vec<u8> {
    let mut got = Vec::new();
    assert!(
        read_more(conn, id, &mut got),
        "no end after {} bytes",
        got.len()
    );
    got
}

/// A long header's packet type (RFC 9000 §17.2), or "1rtt" for a short
/// header, for each packet of a datagram (a truncated one ends the list).
pub fn packet_types(d: &[u8]) -> Vec<&'static str> {
    let mut out = Vec::new();
    let mut rest = d;
    while let Some(&first) = rest.first() {
        if first & 0x80 == 0 {
            out.push("1rtt");
            break;
        }
        let kind = match (first >> 4) & 0x03 {
            0 => "initial",
            1 => "0rtt",
            2 => "handshake",
            _ => "retry",
        };
        out.push(kind);
        // version (4), DCID, SCID, [token], length (RFC 9000 §17.2).
        let Some(end) = long_packet_end(rest, kind == "initial") else {
            break;
        };
        rest = &rest[end.min(rest.len())..];
    }
    out
}

/// What follows the connection IDs of a long-header packet at the start of
/// `d` (RFC 9000 §17.2: version, DCID, SCID), and where that is.
fn after_cids(d: &[u8]) -> Option<(usize, quark_proto::coding::Reader<'_>)> {
    let mut at = 5;
    at += 1 + usize::from(*d.get(at)?);
    at += 1 + usize::from(*d.get(at)?);
    Some((at, quark_proto::coding::Reader::new(d.get(at..)?)))
}

/// Where a long-header packet at the start of `d` ends.
fn long_packet_end(d: &[u8], has_token: bool) -> Option<usize> {
    let (at, mut r) = after_cids(d)?;
    if has_token {
        r.varint_bytes().ok()?;
    }
    let len = usize::try_from(r.varint().ok()?).ok()?;
    Some(at + r.position() + len)
}

/// The Token field of an Initial at the start of `d`.
pub fn initial_token(d: &[u8]) -> Option<Vec<u8>> {
    Some(after_cids(d)?.1.varint_bytes().ok()?.to_vec())
}

/// An empty receive buffer with room for `len` bytes: one of `pool` that
/// nothing holds any more (the emptied tail of an earlier receive, whose
/// slices were all dropped), else a new one. Like the driver's, so the
/// allocations counted inside protocol calls are the protocol's.
fn reusable(pool: &mut Vec<BytesMut>, len: usize) -> BytesMut {
    const SIZE: usize = 64 * 1024;
    if let Some(i) = pool.iter_mut().position(|b| b.try_reclaim(len.max(SIZE))) {
        return pool.swap_remove(i);
    }
    // Buffers still held are let go past a few (their slices keep the memory).
    if pool.len() > 64 {
        pool.remove(0);
    }
    BytesMut::with_capacity(len.max(SIZE))
}
