//! Attack connections: quark-proto client connections on a plain blocking
//! UDP socket, driven by hand so an attack can send frames verbatim, stop
//! acknowledging, stop reading or go deaf, which no well-behaved client does.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet};
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use quark_proto::connection::Misbehave;
use quark_proto::{
    ClientConfig, Connection, ConnectionError, ConnectionHandle, ConnectionId, DatagramEvent,
    Endpoint, EndpointConfig, TransportConfig,
};

use crate::Target;

/// Largest datagram we read.
const RX_SIZE: usize = 65_536;

/// Client connections of one attack, sharing a socket.
pub struct Peers {
    socket: UdpSocket,
    endpoint: Endpoint,
    server: SocketAddr,
    config: ClientConfig,
    server_name: String,
    /// Drop everything the server sends (after the handshake, say).
    pub deaf: bool,
    buf: Vec<u8>,
    rx: Vec<u8>,
    /// Datagrams and bytes sent so far.
    pub sent: (u64, u64),
    /// Connections that may have something to send.
    dirty: HashSet<ConnectionHandle>,
    /// Each connection's deadline as of its last flush, earliest first.
    /// Entries go stale when a deadline moves; they are checked against the
    /// connection when they come due, so a round costs the timers due, not a
    /// scan of every connection (100 000 idle connections in `idle_cost`).
    timers: BinaryHeap<Reverse<(Instant, ConnectionHandle)>>,
    /// When timers are next looked at.
    timers_due: Instant,
}

/// Where a set of handshakes stands.
#[derive(Default)]
struct Wave {
    /// Established.
    up: usize,
    /// Established or failed (a connection gone counts as failed).
    settled: usize,
    /// The first failure's error, if it had one.
    error: Option<ConnectionError>,
}

/// How often due timers are looked at.
const TIMER_GRANULARITY: Duration = Duration::from_millis(5);

impl Peers {
    /// Connections to `target` from the attack's source address, with
    /// `transport` settings (small windows, say).
    pub fn new(target: &Target, transport: TransportConfig) -> anyhow::Result<Self> {
        let socket = target.attack_socket()?;
        let mut config = target.client_config()?;
        config.transport = Arc::new(transport);
        Ok(Peers {
            socket,
            endpoint: Endpoint::new(Arc::new(EndpointConfig::default()), None),
            server: target.addr,
            config,
            server_name: target.server_name.clone(),
            deaf: false,
            buf: Vec::with_capacity(RX_SIZE),
            rx: vec![0; RX_SIZE],
            sent: (0, 0),
            dirty: HashSet::new(),
            timers: BinaryHeap::new(),
            timers_due: Instant::now(),
        })
    }

    /// Start a connection (the handshake runs as the peers are pumped).
    pub fn connect(&mut self) -> anyhow::Result<ConnectionHandle> {
        let h =
            self.endpoint
                .connect(Instant::now(), &self.config, self.server, &self.server_name)?;
        self.dirty.insert(h);
        Ok(h)
    }

    /// Open `n` connections and complete their handshakes.
    pub fn connect_many(
        &mut self,
        n: usize,
        timeout: Duration,
    ) -> anyhow::Result<Vec<ConnectionHandle>> {
        let (hs, wave) = self.open_and_wait(n, timeout, true)?;
        if let Some(e) = wave.error {
            bail!("handshake failed: {e}");
        }
        if wave.settled > wave.up {
            bail!("a connection ended before its handshake completed");
        }
        if wave.up < n {
            bail!("handshake did not complete within {timeout:?}");
        }
        Ok(hs)
    }

    /// Open `n` connections and wait until each has completed or failed its
    /// handshake, or `timeout` passed: how many were established. For holding
    /// many connections, where one lost handshake should not end the run.
    pub fn connect_wave(&mut self, n: usize, timeout: Duration) -> anyhow::Result<usize> {
        Ok(self.open_and_wait(n, timeout, false)?.1.up)
    }

    /// Open `n` connections and pump until every handshake has completed or
    /// failed (or, with `stop_at_failure`, one has failed), or `timeout`
    /// passed.
    fn open_and_wait(
        &mut self,
        n: usize,
        timeout: Duration,
        stop_at_failure: bool,
    ) -> anyhow::Result<(Vec<ConnectionHandle>, Wave)> {
        let hs = (0..n)
            .map(|_| self.connect())
            .collect::<anyhow::Result<Vec<_>>>()?;
        let deadline = Instant::now() + timeout;
        loop {
            let wave = self.wave(&hs);
            let failed = wave.settled > wave.up;
            if wave.settled == n || (stop_at_failure && failed) || Instant::now() >= deadline {
                return Ok((hs, wave));
            }
            self.pump(Duration::from_millis(5))?;
        }
    }

    /// Where the handshakes of `hs` stand.
    fn wave(&self, hs: &[ConnectionHandle]) -> Wave {
        let mut wave = Wave::default();
        for &h in hs {
            match self.endpoint.connection(h) {
                Some(c) if c.is_handshake_complete() => {
                    wave.up += 1;
                    wave.settled += 1;
                }
                Some(c) => {
                    if let Some(e) = c.error() {
                        wave.settled += 1;
                        wave.error.get_or_insert_with(|| e.clone());
                    }
                }
                None => wave.settled += 1,
            }
        }
        wave
    }

    /// A connection of ours (marked as one that may have something to send).
    pub fn conn(&mut self, h: ConnectionHandle) -> &mut Connection {
        self.dirty.insert(h);
        self.endpoint
            .connection_mut(h)
            .expect("attack connections are never removed")
    }

    /// Make every connection misbehave as `m` says.
    pub fn misbehave(&mut self, m: Misbehave) {
        let hs: Vec<_> = self.endpoint.handles().collect();
        for h in hs {
            self.conn(h).misbehave(m);
        }
    }

    /// Send what the connections have to send, then receive and run timers
    /// for `wait` (at least one receive attempt). Work per round is in the
    /// datagrams received and the connections they touch; all connections'
    /// timers are looked at every few milliseconds, not per datagram.
    pub fn pump(&mut self, wait: Duration) -> anyhow::Result<()> {
        let deadline = Instant::now() + wait;
        loop {
            self.flush()?;
            let now = Instant::now();
            if now >= self.timers_due {
                self.run_timers(now);
                self.flush()?;
            }
            let until = self.timers_due.min(deadline);
            let timeout = until
                .saturating_duration_since(Instant::now())
                .max(Duration::from_micros(200));
            self.socket.set_read_timeout(Some(timeout))?;
            // One blocking receive, then whatever else is already there.
            let mut got = self.receive_one()?;
            if got {
                self.socket.set_nonblocking(true)?;
                while got {
                    got = self.receive_one()?;
                }
                self.socket.set_nonblocking(false)?;
            }
            if Instant::now() >= deadline {
                return self.flush();
            }
        }
    }

    /// Receive one datagram and hand it over; false when none came.
    fn receive_one(&mut self) -> anyhow::Result<bool> {
        match self.socket.recv_from(&mut self.rx) {
            Ok((n, from)) => {
                if !self.deaf {
                    let mut d = self.rx[..n].to_vec();
                    let event =
                        self.endpoint
                            .handle_datagram(Instant::now(), from, None, None, &mut d);
                    if let Some(DatagramEvent::Connection(h)) = event {
                        self.dirty.insert(h);
                    }
                }
                Ok(true)
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                Ok(false)
            }
            // A previous datagram was refused (the server went away).
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => Ok(true),
            Err(e) => Err(e).context("receive"),
        }
    }

    /// Fire every due timer; look again in a few milliseconds.
    fn run_timers(&mut self, now: Instant) {
        while let Some(&Reverse((at, h))) = self.timers.peek() {
            if at > now {
                break;
            }
            self.timers.pop();
            // A stale entry (the deadline moved) fires nothing; the flush that
            // moved it queued the new one.
            if self
                .endpoint
                .connection(h)
                .and_then(Connection::poll_timeout)
                .is_some_and(|t| t <= now)
            {
                self.endpoint.handle_timeout(h, now);
                self.dirty.insert(h);
            }
        }
        self.timers_due = now + TIMER_GRANULARITY;
    }

    /// Send everything the connections touched since the last flush, and the
    /// endpoint, want to send now.
    pub fn flush(&mut self) -> anyhow::Result<()> {
        let now = Instant::now();
        let hs: Vec<_> = self.dirty.drain().collect();
        for h in hs {
            while let Some(conn) = self.endpoint.connection_mut(h) {
                let Some(t) = conn.poll_transmit(now, 1, &mut self.buf) else {
                    break;
                };
                self.endpoint.sync(h);
                let seg = t.segment_size.unwrap_or(t.size);
                for chunk in self.buf[..t.size].chunks(seg) {
                    send_to(&self.socket, chunk, t.destination, &mut self.sent)?;
                }
            }
            if let Some(at) = self
                .endpoint
                .connection(h)
                .and_then(Connection::poll_timeout)
            {
                self.timers.push(Reverse((at, h)));
            }
        }
        while let Some(t) = self.endpoint.poll_transmit(&mut self.buf) {
            send_to(
                &self.socket,
                &self.buf[..t.size],
                t.destination,
                &mut self.sent,
            )?;
        }
        Ok(())
    }

    /// Take datagrams addressed to `cid` as `h`'s (an ID announced to the
    /// server in a frame made by hand).
    pub fn route(&mut self, cid: ConnectionId, h: ConnectionHandle) {
        self.endpoint.route_for_testing(cid, h);
    }

    /// Send a datagram made by hand from this attack's socket.
    pub fn send_raw(&mut self, datagram: &[u8]) -> anyhow::Result<()> {
        send_to(&self.socket, datagram, self.server, &mut self.sent)
    }

    /// Receive one datagram if one comes within `wait`.
    pub fn recv_raw(&mut self, wait: Duration) -> anyhow::Result<Option<Vec<u8>>> {
        self.socket.set_nonblocking(wait.is_zero())?;
        if !wait.is_zero() {
            self.socket.set_read_timeout(Some(wait))?;
        }
        let got = self.socket.recv_from(&mut self.rx);
        self.socket.set_nonblocking(false)?;
        match got {
            Ok((n, _)) => Ok(Some(self.rx[..n].to_vec())),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                Ok(None)
            }
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => Ok(None),
            Err(e) => Err(e).context("receive"),
        }
    }

    /// How the server closed our connections, one entry per closed connection.
    pub fn closes(&self) -> Vec<String> {
        self.endpoint
            .handles()
            .filter_map(|h| self.endpoint.connection(h)?.error().map(describe_close))
            .collect()
    }
}

/// A connection's end, named by its code: "CRYPTO_BUFFER_EXCEEDED", "idle
/// timeout", ...
pub fn describe_close(e: &ConnectionError) -> String {
    match e {
        ConnectionError::ConnectionClosed { code, .. } => code
            .name()
            .map_or_else(|| format!("transport error {:#x}", code.0), str::to_owned),
        ConnectionError::ApplicationClosed { code, .. } => format!("application close {code:#x}"),
        ConnectionError::TimedOut => "idle timeout".into(),
        ConnectionError::Reset => "stateless reset".into(),
        other => other.to_string(),
    }
}

fn send_to(
    socket: &UdpSocket,
    data: &[u8],
    to: SocketAddr,
    sent: &mut (u64, u64),
) -> anyhow::Result<()> {
    loop {
        match socket.send_to(data, to) {
            Ok(_) => {
                sent.0 += 1;
                sent.1 += data.len() as u64;
                return Ok(());
            }
            // The socket buffer is full: the attack outpaces the kernel.
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::yield_now(),
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => return Ok(()),
            Err(e) => return Err(e).context("send"),
        }
    }
}
