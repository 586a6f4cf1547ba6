//! `WorkerGroup`: one server address served by several worker threads, so a
//! server uses every core while each connection stays on one.
//!
//! Each worker is a thread with its own current-thread tokio runtime, protocol
//! endpoint, driver and UDP socket; the sockets share the address with
//! `SO_REUSEPORT`, and the kernel spreads datagrams over them by a hash of the
//! 4-tuple, so all datagrams of a connection normally reach the same worker.
//! Connection IDs name the worker that issued them (see
//! `quark_proto::config::CidGenerator`); a datagram that reaches the wrong worker
//! anyway (the client's address changed) is passed to the right one over an
//! in-process channel. Initials stay where the kernel put them: their
//! destination ID is the client's choice.
//!
//! Over AF_XDP (the `QUARK_XDP` variable, or [`WorkerGroup::bind_with`]) worker
//! `i` serves receive queue `i` of the interface, so the interface needs a queue
//! per worker (`quark_udp::netns::VethPair::with_queues`); one XDP program steers
//! each queue's datagrams to its worker's socket, and the kernel sockets that
//! hold the port share it with `SO_REUSEPORT`. The sender's device picks the
//! queue (a hash of the flow for kernel senders), which plays the part of the
//! kernel's 4-tuple hash.
//!
//! No reuseport BPF program steers by connection ID: attaching one needs
//! `unsafe` (this crate has none), and the IDs are masked so only the workers
//! can read them. Worker threads are not pinned to CPUs.
//!
//! ICMP reports about our datagrams land on the socket the same 4-tuple hash
//! picks, so on the connection's worker; after the client's address changed,
//! on whichever worker the new address hashes to. A too-big report that fits
//! none of that worker's connections goes to the others (`forward`); an
//! unreachable one matters only during a handshake, before any move.

use std::future::{Future, poll_fn};
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::Poll;

use quark_proto::config::Worker;
use quark_proto::{EndpointConfig, ServerConfig};
use quark_udp::{Socket, UdpSocket, XdpConfig, XdpProgram};
use tokio::runtime::Handle;
use tokio::sync::oneshot;

use crate::connection::Connection;
use crate::endpoint::Endpoint;
use crate::forward::{Group, Inbox, Link};

/// Most workers a group can have (the connection ID tag is one byte).
pub const MAX_WORKERS: usize = 255;

impl Endpoint {
    /// Serve `addr` with `workers` threads (see [`WorkerGroup`]). Needs no runtime.
    pub fn server_multi(
        config: ServerConfig,
        addr: SocketAddr,
        workers: usize,
    ) -> io::Result<WorkerGroup> {
        WorkerGroup::bind(EndpointConfig::default(), config, addr, workers)
    }
}

/// A server spread over worker threads, each with its own endpoint and socket on
/// the same address. [`WorkerGroup::accept`] yields connections from all of them;
/// run each connection's tasks on its worker with [`Connection::spawn`], or let
/// [`WorkerGroup::serve`] do it.
///
/// Dropping the group stops accepting; each worker ends once its connections
/// have. [`WorkerGroup::shutdown`] closes them and waits.
pub struct WorkerGroup {
    workers: Vec<WorkerThread>,
    group: Arc<Group>,
    local_addr: SocketAddr,
    /// Where `accept` starts looking, so no worker's queue waits behind another's.
    next: AtomicUsize,
}

struct WorkerThread {
    endpoint: Endpoint,
    runtime: Handle,
    stop: Option<oneshot::Sender<()>>,
    done: Option<oneshot::Receiver<()>>,
}

/// One worker's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WorkerStats {
    /// Connections it holds now.
    pub connections: usize,
    /// Datagrams it passed to the worker their connection ID names.
    pub forwarded: u64,
    /// Datagrams other workers passed to it.
    pub received_forwarded: u64,
    /// Datagrams it could not pass on (the other worker's inbox was full).
    pub dropped: u64,
    /// Datagrams the test hook sent elsewhere ([`WorkerGroup::test_misdeliver`]).
    pub misdelivered: u64,
    /// ICMP too-big reports it passed to another worker, as no connection of
    /// its own fitted (the client had moved; see `forward`).
    pub reports_handed: u64,
}

impl WorkerGroup {
    /// Bind `workers` sockets to `addr` (port 0: one free port for all) and start
    /// a worker thread for each. `config.worker` is set per worker; everything
    /// else (notably `reset_key`) is shared, so any worker can answer for another.
    /// The sockets are kernel UDP, or AF_XDP when the `QUARK_XDP` environment
    /// variable names an interface (see [`WorkerGroup::bind_with`]).
    pub fn bind(
        config: EndpointConfig,
        server: ServerConfig,
        addr: SocketAddr,
        workers: usize,
    ) -> io::Result<Self> {
        let xdp = quark_udp::xdp_from_env()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        Self::bind_with(config, server, addr, workers, xdp.as_ref())
    }

    /// [`WorkerGroup::bind`] over AF_XDP with `xdp` (worker `i` on receive queue
    /// `i` of its interface, whose `queue` setting is ignored), or over UDP when
    /// `xdp` is `None`. Call from a thread in the interface's network namespace:
    /// the worker threads start there.
    pub fn bind_with(
        config: EndpointConfig,
        server: ServerConfig,
        addr: SocketAddr,
        workers: usize,
        xdp: Option<&XdpConfig>,
    ) -> io::Result<Self> {
        if !(1..=MAX_WORKERS).contains(&workers) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("workers must be between 1 and {MAX_WORKERS}"),
            ));
        }
        let sockets = quark_udp::bind_std_reuseport(addr, workers)?;
        let mut local_addr = sockets[0].local_addr()?;
        let program = match xdp {
            Some(xdp) => {
                let program = XdpProgram::attach(local_addr, xdp, workers as u32)?;
                local_addr = program.local_addr();
                Some(program)
            }
            None => None,
        };
        let (group, inboxes) = Group::new(workers);
        let mut this = WorkerGroup {
            workers: Vec::with_capacity(workers),
            group: group.clone(),
            local_addr,
            next: AtomicUsize::new(0),
        };
        for (index, (socket, inbox)) in sockets.into_iter().zip(inboxes).enumerate() {
            let config = EndpointConfig {
                worker: Worker::new(index, workers),
                ..config.clone()
            };
            let link = Link {
                index,
                group: group.clone(),
            };
            let socket = WorkerSocket {
                kernel: socket,
                xdp: program.clone().map(|p| (p, index as u32)),
            };
            // On error `this` drops, which lets the workers already started end.
            this.workers
                .push(start_worker(config, server.clone(), socket, link, inbox)?);
        }
        // One RTT estimate per path for the whole group, as one endpoint
        // keeps for its connections: a client's sockets land on different
        // workers, and a worker whose connections the burst serves last
        // learns the queue from the others' answers (issue #33).
        let first = this.workers[0].endpoint.clone();
        for w in &this.workers[1..] {
            w.endpoint.share_path_rtts_with(&first);
        }
        Ok(this)
    }

    /// The address all workers serve.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Number of workers.
    pub fn workers(&self) -> usize {
        self.workers.len()
    }

    /// Worker `index`'s endpoint.
    pub fn worker(&self, index: usize) -> Option<&Endpoint> {
        self.workers.get(index).map(|w| &w.endpoint)
    }

    /// Worker `index`'s runtime.
    pub fn runtime(&self, index: usize) -> Option<&Handle> {
        self.workers.get(index).map(|w| &w.runtime)
    }

    /// The next connection whose handshake completed, on any worker; `None` once
    /// all workers stopped accepting.
    pub async fn accept(&self) -> Option<Connection> {
        let n = self.workers.len();
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        poll_fn(|cx| {
            let mut closed = 0;
            for k in 0..n {
                match self.workers[(start + k) % n].endpoint.poll_accept(cx) {
                    Poll::Ready(Some(conn)) => return Poll::Ready(Some(conn)),
                    Poll::Ready(None) => closed += 1,
                    Poll::Pending => {}
                }
            }
            if closed == n {
                Poll::Ready(None)
            } else {
                Poll::Pending
            }
        })
        .await
    }

    /// Accept on every worker and run `handler` for each connection on the
    /// worker that owns it (no connection ever crosses threads). Runs until the
    /// group stops accepting; may be combined with [`WorkerGroup::accept`], which
    /// then competes for the same connections.
    pub fn serve<H, F>(&self, handler: H)
    where
        H: Fn(Connection) -> F + Send + Sync + 'static,
        F: Future<Output = ()> + Send + 'static,
    {
        let handler = Arc::new(handler);
        for w in &self.workers {
            let endpoint = w.endpoint.clone();
            let handler = handler.clone();
            w.runtime.spawn(async move {
                while let Some(conn) = endpoint.accept().await {
                    tokio::spawn(handler(conn));
                }
            });
        }
    }

    /// [`Endpoint::set_busy_poll`] on every worker.
    pub fn set_busy_poll(&self, window: std::time::Duration) {
        for w in &self.workers {
            w.endpoint.set_busy_poll(window);
        }
    }

    /// [`Endpoint::set_timer_deferral`] on every worker.
    pub fn set_timer_deferral(&self, on: bool) {
        for w in &self.workers {
            w.endpoint.set_timer_deferral(on);
        }
    }

    /// [`Endpoint::set_lazy_deadlines`] on every worker.
    pub fn set_lazy_deadlines(&self, on: bool) {
        for w in &self.workers {
            w.endpoint.set_lazy_deadlines(on);
        }
    }

    /// [`Endpoint::set_recv_buffer_per_connection`] on every worker.
    pub fn set_recv_buffer_per_connection(&self, bytes: usize) {
        for w in &self.workers {
            w.endpoint.set_recv_buffer_per_connection(bytes);
        }
    }

    /// Close every connection on every worker with `code` and stop accepting.
    pub fn close(&self, code: u64, reason: &[u8]) {
        for w in &self.workers {
            w.endpoint.close(code, reason);
        }
    }

    /// Wait until every connection of every worker has fully closed.
    pub async fn wait_idle(&self) {
        for w in &self.workers {
            w.endpoint.wait_idle().await;
        }
    }

    /// Close every connection with `code`, wait until all have closed, then stop
    /// the worker threads (tasks still running on them are dropped).
    pub async fn shutdown(mut self, code: u64, reason: &[u8]) {
        self.close(code, reason);
        self.wait_idle().await;
        for w in &mut self.workers {
            if let Some(stop) = w.stop.take() {
                let _ = stop.send(());
            }
        }
        for w in &mut self.workers {
            if let Some(done) = w.done.take() {
                // Resolves (with an error) when the thread drops its sender.
                let _ = done.await;
            }
        }
    }

    /// Connections held by all workers.
    pub fn connection_count(&self) -> usize {
        self.workers
            .iter()
            .map(|w| w.endpoint.connection_count())
            .sum()
    }

    /// Each worker's counters.
    pub fn stats(&self) -> Vec<WorkerStats> {
        self.workers
            .iter()
            .zip(&self.group.counters)
            .map(|(w, c)| WorkerStats {
                connections: w.endpoint.connection_count(),
                forwarded: c.forwarded.load(Ordering::Relaxed),
                received_forwarded: c.received.load(Ordering::Relaxed),
                dropped: c.dropped.load(Ordering::Relaxed),
                misdelivered: c.misdelivered.load(Ordering::Relaxed),
                reports_handed: c.reports_handed.load(Ordering::Relaxed),
            })
            .collect()
    }

    /// Test hook: while set, every short-header datagram and every ICMP
    /// too-big report a worker other than `to` receives from its socket is
    /// handled as if the kernel had delivered it to worker `to` instead —
    /// which must pass it back to its owner.
    #[doc(hidden)]
    pub fn test_misdeliver(&self, to: Option<usize>) {
        self.group.set_misdeliver(to);
    }
}

impl Drop for WorkerGroup {
    fn drop(&mut self) {
        for w in &self.workers {
            w.endpoint.stop_accepting();
        }
    }
}

impl std::fmt::Debug for WorkerGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerGroup")
            .field("local_addr", &self.local_addr)
            .field("workers", &self.workers.len())
            .finish()
    }
}

/// A worker's socket before its runtime exists: a kernel socket, with the XDP
/// program and queue for the AF_XDP socket it becomes, if any.
struct WorkerSocket {
    kernel: std::net::UdpSocket,
    xdp: Option<(XdpProgram, u32)>,
}

impl WorkerSocket {
    /// Registers the socket with the current runtime.
    fn open(self) -> io::Result<Socket> {
        match self.xdp {
            Some((program, queue)) => Ok(program.open(queue, self.kernel)?.into()),
            None => Ok(UdpSocket::from_std(self.kernel)?.into()),
        }
    }
}

type Started = io::Result<(Endpoint, Handle)>;

/// Start one worker thread and wait until its endpoint runs.
fn start_worker(
    config: EndpointConfig,
    server: ServerConfig,
    socket: WorkerSocket,
    link: Link,
    inbox: Inbox,
) -> io::Result<WorkerThread> {
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Started>();
    let (stop_tx, stop_rx) = oneshot::channel();
    let (done_tx, done_rx) = oneshot::channel::<()>();
    std::thread::Builder::new()
        .name(format!("quark-worker-{}", link.index))
        .spawn(move || {
            // Dropped last, when everything of this worker is gone.
            let _done = done_tx;
            let rt = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                    return;
                }
            };
            let started = rt.block_on(async {
                io::Result::Ok(Endpoint::start(
                    config,
                    Some(server),
                    socket.open()?,
                    Some((link, inbox)),
                ))
            });
            let driver = match started {
                Ok((endpoint, driver)) => {
                    let _ = ready_tx.send(Ok((endpoint, rt.handle().clone())));
                    driver
                }
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                    return;
                }
            };
            rt.block_on(async move {
                tokio::pin!(driver);
                tokio::select! {
                    _ = &mut driver => {}
                    stop = stop_rx => {
                        // The group was dropped rather than shut down: run on
                        // until the connections have ended.
                        if stop.is_err() {
                            let _ = driver.await;
                        }
                    }
                }
            });
        })?;
    let (endpoint, runtime) = ready_rx
        .recv()
        .map_err(|_| io::Error::other("worker thread ended during start-up"))??;
    Ok(WorkerThread {
        endpoint,
        runtime,
        stop: Some(stop_tx),
        done: Some(done_rx),
    })
}
