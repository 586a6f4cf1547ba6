//! `Endpoint`: a UDP socket with its connections. A server endpoint is the
//! listener (`accept`); any endpoint can `connect`.

use std::future::poll_fn;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;

use quark_proto::{ClientConfig, ConnectError, ConnectionError, EndpointConfig, ServerConfig};
use quark_udp::Socket;

use crate::connection::{Connecting, Connection};
use crate::driver::Driver;
use crate::forward::{Inbox, Link};
use crate::shared::{ConnEntry, Shared, SharedRef, State};

/// A QUIC endpoint bound to one UDP socket. Cheap to clone.
pub struct Endpoint {
    pub(crate) shared: SharedRef,
}

impl Endpoint {
    /// Bind a server endpoint (it can also connect). Must be called in a tokio runtime.
    pub fn server(config: ServerConfig, addr: SocketAddr) -> io::Result<Self> {
        Self::with_config(EndpointConfig::default(), Some(config), addr)
    }

    /// Bind a client-only endpoint (use port 0 for an ephemeral port).
    pub fn client(addr: SocketAddr) -> io::Result<Self> {
        Self::with_config(EndpointConfig::default(), None, addr)
    }

    /// Bind with explicit endpoint settings. The socket is kernel UDP, or AF_XDP
    /// when the `QUARK_XDP` environment variable names an interface (see
    /// [`quark_udp::XDP_ENV`]).
    pub fn with_config(
        config: EndpointConfig,
        server: Option<ServerConfig>,
        addr: SocketAddr,
    ) -> io::Result<Self> {
        let socket = Socket::bind(addr)?;
        Self::with_socket(config, server, socket)
    }

    /// Use an existing socket: a `quark_udp::UdpSocket`, `XdpSocket` or `Socket`.
    pub fn with_socket(
        config: EndpointConfig,
        server: Option<ServerConfig>,
        socket: impl Into<Socket>,
    ) -> io::Result<Self> {
        Ok(Self::start(config, server, socket.into(), None).0)
    }

    /// Start an endpoint and its driver task in the current runtime; as a member
    /// of a worker group with `worker`. The handle resolves when the driver ends.
    pub(crate) fn start(
        config: EndpointConfig,
        server: Option<ServerConfig>,
        socket: Socket,
        worker: Option<(Link, Inbox)>,
    ) -> (Self, tokio::task::JoinHandle<()>) {
        let (endpoint, driver) = Self::build(config, server, socket, worker);
        (endpoint, tokio::spawn(driver))
    }

    /// An endpoint and its driver, not yet polled by anyone (`start` spawns
    /// it; [`crate::Drive`] leaves it to the caller). Inside a tokio runtime.
    pub(crate) fn build(
        config: EndpointConfig,
        server: Option<ServerConfig>,
        socket: Socket,
        worker: Option<(Link, Inbox)>,
    ) -> (Self, Driver) {
        let mut config = config;
        config.qlog_dir = crate::qlog::dir(config.qlog_dir.take());
        let qlog = config
            .qlog_dir
            .as_deref()
            .and_then(|dir| match crate::qlog::QlogWriter::start(dir) {
                Ok(w) => Some(w),
                Err(e) => {
                    tracing::warn!(%e, dir = %dir.display(), "qlog off: cannot use the directory");
                    None
                }
            });
        if qlog.is_none() {
            config.qlog_dir = None;
        }
        let mut proto = quark_proto::Endpoint::new(Arc::new(config), server.map(Arc::new));
        // Address tokens carry wall-clock times, so that a restarted server
        // (or another of a fleet sharing the token key) judges their age.
        if let Ok(wall) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
            proto.set_wall_clock(std::time::Instant::now(), wall);
        }
        let (worker, inbox) = worker.unzip();
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                proto,
                conns: Default::default(),
                dirty: Default::default(),
                ready: Default::default(),
                accept_wakers: Vec::new(),
                idle_wakers: Vec::new(),
                driver: None,
                endpoint_refs: 1,
                closed: false,
                stopped: false,
                busy_poll: std::time::Duration::ZERO,
                defer_timers: true,
                lazy_deadlines: true,
                recv_buf_per_conn: crate::driver::RECV_BUF_PER_CONN,
                reader_waits: 0,
                deferrals: 0,
                deferrals_past_all: 0,
                rebound: None,
                alarms: Vec::new(),
                next_alarm: 0,
            }),
            socket: Mutex::new(Arc::new(socket)),
            runtime: tokio::runtime::Handle::current(),
            worker,
            qlog,
        });
        let driver = Driver::new(shared.clone(), inbox);
        (Endpoint { shared }, driver)
    }

    /// The local address of the socket.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.shared.socket().local_addr()
    }

    /// Replace the endpoint's socket under its live connections (a client
    /// moving to a new local address or port). Each client connection moves
    /// to the new path with a fresh connection ID of the server and validates
    /// it (RFC 9000 §9.2); one that cannot (no spare ID, migration disabled)
    /// simply sends from the new socket, as after a NAT rebinding, which the
    /// server follows. Packets still in the old socket are lost.
    pub fn rebind(&self, socket: impl Into<Socket>) -> io::Result<()> {
        let socket = socket.into();
        let new = socket.local_addr()?;
        let old = std::mem::replace(
            &mut *self.shared.socket.lock().unwrap_or_else(|e| e.into_inner()),
            Arc::new(socket),
        );
        let same_host = old.local_addr().is_ok_and(|a| a.ip() == new.ip());
        let mut state = self.shared.lock();
        state.rebound = Some(same_host);
        state.wake_driver();
        Ok(())
    }

    /// Start a connection. The returned future resolves once the handshake completes.
    pub fn connect(
        &self,
        config: ClientConfig,
        addr: SocketAddr,
        server_name: &str,
    ) -> Result<Connecting, ConnectError> {
        let mut state = self.shared.lock();
        let h = state
            .proto
            .connect(Instant::now(), &config, addr, server_name)?;
        let mut entry = ConnEntry::new(false);
        // Counted under this lock: a driver running on another thread could
        // otherwise drop a handshake that failed at once before our
        // reference exists.
        entry.refs = 1;
        if state.stopped {
            // Nobody would ever drive it: fail it at once.
            entry.error = Some(Box::new(ConnectionError::DriverStopped));
            entry.drained = true;
        }
        state.conns.insert(h, entry);
        state.touch(h);
        drop(state);
        Ok(Connecting::new(Connection::from_counted(
            self.shared.clone(),
            h,
        )))
    }

    /// Wait for the next incoming connection whose handshake has completed.
    /// `None` once the endpoint is closed.
    pub async fn accept(&self) -> Option<Connection> {
        poll_fn(|cx| self.poll_accept(cx)).await
    }

    pub(crate) fn poll_accept(&self, cx: &mut Context<'_>) -> Poll<Option<Connection>> {
        let mut state = self.shared.lock();
        while let Some(h) = state.ready.pop_front() {
            let Some(entry) = state.conns.get_mut(&h) else {
                continue;
            };
            if !entry.incoming || !entry.connected {
                continue;
            }
            entry.incoming = false;
            // Counted under this lock, for the same reason as in `connect`.
            entry.refs += 1;
            drop(state);
            return Poll::Ready(Some(Connection::from_counted(self.shared.clone(), h)));
        }
        // A stopped driver closes the endpoint too.
        if state.closed {
            return Poll::Ready(None);
        }
        // A group's accept polls every worker on each wake-up: keep one waker
        // per waiting task, not one per poll.
        if !state.accept_wakers.iter().any(|w| w.will_wake(cx.waker())) {
            state.accept_wakers.push(cx.waker().clone());
        }
        Poll::Pending
    }

    /// Stop accepting: new Initials are ignored and `accept` returns `None`;
    /// connections already there go on.
    pub(crate) fn stop_accepting(&self) {
        let mut state = self.shared.lock();
        state.closed = true;
        state.proto.set_server_config(None);
        state.accept_wakers.drain(..).for_each(|w| w.wake());
    }

    /// Accept new connections with `config` from now on (connections already
    /// there keep theirs): e.g. rotated token and ticket keys (a fleet's
    /// key file reloaded). Does nothing once the endpoint is closed.
    pub fn set_server_config(&self, config: ServerConfig) {
        let mut state = self.shared.lock();
        if !state.closed {
            state.proto.set_server_config(Some(Arc::new(config)));
        }
    }

    /// Close every connection with `code` and stop accepting new ones.
    pub fn close(&self, code: u64, reason: &[u8]) {
        let mut state = self.shared.lock();
        state.closed = true;
        state.proto.set_server_config(None);
        let now = Instant::now();
        let handles: Vec<_> = state.conns.keys().copied().collect();
        for h in handles {
            if let Some(conn) = state.proto.connection_mut(h) {
                conn.close(now, code, reason);
            }
            state.touch(h);
        }
        state.accept_wakers.drain(..).for_each(|w| w.wake());
    }

    /// Wait until every connection has fully closed (after `close`, or as they end).
    pub async fn wait_idle(&self) {
        poll_fn(|cx| {
            let mut state = self.shared.lock();
            if state.conns.values().all(|e| e.drained) {
                return Poll::Ready(());
            }
            state.idle_wakers.push(cx.waker().clone());
            Poll::Pending
        })
        .await
    }

    /// Busy polling: after each round of work the driver keeps asking the
    /// socket for datagrams for `window` before it sleeps, which saves the
    /// wake-up of a sleeping thread (tens of µs in a VM) on every request of a
    /// request/response exchange, and costs a core while traffic flows. Off
    /// (zero) by default. Choose a window well above the peer's whole turn
    /// (round trip plus its processing): 200 µs on loopback. A window that a
    /// single hiccup can outlast lets both ends fall back to waking each other.
    pub fn set_busy_poll(&self, window: std::time::Duration) {
        let mut state = self.shared.lock();
        state.busy_poll = window;
        state.wake_driver();
    }

    /// Learn each path's RTT together with `other` (another endpoint of this
    /// process): a client spreading connections over several sockets then
    /// shares one estimate per path among all of them, as one endpoint's
    /// connections do (`TransportConfig::shared_path_rtt`, issue #33).
    pub fn share_path_rtts_with(&self, other: &Endpoint) {
        let cache = other.shared.lock().proto.path_rtts();
        self.shared.lock().proto.share_path_rtts(cache);
    }

    /// Whether this endpoint learns path RTTs together with `other`
    /// ([`Endpoint::share_path_rtts_with`], or workers of one group).
    pub fn shares_path_rtts_with(&self, other: &Endpoint) -> bool {
        let cache = other.shared.lock().proto.path_rtts();
        self.shared.lock().proto.path_rtts().is_shared_with(&cache)
    }

    /// Whether a due loss-detection timer (PTO, RFC 9002 §6.2) waits, up to
    /// 200 ms, while received datagrams are still unread, as the
    /// acknowledgment it waits for may be among them. Other timers (idle,
    /// ACK delay, pacing) never wait. On by default: with the shared path
    /// RTT it halved the server's PTOs at 5 000 cold connections, with no
    /// cost seen at 144 (docs/results/2026-11-29-scale-cold, section 8);
    /// RFC 9002 §6.2.1 restarts a PTO on the acknowledgment, which had
    /// arrived and waited only in our own socket.
    pub fn set_timer_deferral(&self, on: bool) {
        let mut state = self.shared.lock();
        state.defer_timers = on;
        state.wake_driver();
    }

    /// Whether the driver's deadline heap skips deadlines that move later
    /// (on by default: one entry per connection, re-queued when it surfaces;
    /// off: every change pushed, as before). A measurement switch (issue
    /// #33): the timers fire at the same times either way.
    pub fn set_lazy_deadlines(&self, on: bool) {
        let mut state = self.shared.lock();
        state.lazy_deadlines = on;
        state.wake_driver();
    }

    /// Receive buffer to ask the kernel for per connection as connections
    /// are accepted (default 4 KiB; 0: keep the socket's 32 MiB). One UDP socket
    /// takes every connection's datagrams, and a burst from all of them at
    /// once (a request and a probe or two each) must fit: the kernel charges
    /// 1-2 KiB for even a small datagram.
    pub fn set_recv_buffer_per_connection(&self, bytes: usize) {
        let mut state = self.shared.lock();
        state.recv_buf_per_conn = bytes;
        state.wake_driver();
    }

    /// How many connections the endpoint holds.
    pub fn connection_count(&self) -> usize {
        self.shared.lock().conns.len()
    }

    /// Whether this endpoint writes qlog files (`EndpointConfig::qlog_dir`
    /// or the `QLOGDIR` environment variable).
    pub fn qlog_enabled(&self) -> bool {
        self.shared.qlog.is_some()
    }

    /// Wait until the qlog events of every connection so far are in their
    /// files (blocks the thread briefly; for tools about to exit). Files are
    /// also finished when the endpoint and its driver are gone.
    pub fn flush_qlog(&self) {
        let Some(writer) = self.shared.qlog.as_ref() else {
            return;
        };
        {
            let mut state = self.shared.lock();
            let handles: Vec<_> = state.conns.keys().copied().collect();
            for h in handles {
                if let Some(conn) = state.proto.connection_mut(h) {
                    writer.drain(conn, false);
                }
            }
        }
        writer.sync();
    }

    /// The AF_XDP socket's counters, or `None` on kernel UDP.
    pub fn xdp_stats(&self) -> Option<io::Result<quark_udp::xdp::XdpStats>> {
        match &*self.shared.socket() {
            Socket::Xdp(s) => Some(s.stats()),
            Socket::Udp(_) => None,
        }
    }
}

impl Clone for Endpoint {
    fn clone(&self) -> Self {
        self.shared.lock().endpoint_refs += 1;
        Endpoint {
            shared: self.shared.clone(),
        }
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        state.endpoint_refs -= 1;
        if state.endpoint_refs == 0 {
            state.closed = true;
            state.accept_wakers.drain(..).for_each(|w| w.wake());
            state.wake_driver();
        }
    }
}
