//! The driver task: receive a batch of datagrams, feed them to the protocol,
//! fire timers, collect every connection's outgoing datagrams into GSO batches and
//! send them with one system call, then wake whoever waits. When what arrived
//! wakes tasks, they run before the driver transmits, so that an answer leaves
//! with the acknowledgments and handshake frames in one datagram. One driver per
//! endpoint; it ends when the endpoint and all its connections are gone. In a
//! worker group it also passes datagrams for other workers' connections on, and
//! takes in those passed to it (see `forward`). The way in is `receive`, the
//! way out `transmit`; this file holds the round that joins them.

mod defer;
mod fair;
#[cfg(test)]
mod fair_sim;
mod receive;
mod rx_bufs;
#[cfg(test)]
mod sim_pair;
#[cfg(test)]
mod storm_sim;
mod transmit;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use quark_proto::{ConnectionError, ConnectionHandle, Transmit};
use quark_udp::{RecvMeta, Socket};

use crate::busy_poll::BusyPoll;
use crate::counters::driver as counters;
use crate::deadlines::Deadlines;
use crate::events::{Woken, apply, deliver_events};
use crate::forward::{Inbox, Link};
use crate::shared::{SharedRef, State};
use crate::wakeup::Wakeup;
use rx_bufs::RxBufs;

/// Datagram buffers handed to one `recvmmsg`.
const RECV_BATCH: usize = 16;
/// Fewest buffers one `recvmmsg` offers (see `Driver::recv_ask`).
const MIN_RECV_ASK: usize = 4;
/// Receive buffer asked for per connection (`Endpoint::set_recv_buffer_per_connection`):
/// room for a small datagram or two from each connection at once at the
/// kernel's charge (1-2 KiB each, doubled in its accounting). At 20 000
/// connections the socket's fixed 32 MiB overflowed in a cold burst: every
/// connection's request, then its probes (issue #33).
pub(crate) const RECV_BUF_PER_CONN: usize = 4 * 1024;
/// The most the receive buffer grows to (asked; the kernel charges twice).
const MAX_RECV_BUF: usize = 512 << 20;
/// What quark-udp asks for every socket (its `RECV_BUFFER_SIZE`).
const BASE_RECV_BUF: usize = 32 << 20;
/// Transmits collected before one `sendmmsg`.
const SEND_BATCH: usize = 32;
/// Upper bound on bytes in one GSO super-datagram.
const MAX_GSO_BYTES: usize = 64_000;
/// Bytes collected that are sent at once rather than held for a fuller batch:
/// a GSO batch, or one loopback-sized datagram. Past this the system call costs
/// little per byte, and the peer, on another CPU, starts on these datagrams
/// while the next are still being encrypted. Holding a whole batch (up to 32
/// datagrams of 65 KB on loopback) made a 512 KiB message wait for all of its
/// encryption: persistent 512 KiB went 1 870-2 000 -> 2 560-2 660 req/s with
/// the same CPU per byte (BENCHMARKS.md).
const FLUSH_BYTES: usize = MAX_GSO_BYTES;
/// Capacity of a send buffer: a GSO batch, or the largest UDP payload with its
/// AEAD tag. A connection reserves room for a whole datagram before it builds
/// one; a smaller buffer (64 000 bytes against a 65 000-byte loopback MTU)
/// was reallocated, 64 KB copied into fresh pages, once per pooled buffer.
const SEND_BUF_SIZE: usize = 66 * 1024;
/// Transmits (each up to a GSO batch) a connection builds per round-robin
/// pass before the next touched connection's turn (see `fair`).
const CONN_BUDGET: usize = 1;
/// Loop iterations before yielding to other tasks.
const POLL_BUDGET: usize = 32;
/// Datagrams taken from the group inbox per round.
const INBOX_BATCH: usize = 64;

/// Transmitting put off for woken tasks to answer first (at most twice, then
/// the driver transmits whatever there is).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Deferred {
    No,
    /// Rescheduled behind the tasks woken.
    Queued,
    /// Rescheduled behind every task that can run.
    PastAll,
}

/// Have the runtime poll this task again once every other runnable task (and the
/// `block_on` future) has run: what `tokio::task::yield_now` does on its first poll.
fn yield_past_all(cx: &mut Context<'_>) {
    let mut yielded = std::pin::pin!(tokio::task::yield_now());
    // Pending by design: the waker is registered with the scheduler.
    let _ = yielded.as_mut().poll(cx);
}

pub(crate) struct Driver {
    shared: SharedRef,
    /// The endpoint's socket (replaced on `Endpoint::rebind`).
    socket: Arc<Socket>,
    /// Wakes the driver at the protocol's next deadline.
    wakeup: Wakeup,
    /// Receive buffers, lent to connections (`rx_bufs`).
    rx: RxBufs,
    /// Whether the last read's buffers may be lent.
    lend: bool,
    metas: Vec<RecvMeta>,
    /// Buffers the next `recvmmsg` offers: twice what the last one filled,
    /// within [MIN_RECV_ASK, RECV_BATCH]. The kernel needs a header, an iovec
    /// and an address slot per buffer offered, written before every call: for
    /// a request that arrives alone, offering all sixteen wrote about a
    /// kilobyte of them.
    recv_ask: usize,
    /// Datagram batches built but not yet accepted by the socket.
    outgoing: Vec<(Transmit, Vec<u8>)>,
    /// Bytes in `outgoing`.
    outgoing_bytes: usize,
    pool: Vec<Vec<u8>>,
    /// Connections to poll this round.
    touched: Vec<ConnectionHandle>,
    /// Connections whose transmit was cut short by a full socket.
    backlog: Vec<ConnectionHandle>,
    /// Scratch for `transmit`'s round-robin passes (kept to reuse its allocation).
    again: Vec<ConnectionHandle>,
    /// Scratch for `timers` (kept to reuse its allocation).
    due: Vec<ConnectionHandle>,
    /// Connections whose due loss-detection timer waits for the socket to
    /// be read empty (`defer`); at most one entry per connection after a
    /// dedup, so bounded by the connections.
    held: Vec<ConnectionHandle>,
    /// The connections' deadlines, earliest first.
    deadlines: Deadlines,
    /// This worker's place in its group, and datagrams other workers passed on.
    link: Option<Link>,
    inbox: Option<Inbox>,
    /// Too-big reports passed to the other workers, this second.
    hand_overs: quark_proto::endpoint::ReportBudget,
    /// The last `receive` emptied the socket (and the inbox) and left the
    /// wakers registered: another round would find nothing new.
    drained: bool,
    /// The last read filled every buffer offered: more datagrams may wait.
    unread: bool,
    /// Receive buffer asked for so far (`fit_recv_buffer`).
    recv_buf_bytes: usize,
    /// Keep polling the socket for a while after work instead of sleeping.
    busy: BusyPoll,
    /// How far transmitting is put off for the tasks a round's events woke
    /// (see `poll`).
    deferred: Deferred,
    /// Whom that round woke, and `State::reader_waits` then.
    woken: Woken,
    reader_waits_then: u64,
}

impl Driver {
    pub(crate) fn new(shared: SharedRef, inbox: Option<Inbox>) -> Self {
        let socket = shared.socket();
        // ICMP errors about what we send: a handshake with a closed port or
        // an unreachable host ends at once (`receive::read_reports`).
        socket.set_error_reports(true);
        Driver {
            socket,
            link: shared.worker.clone(),
            inbox,
            hand_overs: Default::default(),
            shared,
            wakeup: Wakeup::new(),
            rx: RxBufs::new(RECV_BATCH),
            lend: true,
            metas: vec![RecvMeta::default(); RECV_BATCH],
            recv_ask: RECV_BATCH,
            outgoing: Vec::new(),
            outgoing_bytes: 0,
            pool: Vec::new(),
            touched: Vec::new(),
            backlog: Vec::new(),
            again: Vec::new(),
            due: Vec::new(),
            held: Vec::new(),
            deadlines: Deadlines::default(),
            drained: false,
            unread: false,
            recv_buf_bytes: BASE_RECV_BUF,
            busy: BusyPoll::default(),
            deferred: Deferred::No,
            woken: Woken::default(),
            reader_waits_then: 0,
        }
    }

    /// The timerfd that wakes the driver at its next deadline, if the kernel
    /// gave one (`crate::Drive` lets a caller poll it).
    pub(crate) fn timer_fd(&self) -> Option<std::os::fd::RawFd> {
        self.wakeup.timer_fd()
    }

    fn touch(&mut self, state: &mut State, h: ConnectionHandle) {
        if let Some(entry) = state.conns.get_mut(&h) {
            if !entry.touched {
                entry.touched = true;
                self.touched.push(h);
            }
        }
    }

    /// Fire due timers; with the deferral on, a due loss-detection timer
    /// waits while received datagrams do (see `defer`).
    fn timers(&mut self, state: &mut State, now: Instant) {
        let mut due = std::mem::take(&mut self.due);
        self.deadlines.take_due(&mut state.conns, now, &mut due);
        let hold = self.unread && state.defer_timers;
        if !hold && !self.held.is_empty() {
            // The socket was read empty: what the held timers waited for
            // has been read, or is not coming.
            due.append(&mut self.held);
            due.sort_unstable();
            due.dedup();
        }
        for h in due.drain(..) {
            if hold && self.hold(state, h, now) {
                continue;
            }
            // A held connection may be gone since.
            let Some(e) = state.conns.get_mut(&h) else {
                continue;
            };
            let at = e.timeout.take().unwrap_or(now);
            counters::fired(now.saturating_duration_since(at));
            if counters::on()
                && let Some(c) = state.proto.connection(h)
                && c.poll_timeouts().1.is_some_and(|t| t <= now)
            {
                counters::add(&counters::LOSS_FIRED, 1);
            }
            state.proto.handle_timeout(h, now);
            self.touch(state, h);
        }
        self.due = due;
    }

    /// Holds `h`'s due loss-detection timer if nothing else of it is due:
    /// its deadline becomes the bound (or its next other timer), and it fires
    /// when the socket is read empty (`defer::hold_until`).
    fn hold(&mut self, state: &mut State, h: ConnectionHandle, now: Instant) -> bool {
        let Some(conn) = state.proto.connection(h) else {
            return false;
        };
        let Some(until) = defer::hold_until(conn.poll_timeouts(), now) else {
            return false;
        };
        let Some(e) = state.conns.get_mut(&h) else {
            return false;
        };
        e.timeout = Some(until);
        self.deadlines.set(&mut state.conns, h, until);
        self.held.push(h);
        if self.held.len() > 2 * state.conns.len() + 64 {
            self.held.sort_unstable();
            self.held.dedup();
        }
        counters::add(&counters::HELD, 1);
        true
    }

    /// Deliver the touched connections' events to waiting tasks, leaving the
    /// connections touched. Returns whom it woke.
    fn deliver(&self, state: &mut State) -> Woken {
        let mut woken = Woken::default();
        for &h in &self.touched {
            woken += deliver_events(state, h);
        }
        woken
    }

    /// Deliver protocol events to waiting tasks; drop finished connections.
    fn dispatch(&mut self, state: &mut State) {
        // Drained in place, the list keeps its capacity: taking it would free the
        // buffer and allocate a new one at the next packet.
        let mut touched = std::mem::take(&mut self.touched);
        for h in touched.drain(..) {
            state.proto.sync(h);
            let State {
                proto,
                conns,
                ready,
                accept_wakers,
                ..
            } = &mut *state;
            let Some(conn) = proto.connection_mut(h) else {
                continue;
            };
            let timeout = conn.poll_timeout();
            if let Some(q) = self.shared.qlog.as_ref() {
                q.drain(conn, conn.is_drained());
            }
            let Some(entry) = conns.get_mut(&h) else {
                apply(conn, None, h, ready, accept_wakers);
                continue;
            };
            apply(conn, Some(&mut *entry), h, ready, accept_wakers);
            entry.touched = false;
            let changed = entry.timeout != timeout;
            entry.timeout = timeout;
            if entry.drained && entry.refs == 0 {
                conns.remove(&h);
                proto.remove(h);
            } else if changed && let Some(at) = timeout {
                self.deadlines.set(conns, h, at);
            }
        }
        if self.touched.is_empty() {
            self.touched = touched;
        }
        if !state.idle_wakers.is_empty() && state.conns.values().all(|e| e.drained) {
            state.idle_wakers.drain(..).for_each(|w| w.wake());
        }
    }
}

impl Future for Driver {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        let shared = this.shared.clone();
        let mut state = shared.lock();
        state.driver = Some(cx.waker().clone());
        this.deadlines.eager = !state.lazy_deadlines;
        if let Some(same_host) = state.rebound.take() {
            this.rebind(&mut state, same_host);
        }
        let socket = this.socket.clone();
        for _ in 0..POLL_BUDGET {
            let now = Instant::now();
            counters::add(&counters::ROUNDS, 1);
            // Tasks asked for something since the last round (wrote, read, ...).
            let answered = !state.dirty.is_empty();
            while let Some(h) = state.dirty.pop_front() {
                this.touch(&mut state, h);
            }
            let sent_all = this.flush(cx, &socket);
            if sent_all {
                let mut backlog = std::mem::take(&mut this.backlog);
                for h in backlog.drain(..) {
                    this.touch(&mut state, h);
                }
                this.backlog = backlog;
            }
            let received = this.receive(cx, &socket, &mut state, now);
            this.timers(&mut state, now);
            if !state.alarms.is_empty() {
                crate::alarm::fire(&mut state.alarms, now);
            }
            // What arrived woke tasks (a request to answer, a handshake that
            // completed): let them run first, so that their answer leaves with our
            // acknowledgments and handshake frames, in one datagram and one system
            // call instead of two. Not when answers are already waiting (busy
            // connections): those go now, and the tasks' answers next round.
            match this.deferred {
                Deferred::No if received && !answered => {
                    this.woken = this.deliver(&mut state);
                    if this.woken.any() {
                        // Behind the tasks just woken, in the runtime's queue:
                        // cheap, and enough when they answer directly.
                        this.reader_waits_then = state.reader_waits;
                        state.deferrals += 1;
                        this.deferred = Deferred::Queued;
                        cx.waker().wake_by_ref();
                        return Poll::Pending;
                    }
                }
                // Only readers were woken, and all have taken their data and
                // wait for more without a word for the peer: no answer is
                // coming, and going past all other tasks (one more round of
                // the runtime, an `epoll_wait`, per receive on a bulk
                // download) would only delay our acknowledgments. Other
                // wake-ups (accept, connected, writable) may have spawned a
                // task that answers, so those still wait past all.
                Deferred::Queued
                    if !answered
                        && this.woken.others == 0
                        && state.reader_waits - this.reader_waits_then
                            >= this.woken.readers as u64 =>
                {
                    this.deferred = Deferred::No;
                }
                Deferred::Queued if !answered => {
                    // Nobody answered yet: the answer may come from a task those
                    // spawned, or from the runtime's `block_on` future. Tokio runs
                    // a task that yields after everything else that can run.
                    this.deferred = Deferred::PastAll;
                    state.deferrals_past_all += 1;
                    yield_past_all(cx);
                    return Poll::Pending;
                }
                _ => this.deferred = Deferred::No,
            }
            let produced = sent_all && this.transmit(cx, &mut state, &socket, now);
            // Send before the bookkeeping: a peer waiting for this answer starts
            // on it while this side delivers events and sets its timers.
            let sent_more = produced && this.flush(cx, &socket);
            this.dispatch(&mut state);
            // Park when nothing happened, or when what happened is finished:
            // the socket was emptied and everything built went out (every
            // touched connection was polled until it had nothing more). A
            // round to confirm it would only find the same.
            let worked = received || produced || sent_more;
            let finished = this.drained && this.outgoing.is_empty();
            if state.dirty.is_empty() && (finished || !worked) {
                if this.busy.keep_polling(now, worked, state.busy_poll) {
                    // Run the other tasks (they may answer what arrived), then
                    // come back to the socket instead of sleeping.
                    cx.waker().wake_by_ref();
                    return Poll::Pending;
                }
                return this.park(cx, &mut state, now);
            }
        }
        // Out of budget: let other tasks run, then continue.
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// The driver is gone, normally (nothing left) or not (a panic, or its runtime
/// shutting down): fail every connection still open and wake everyone, so no
/// application task waits forever for a driver that will never come.
impl Drop for Driver {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        state.stopped = true;
        state.closed = true;
        if let Some(q) = self.shared.qlog.as_ref() {
            let handles: Vec<_> = state.conns.keys().copied().collect();
            for h in handles {
                if let Some(conn) = state.proto.connection_mut(h) {
                    q.drain(conn, true);
                }
            }
        }
        for entry in state.conns.values_mut() {
            if !entry.drained {
                entry
                    .error
                    .get_or_insert_with(|| Box::new(ConnectionError::DriverStopped));
                entry.drained = true;
            }
            entry.wakers.wake_all();
        }
        state.accept_wakers.drain(..).for_each(Waker::wake);
        state.idle_wakers.drain(..).for_each(Waker::wake);
    }
}

impl Driver {
    /// The socket was replaced: take the new one and move the client
    /// connections to it (RFC 9000 §9.2).
    fn rebind(&mut self, state: &mut State, same_host: bool) {
        self.socket = self.shared.socket();
        self.socket.set_error_reports(true);
        self.recv_buf_bytes = BASE_RECV_BUF;
        self.fit_recv_buffer(state);
        let now = Instant::now();
        let handles: Vec<ConnectionHandle> = state.proto.handles().collect();
        for h in handles {
            let Some(conn) = state.proto.connection_mut(h) else {
                continue;
            };
            if conn.side().is_client() {
                if let Err(e) = conn.migrate(now, same_host) {
                    tracing::debug!(?h, %e, "rebound without migrating");
                }
                state.touch(h);
            }
        }
    }

    /// Nothing to do now: wait for the next deadline, or finish if everything is gone.
    fn park(&mut self, cx: &mut Context<'_>, state: &mut State, now: Instant) -> Poll<()> {
        if state.endpoint_refs == 0 && state.conns.is_empty() && self.outgoing.is_empty() {
            return Poll::Ready(());
        }
        counters::add(&counters::PARKS, 1);
        let mut next = self.deadlines.next(&mut state.conns);
        if !state.alarms.is_empty() {
            let alarm = crate::alarm::fire(&mut state.alarms, now);
            next = next.into_iter().chain(alarm).min();
        }
        self.wakeup.wake_at(cx, now, next);
        Poll::Pending
    }
}
