//! A deterministic, in-memory network between a client and a server endpoint on a
//! simulated clock. Impairments are drawn from a seeded RNG: a failing seed replays
//! exactly (`SIM_SEED=<n> cargo test ...`).

#![allow(dead_code, unreachable_pub)]

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use quark_proto::{
    ClientConfig, ConnectionHandle, Endpoint, EndpointConfig, Event, ServerConfig, TransportConfig,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

pub mod app;

pub const ALPN: &[u8] = b"hq-interop";

/// Impairments applied to every datagram, per direction.
#[derive(Clone, Copy, Debug, Default)]
pub struct Impairments {
    /// One-way delay.
    pub delay: Duration,
    /// Probability a datagram is dropped.
    pub loss: f64,
    /// Probability a datagram is delivered twice.
    pub duplicate: f64,
    /// Probability a datagram is held back by `reorder_delay`.
    pub reorder: f64,
    pub reorder_delay: Duration,
}

/// Inspects or rewrites a datagram: `(to_server, datagram) -> deliver?`.
pub type Filter = Box<dyn FnMut(bool, &mut Vec<u8>) -> bool>;

struct InFlight {
    at: Instant,
    seq: u64,
    to_server: bool,
    data: Vec<u8>,
}

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
    pub to_server: Impairments,
    pub to_client: Impairments,
    rng: StdRng,
    queue: VecDeque<InFlight>,
    seq: u64,
    buf: Vec<u8>,
    /// Datagrams delivered per direction (client→server, server→client).
    pub delivered: (u64, u64),
    pub dropped: (u64, u64),
    /// Largest datagram seen.
    pub max_datagram: usize,
    /// Datagrams larger than this (UDP payload bytes) are dropped, like a real
    /// path with an MTU. Default 1472 (Ethernet, IPv4).
    pub path_mtu: usize,
    /// Datagrams dropped for exceeding `path_mtu`.
    pub too_big: u64,
    /// Set to inspect/corrupt datagrams: called with (to_server, datagram) and
    /// returns whether to deliver.
    pub filter: Option<Filter>,
    pub server_handles: Vec<ConnectionHandle>,
    /// Wraps each protocol call (e.g. to count allocations inside it only).
    pub counted: Option<fn(&mut dyn FnMut())>,
    /// Deliver runs of equal-sized datagrams as one GRO buffer (`handle_batch`).
    pub gro: bool,
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
            to_server: Impairments::default(),
            to_client: Impairments::default(),
            rng: StdRng::seed_from_u64(seed),
            queue: VecDeque::new(),
            seq: 0,
            buf: Vec::new(),
            delivered: (0, 0),
            dropped: (0, 0),
            max_datagram: 0,
            path_mtu: 1472,
            too_big: 0,
            filter: None,
            server_handles: Vec::new(),
            counted: None,
            gro: false,
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

    pub fn set_delay(&mut self, one_way: Duration) {
        self.to_server.delay = one_way;
        self.to_client.delay = one_way;
    }

    pub fn set_loss(&mut self, loss: f64) {
        self.to_server.loss = loss;
        self.to_client.loss = loss;
    }

    fn enqueue(&mut self, to_server: bool, mut data: Vec<u8>) {
        if data.len() > self.path_mtu {
            self.too_big += 1;
            return;
        }
        self.max_datagram = self.max_datagram.max(data.len());
        if let Some(f) = self.filter.as_mut() {
            if !f(to_server, &mut data) {
                return;
            }
        }
        let imp = if to_server {
            self.to_server
        } else {
            self.to_client
        };
        if self.rng.random_bool(imp.loss.clamp(0.0, 1.0)) {
            if to_server {
                self.dropped.0 += 1
            } else {
                self.dropped.1 += 1
            }
            return;
        }
        let copies = if self.rng.random_bool(imp.duplicate.clamp(0.0, 1.0)) {
            2
        } else {
            1
        };
        for _ in 0..copies {
            let mut at = self.now + imp.delay;
            if self.rng.random_bool(imp.reorder.clamp(0.0, 1.0)) {
                at += imp.reorder_delay;
            }
            self.seq += 1;
            self.queue.push_back(InFlight {
                at,
                seq: self.seq,
                to_server,
                data: data.clone(),
            });
        }
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
                    let mut out = None;
                    let mut call = || out = conn.poll_transmit(now, 10, &mut buf);
                    match self.counted {
                        Some(wrap) => wrap(&mut call),
                        None => call(),
                    }
                    let Some(t) = out else {
                        break;
                    };
                    ep.sync(h);
                    any = true;
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

    /// Deliver datagrams due now. Returns whether any was delivered.
    fn deliver(&mut self) -> bool {
        let mut due: Vec<InFlight> = Vec::new();
        let mut i = 0;
        while i < self.queue.len() {
            if self.queue[i].at <= self.now {
                due.push(self.queue.remove(i).unwrap());
            } else {
                i += 1;
            }
        }
        due.sort_by_key(|d| (d.at, d.seq));
        let any = !due.is_empty();
        let mut due = due.into_iter().peekable();
        while let Some(mut d) = due.next() {
            // GRO: the kernel coalesces back-to-back datagrams of one size.
            let stride = d.data.len();
            if self.gro {
                while let Some(next) = due.peek() {
                    if next.to_server != d.to_server
                        || next.data.len() > stride
                        || d.data.len() >= 64 * stride
                    {
                        break;
                    }
                    let last = next.data.len() < stride;
                    let next = due.next().unwrap();
                    d.data.extend_from_slice(&next.data);
                    if last {
                        break;
                    }
                }
            }
            let now = self.now;
            let (ep, from) = if d.to_server {
                self.delivered.0 += 1;
                (&mut self.server, self.client_addr)
            } else {
                self.delivered.1 += 1;
                (&mut self.client, self.server_addr)
            };
            let mut events = Vec::with_capacity(8); // allocated outside the counted call
            let mut call = || {
                ep.handle_batch(now, from, None, None, &mut d.data, stride, |e| {
                    events.push(e)
                })
            };
            match self.counted {
                Some(wrap) => wrap(&mut call),
                None => call(),
            }
            for ev in events {
                if let quark_proto::DatagramEvent::NewConnection(h) = ev {
                    self.server_handles.push(h);
                }
            }
        }
        any
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
        c.chain(s).chain(self.queue.iter().map(|d| d.at)).min()
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
        receive_window: 48 * 1024,
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
