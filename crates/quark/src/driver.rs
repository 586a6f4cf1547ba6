//! The driver task: receive a batch of datagrams, feed them to the protocol,
//! fire timers, collect every connection's outgoing datagrams into GSO batches and
//! send them with one system call, then wake whoever waits. When what arrived
//! wakes tasks, they run before the driver transmits, so that an answer leaves
//! with the acknowledgments and handshake frames in one datagram. One driver per
//! endpoint; it ends when the endpoint and all its connections are gone. In a
//! worker group it also passes datagrams for other workers' connections on, and
//! takes in those passed to it (see `forward`).

use std::future::Future;
use std::io::IoSliceMut;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use quark_proto::{ConnectionError, ConnectionHandle, DatagramEvent, EcnCodepoint, Transmit};
use quark_udp::{RecvMeta, Socket};
use smallvec::SmallVec;

use crate::busy_poll::BusyPoll;
use crate::deadlines::Deadlines;
use crate::events::{Woken, apply, deliver_events};
use crate::forward::{Forwarded, Inbox, Link};
use crate::shared::{ConnEntry, SharedRef, State};
use crate::wakeup::Wakeup;

/// Datagram buffers handed to one `recvmmsg`.
const RECV_BATCH: usize = 16;
/// Fewest buffers one `recvmmsg` offers (see `Driver::recv_ask`).
const MIN_RECV_ASK: usize = 4;
/// Room for a full GRO batch per buffer.
const RECV_BUF_SIZE: usize = 64 * 1024;
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
    /// Wakes the driver at the protocol's next deadline.
    wakeup: Wakeup,
    recv_bufs: Vec<Vec<u8>>,
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
    /// Scratch for `timers` (kept to reuse its allocation).
    due: Vec<ConnectionHandle>,
    /// The connections' deadlines, earliest first.
    deadlines: Deadlines,
    /// This worker's place in its group, and datagrams other workers passed on.
    link: Option<Link>,
    inbox: Option<Inbox>,
    /// The last `receive` emptied the socket (and the inbox) and left the
    /// wakers registered: another round would find nothing new.
    drained: bool,
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
        Driver {
            link: shared.worker.clone(),
            inbox,
            shared,
            wakeup: Wakeup::new(),
            recv_bufs: (0..RECV_BATCH).map(|_| vec![0; RECV_BUF_SIZE]).collect(),
            metas: vec![RecvMeta::default(); RECV_BATCH],
            recv_ask: RECV_BATCH,
            outgoing: Vec::new(),
            outgoing_bytes: 0,
            pool: Vec::new(),
            touched: Vec::new(),
            backlog: Vec::new(),
            due: Vec::new(),
            deadlines: Deadlines::default(),
            drained: false,
            busy: BusyPoll::default(),
            deferred: Deferred::No,
            woken: Woken::default(),
            reader_waits_then: 0,
        }
    }

    fn touch(&mut self, state: &mut State, h: ConnectionHandle) {
        if let Some(entry) = state.conns.get_mut(&h) {
            if !entry.touched {
                entry.touched = true;
                self.touched.push(h);
            }
        }
    }

    /// Read one batch of datagrams (and what other workers passed on) and feed
    /// it to the protocol. Returns whether anything arrived.
    ///
    /// One batch per round, not until the socket is empty: answering what a
    /// batch brought before reading on gives the peer work while this side
    /// reads the rest, so with many request/response connections the two sides
    /// overlap instead of taking turns (rps +18 % requests/s and p99 -27 %,
    /// response-time +28 %; BENCHMARKS.md). A bulk receiver loses nothing: with
    /// GRO one batch holds up to 16 buffers of 64 KB.
    fn receive(
        &mut self,
        cx: &mut Context<'_>,
        socket: &Socket,
        state: &mut State,
        now: Instant,
    ) -> bool {
        let n = self.read_batch(cx, socket);
        let misdeliver = self.link.as_ref().and_then(Link::misdeliver_target);
        let mut events: SmallVec<[Option<DatagramEvent>; 8]> = SmallVec::new();
        for i in 0..n {
            let meta = self.metas[i];
            let ecn = EcnCodepoint::from_bits(meta.ecn);
            let data = &mut self.recv_bufs[i][..meta.len];
            if let (Some(to), Some(link)) = (misdeliver, &self.link) {
                // Test hook: short-header datagrams go to the wrong worker.
                for seg in data.chunks_mut(meta.stride.max(1)) {
                    if seg.first().is_some_and(|b| b & 0x80 == 0) {
                        link.misdeliver(to, forwarded(meta.addr, meta.dst_ip, ecn, seg));
                        continue;
                    }
                    let event = state
                        .proto
                        .handle_datagram(now, meta.addr, meta.dst_ip, ecn, seg);
                    if let Some(DatagramEvent::Forward(to)) = event {
                        link.forward(to, forwarded(meta.addr, meta.dst_ip, ecn, seg));
                    }
                    events.push(event);
                }
            } else {
                // Every segment of a GRO buffer at once: connections decrypt
                // their whole share before processing it.
                let link = &self.link;
                let on_event = |event: DatagramEvent, seg: &[u8]| {
                    if let (DatagramEvent::Forward(to), Some(link)) = (event, link) {
                        link.forward(to, forwarded(meta.addr, meta.dst_ip, ecn, seg));
                    }
                    events.push(Some(event));
                };
                state.proto.handle_batch(
                    now,
                    meta.addr,
                    meta.dst_ip,
                    ecn,
                    data,
                    meta.stride,
                    on_event,
                );
            }
            for event in events.drain(..) {
                self.on_datagram(state, event);
            }
        }
        (n > 0) | self.receive_forwarded(cx, state, now)
    }

    /// One `recvmmsg` into the receive buffers: how many datagrams it read.
    /// Sets `drained` when the socket had nothing more.
    fn read_batch(&mut self, cx: &mut Context<'_>, socket: &Socket) -> usize {
        self.drained = false;
        // A few tries: an error is about one datagram, and the socket may hold more.
        for _ in 0..4 {
            // Busy polling asks the socket itself: its readiness only changes
            // when the runtime's reactor runs, which spinning postpones.
            let ready = socket.poll_recv_ready(cx).is_ready();
            if !ready && !self.busy.active() {
                // Nothing waiting (and the waker is registered): skip the buffers.
                self.drained = true;
                return 0;
            }
            let mut iovs: SmallVec<[IoSliceMut<'_>; RECV_BATCH]> = self.recv_bufs[..self.recv_ask]
                .iter_mut()
                .map(|b| IoSliceMut::new(&mut b[..]))
                .collect();
            let polled = if ready {
                socket.poll_recv(cx, &mut iovs, &mut self.metas)
            } else {
                match socket.try_recv(&mut iovs, &mut self.metas) {
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Poll::Pending,
                    result => Poll::Ready(result),
                }
            };
            match polled {
                Poll::Ready(Ok(n)) => {
                    self.recv_ask = (2 * n).clamp(MIN_RECV_ASK, RECV_BATCH);
                    return n;
                }
                // ICMP errors surface here on unconnected sockets; they are not fatal.
                Poll::Ready(Err(e)) => tracing::debug!(error = %e, "receive error"),
                Poll::Pending => {
                    self.drained = true;
                    return 0;
                }
            }
        }
        0
    }

    /// Take datagrams other workers passed to this one.
    fn receive_forwarded(&mut self, cx: &mut Context<'_>, state: &mut State, now: Instant) -> bool {
        let Some(inbox) = &mut self.inbox else {
            return false;
        };
        let mut taken = SmallVec::<[Forwarded; 8]>::new();
        while taken.len() < INBOX_BATCH {
            match inbox.poll_recv(cx) {
                Poll::Ready(Some(f)) => taken.push(f),
                _ => break,
            }
        }
        if taken.len() == INBOX_BATCH {
            // More may wait in the inbox.
            self.drained = false;
        }
        let Some(link) = self.link.clone().filter(|_| !taken.is_empty()) else {
            return false;
        };
        for mut f in taken {
            link.received();
            let event = state
                .proto
                .handle_datagram(now, f.remote, f.local_ip, f.ecn, &mut f.data);
            if let Some(DatagramEvent::Forward(to)) = event {
                // Misdelivered by the test hook: now it goes where it belongs.
                link.forward(to, f);
            }
            self.on_datagram(state, event);
        }
        true
    }

    fn on_datagram(&mut self, state: &mut State, event: Option<DatagramEvent>) {
        match event {
            Some(DatagramEvent::NewConnection(h)) => {
                state.conns.insert(h, ConnEntry::new(true));
                self.touch(state, h);
            }
            Some(DatagramEvent::Connection(h)) => self.touch(state, h),
            Some(DatagramEvent::Response | DatagramEvent::Forward(_)) | None => {}
        }
    }

    /// Fire due timers.
    fn timers(&mut self, state: &mut State, now: Instant) {
        let mut due = std::mem::take(&mut self.due);
        self.deadlines.take_due(&state.conns, now, &mut due);
        for h in due.drain(..) {
            state.proto.handle_timeout(h, now);
            if let Some(e) = state.conns.get_mut(&h) {
                e.timeout = None;
            }
            self.touch(state, h);
        }
        self.due = due;
    }

    /// Queue a built transmit for the next `sendmmsg`.
    fn queue(&mut self, t: Transmit, buf: Vec<u8>) {
        self.outgoing_bytes += t.size;
        self.outgoing.push((t, buf));
    }

    /// Send what is queued. Returns false if the socket is full.
    fn flush(&mut self, cx: &mut Context<'_>, socket: &Socket) -> bool {
        while !self.outgoing.is_empty() {
            // Built in place: collecting would move the whole inline array.
            let mut batch = SmallVec::<[quark_udp::Transmit<'_>; SEND_BATCH]>::new();
            batch.extend(self.outgoing.iter().take(SEND_BATCH).map(|(t, buf)| {
                quark_udp::Transmit {
                    destination: t.destination,
                    ecn: t.ecn.map_or(0, EcnCodepoint::bits),
                    contents: &buf[..t.size],
                    segment_size: t.segment_size,
                    src_ip: t.src_ip,
                }
            }));
            match socket.poll_send(cx, &batch) {
                Poll::Ready(Ok(n)) => {
                    drop(batch);
                    let n = n.max(1).min(self.outgoing.len());
                    for (t, buf) in self.outgoing.drain(..n) {
                        self.outgoing_bytes -= t.size;
                        self.pool.push(buf);
                    }
                }
                Poll::Ready(Err(e)) => {
                    // A datagram the kernel refuses (e.g. unreachable) is dropped, as the
                    // network would; recovery retransmits.
                    drop(batch);
                    tracing::debug!(error = %e, "send error");
                    let (t, buf) = self.outgoing.remove(0);
                    self.outgoing_bytes -= t.size;
                    self.pool.push(buf);
                }
                Poll::Pending => return false,
            }
        }
        true
    }

    /// Collect datagrams from touched connections, sending whenever a batch is
    /// full. Connections not fully drained (the socket filled up) are kept in
    /// `backlog` for the next round. Returns whether anything was produced.
    fn transmit(
        &mut self,
        cx: &mut Context<'_>,
        state: &mut State,
        socket: &Socket,
        now: Instant,
    ) -> bool {
        let mut any = false;
        loop {
            let mut buf = self
                .pool
                .pop()
                .unwrap_or_else(|| Vec::with_capacity(SEND_BUF_SIZE));
            let Some(t) = state.proto.poll_transmit(&mut buf) else {
                self.pool.push(buf);
                break;
            };
            self.queue(t, buf);
            any = true;
        }
        for i in 0..self.touched.len() {
            let h = self.touched[i];
            loop {
                let full = self.outgoing.len() >= SEND_BATCH || self.outgoing_bytes >= FLUSH_BYTES;
                if full && !self.flush(cx, socket) {
                    // Socket full: the rest waits for writability.
                    self.backlog.extend_from_slice(&self.touched[i..]);
                    return any;
                }
                let Some(conn) = state.proto.connection_mut(h) else {
                    break;
                };
                let max = socket
                    .max_gso_segments()
                    .min(MAX_GSO_BYTES / conn.max_datagram_size())
                    .max(1);
                let mut buf = self
                    .pool
                    .pop()
                    .unwrap_or_else(|| Vec::with_capacity(SEND_BUF_SIZE));
                let transmit = conn.poll_transmit(now, max, &mut buf);
                debug_assert!(
                    buf.capacity() <= SEND_BUF_SIZE,
                    "a send buffer grew to {} bytes",
                    buf.capacity()
                );
                match transmit {
                    Some(t) => {
                        self.queue(t, buf);
                        any = true;
                    }
                    None => {
                        self.pool.push(buf);
                        break;
                    }
                }
            }
        }
        any
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

fn forwarded(
    remote: SocketAddr,
    local_ip: Option<IpAddr>,
    ecn: Option<EcnCodepoint>,
    data: &[u8],
) -> Forwarded {
    Forwarded {
        remote,
        local_ip,
        ecn,
        data: data.to_vec(),
    }
}

impl Future for Driver {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        let shared = this.shared.clone();
        let mut state = shared.lock();
        state.driver = Some(cx.waker().clone());
        for _ in 0..POLL_BUDGET {
            let now = Instant::now();
            // Tasks asked for something since the last round (wrote, read, ...).
            let answered = !state.dirty.is_empty();
            while let Some(h) = state.dirty.pop_front() {
                this.touch(&mut state, h);
            }
            let sent_all = this.flush(cx, &shared.socket);
            if sent_all {
                let mut backlog = std::mem::take(&mut this.backlog);
                for h in backlog.drain(..) {
                    this.touch(&mut state, h);
                }
                this.backlog = backlog;
            }
            let received = this.receive(cx, &shared.socket, &mut state, now);
            this.timers(&mut state, now);
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
            let produced = sent_all && this.transmit(cx, &mut state, &shared.socket, now);
            // Send before the bookkeeping: a peer waiting for this answer starts
            // on it while this side delivers events and sets its timers.
            let sent_more = produced && this.flush(cx, &shared.socket);
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
        for entry in state.conns.values_mut() {
            if !entry.drained {
                entry.error.get_or_insert(ConnectionError::DriverStopped);
                entry.drained = true;
            }
            entry.wakers.wake_all();
        }
        state.accept_wakers.drain(..).for_each(Waker::wake);
        state.idle_wakers.drain(..).for_each(Waker::wake);
    }
}

impl Driver {
    /// Nothing to do now: wait for the next deadline, or finish if everything is gone.
    fn park(&mut self, cx: &mut Context<'_>, state: &mut State, now: Instant) -> Poll<()> {
        if state.endpoint_refs == 0 && state.conns.is_empty() && self.outgoing.is_empty() {
            return Poll::Ready(());
        }
        let next = self.deadlines.next(&state.conns);
        self.wakeup.wake_at(cx, now, next);
        Poll::Pending
    }
}
