//! State shared by the driver task and the application's handles: the protocol
//! endpoint behind one lock, plus the wakers of everyone waiting on it.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::Waker;
use std::time::Instant;

use quark_proto::{
    ConnectionError, ConnectionHandle, Dir, Endpoint as ProtoEndpoint, IdMap, StreamId,
};
use quark_udp::Socket;

use crate::forward::Link;

/// Everything the application may wait for on one connection.
#[derive(Default)]
pub(crate) struct ConnWakers {
    pub(crate) readers: IdMap<StreamId, Waker>,
    pub(crate) writers: IdMap<StreamId, Waker>,
    /// Waiting for a stream to be acknowledged in full or stopped.
    pub(crate) finishers: IdMap<StreamId, Waker>,
    /// Every other waiting task, with what it waits for. All waiting for one
    /// thing are woken when it happens (a single slot kept only the last task
    /// to wait, and the others slept for good: a client opening 200 streams
    /// against a limit of 128 stalled). One list rather than one per kind:
    /// an idle connection has a waker or two, and eight empty vectors were
    /// 192 bytes of every connection's entry (issue #30).
    waiting: Vec<(Wait, Waker)>,
}

/// What a task in [`ConnWakers`]' list waits for.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Wait {
    /// A stream of this direction (`dir_index`) to accept, or to open.
    Accept(u8),
    Open(u8),
    /// The handshake (`Connecting`, and `Connection::handshake` after 0-RTT).
    Connected,
    Closed,
    /// A datagram, and room in the datagram send queue.
    DatagramRead,
    DatagramWrite,
}

impl ConnWakers {
    /// `waker`'s task waits for `what`: added unless it already wakes the
    /// same task (a task that polls again must not add itself twice).
    pub(crate) fn wait(&mut self, what: Wait, waker: &Waker) {
        if !self
            .waiting
            .iter()
            .any(|(w, k)| *w == what && k.will_wake(waker))
        {
            // Room for one at first (a Vec starts at four): most idle
            // connections have one task waiting.
            if self.waiting.capacity() == 0 {
                self.waiting.reserve_exact(1);
            }
            self.waiting.push((what, waker.clone()));
        }
    }

    /// Wakes every task waiting for `what`; returns how many.
    pub(crate) fn wake(&mut self, what: Wait) -> usize {
        let mut n = 0;
        let mut i = 0;
        while i < self.waiting.len() {
            if self.waiting[i].0 == what {
                self.waiting.swap_remove(i).1.wake();
                n += 1;
            } else {
                i += 1;
            }
        }
        // The room stays: a server's accept waiter comes back with every
        // stream, and freeing it would cost a malloc per request.
        n
    }

    /// Wakes every waiting task; returns how many wakers that was.
    pub(crate) fn wake_all(&mut self) -> usize {
        let all = self
            .readers
            .drain()
            .chain(self.writers.drain())
            .chain(self.finishers.drain())
            .map(|(_, w)| w)
            .chain(
                std::mem::take(&mut self.waiting)
                    .into_iter()
                    .map(|(_, w)| w),
            );
        all.map(Waker::wake).count()
    }
}

/// Per-connection bookkeeping beside the protocol state.
pub(crate) struct ConnEntry {
    /// Boxed: the connection table holds entries inline, with a hash
    /// table's slack, and the wakers (120 bytes) are most of an entry.
    pub(crate) wakers: Box<ConnWakers>,
    /// Handshake finished.
    pub(crate) connected: bool,
    /// Why it ended. Boxed: 48 bytes in every live connection's table slot
    /// otherwise, for the few that ended (issue #30).
    pub(crate) error: Option<Box<ConnectionError>>,
    /// Protocol state is gone.
    pub(crate) drained: bool,
    /// Application handles (Connection and streams) alive.
    pub(crate) refs: usize,
    /// Server side: not yet handed to `accept`.
    pub(crate) incoming: bool,
    /// Send halves the application holds a `SendStream` for, and how each ended
    /// once it has: `Some(None)` all acknowledged, `Some(Some(code))` stopped by
    /// the peer. An entry leaves with its handle, so a connection serving
    /// millions of streams keeps only those still held.
    pub(crate) send_halves: IdMap<StreamId, Option<Option<u64>>>,
    /// When the protocol next wants a timeout.
    pub(crate) timeout: Option<Instant>,
    /// The time of its entry in the driver's deadline heap, at or before
    /// `timeout` (see `deadlines`).
    pub(crate) queued: Option<Instant>,
    /// Queued for the driver's current round.
    pub(crate) touched: bool,
}

impl ConnEntry {
    pub(crate) fn new(incoming: bool) -> Self {
        ConnEntry {
            wakers: Box::default(),
            connected: false,
            error: None,
            drained: false,
            refs: 0,
            incoming,
            send_halves: IdMap::default(),
            timeout: None,
            queued: None,
            touched: false,
        }
    }
}

pub(crate) fn dir_index(dir: Dir) -> u8 {
    match dir {
        Dir::Bi => 0,
        Dir::Uni => 1,
    }
}

/// The lock-protected state.
pub(crate) struct State {
    pub(crate) proto: ProtoEndpoint,
    pub(crate) conns: IdMap<ConnectionHandle, ConnEntry>,
    /// Connections with work for the driver (new input from the application).
    pub(crate) dirty: VecDeque<ConnectionHandle>,
    /// Server connections whose handshake completed, for `accept`.
    pub(crate) ready: VecDeque<ConnectionHandle>,
    pub(crate) accept_wakers: Vec<Waker>,
    pub(crate) idle_wakers: Vec<Waker>,
    pub(crate) driver: Option<Waker>,
    /// Endpoint handles alive; the driver stops when none are and no connection is left.
    pub(crate) endpoint_refs: usize,
    /// No new connections are accepted.
    pub(crate) closed: bool,
    /// The driver task is gone (see `Driver`'s `Drop`): nothing moves any more.
    pub(crate) stopped: bool,
    /// How long the driver keeps polling after work before it sleeps (zero: off).
    pub(crate) busy_poll: std::time::Duration,
    /// A due loss-detection timer waits while received datagrams wait
    /// unread (`driver::defer`).
    pub(crate) defer_timers: bool,
    /// `Endpoint::set_lazy_deadlines`.
    pub(crate) lazy_deadlines: bool,
    /// Receive buffer asked for per connection (`Driver::fit_recv_buffer`; 0:
    /// the socket's own size only).
    pub(crate) recv_buf_per_conn: usize,
    /// Times a reader went back to waiting for data (registered its waker and
    /// returned `Pending`): the driver compares it with the readers it woke, to
    /// tell whether they have all had their turn (see `Driver::poll`).
    pub(crate) reader_waits: u64,
    /// Rounds whose transmit waited for the tasks they woke, and of those
    /// the ones that had to wait past every task (looked at by tests).
    pub(crate) deferrals: u64,
    pub(crate) deferrals_past_all: u64,
    /// The socket was replaced (`Endpoint::rebind`): the driver takes the new
    /// one and moves its client connections. True if only the port changed.
    pub(crate) rebound: Option<bool>,
    /// Wake-ups the driver runs for others (`crate::alarm`), and the last
    /// slot number given.
    pub(crate) alarms: Vec<crate::alarm::Entry>,
    pub(crate) next_alarm: u64,
}

impl State {
    /// A connection's entry and its protocol state, or the error it ended
    /// with.
    pub(crate) fn live(
        &mut self,
        h: ConnectionHandle,
    ) -> Result<(&mut ConnEntry, &mut quark_proto::Connection), ConnectionError> {
        let entry = self.conns.get_mut(&h).expect("connection entry");
        if let Some(e) = entry.error.as_deref() {
            return Err(e.clone());
        }
        Ok((entry, self.proto.connection_mut(h).expect("connection")))
    }

    pub(crate) fn wake_driver(&mut self) {
        if let Some(w) = self.driver.take() {
            w.wake();
        }
    }

    /// Note that the application touched a connection, so the driver should poll it.
    pub(crate) fn touch(&mut self, h: ConnectionHandle) {
        self.dirty.push_back(h);
        self.wake_driver();
    }
}

pub(crate) struct Shared {
    pub(crate) state: Mutex<State>,
    /// The socket; `Endpoint::rebind` replaces it (the driver holds a clone
    /// and takes the new one when `State::rebound` says so).
    pub(crate) socket: Mutex<Arc<Socket>>,
    /// The runtime the driver runs on: connection tasks belong there too.
    pub(crate) runtime: tokio::runtime::Handle,
    /// The endpoint's place in a worker group.
    pub(crate) worker: Option<Link>,
    /// Writes the connections' qlog files, when qlog is on (dropped last: it
    /// finishes the files).
    pub(crate) qlog: Option<crate::qlog::QlogWriter>,
}

impl Shared {
    /// The socket in use.
    pub(crate) fn socket(&self) -> Arc<Socket> {
        self.socket
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves consistent-enough state for
        // shutdown; don't turn one panic into a cascade.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

pub(crate) type SharedRef = Arc<Shared>;
