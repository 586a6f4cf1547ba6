//! `Connection`: open and accept streams, close, inspect.

use std::future::{Future, poll_fn};
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use quark_proto::recovery::EcnState;
use quark_proto::{ConnectionError, ConnectionHandle, ConnectionStats, Dir, Priority, StreamId};

use crate::shared::{ConnEntry, SharedRef, State, Wait, dir_index};
use crate::stream::{RecvStream, SendStream};

/// A QUIC connection. Cheap to clone; when the last clone (and every stream of
/// it) is dropped, the connection is closed with code 0.
pub struct Connection {
    pub(crate) shared: SharedRef,
    pub(crate) handle: ConnectionHandle,
}

impl Connection {
    pub(crate) fn new(shared: SharedRef, handle: ConnectionHandle) -> Self {
        if let Some(e) = shared.lock().conns.get_mut(&handle) {
            e.refs += 1;
        }
        Connection { shared, handle }
    }

    /// A reference the caller already counted, under the lock that found
    /// the entry: between that lock and another, the driver could remove
    /// an entry nobody holds.
    pub(crate) fn from_counted(shared: SharedRef, handle: ConnectionHandle) -> Self {
        Connection { shared, handle }
    }

    /// A stream half's reference, which the caller already counted (under the
    /// lock it held), so making it takes no lock.
    fn counted(&self) -> ConnRef {
        ConnRef {
            shared: self.shared.clone(),
            handle: self.handle,
        }
    }

    fn poll_open(&self, cx: &mut Context<'_>, dir: Dir) -> Poll<Result<StreamId, ConnectionError>> {
        let mut state = self.shared.lock();
        let state = &mut *state;
        let (entry, conn) = match state.live(self.handle) {
            Ok(live) => live,
            Err(e) => return Poll::Ready(Err(e)),
        };
        if let Some(id) = conn.open_stream(dir) {
            // A local stream always has a send half.
            count_halves(entry, id, dir, true);
            return Poll::Ready(Ok(id));
        }
        // Blocked by the peer's MAX_STREAMS: a STREAMS_BLOCKED goes out.
        entry.wakers.wait(Wait::Open(dir_index(dir)), cx.waker());
        state.touch(self.handle);
        Poll::Pending
    }

    fn poll_accept(
        &self,
        cx: &mut Context<'_>,
        dir: Dir,
    ) -> Poll<Result<StreamId, ConnectionError>> {
        let mut state = self.shared.lock();
        let state = &mut *state;
        let entry = state.conns.get_mut(&self.handle).expect("connection entry");
        let conn = state.proto.connection_mut(self.handle);
        if let Some(id) = conn.and_then(|c| c.accept_stream(dir)) {
            count_halves(entry, id, dir, dir == Dir::Bi);
            return Poll::Ready(Ok(id));
        }
        if let Some(e) = entry.error.as_deref() {
            return Poll::Ready(Err(e.clone()));
        }
        entry.wakers.wait(Wait::Accept(dir_index(dir)), cx.waker());
        Poll::Pending
    }

    // The halves are made right after `open`/`accept` counted them, with no
    // await in between: nothing can be dropped between counting and making.

    /// Open a bidirectional stream (waits while the peer's stream limit is reached).
    pub async fn open_bi(&self) -> Result<(SendStream, RecvStream), ConnectionError> {
        poll_fn(|cx| self.poll_open_bi(cx)).await
    }

    /// Open a unidirectional stream.
    pub async fn open_uni(&self) -> Result<SendStream, ConnectionError> {
        poll_fn(|cx| self.poll_open_uni(cx)).await
    }

    /// Wait for the peer to open a bidirectional stream.
    pub async fn accept_bi(&self) -> Result<(SendStream, RecvStream), ConnectionError> {
        poll_fn(|cx| self.poll_accept_bi(cx)).await
    }

    /// Wait for the peer to open a unidirectional stream.
    pub async fn accept_uni(&self) -> Result<RecvStream, ConnectionError> {
        poll_fn(|cx| self.poll_accept_uni(cx)).await
    }

    // The poll forms serve poll-based adapters (h3-quark's traits) without a
    // boxed future per call. Every task waiting on one is woken.

    /// [`open_bi`](Self::open_bi) as a poll.
    pub fn poll_open_bi(
        &self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<(SendStream, RecvStream), ConnectionError>> {
        self.poll_open(cx, Dir::Bi).map_ok(|id| {
            (
                SendStream::new(self.counted(), id),
                RecvStream::new(self.counted(), id),
            )
        })
    }

    /// [`open_uni`](Self::open_uni) as a poll.
    pub fn poll_open_uni(&self, cx: &mut Context<'_>) -> Poll<Result<SendStream, ConnectionError>> {
        self.poll_open(cx, Dir::Uni)
            .map_ok(|id| SendStream::new(self.counted(), id))
    }

    /// [`accept_bi`](Self::accept_bi) as a poll.
    pub fn poll_accept_bi(
        &self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<(SendStream, RecvStream), ConnectionError>> {
        self.poll_accept(cx, Dir::Bi).map_ok(|id| {
            (
                SendStream::new(self.counted(), id),
                RecvStream::new(self.counted(), id),
            )
        })
    }

    /// [`accept_uni`](Self::accept_uni) as a poll.
    pub fn poll_accept_uni(
        &self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<RecvStream, ConnectionError>> {
        self.poll_accept(cx, Dir::Uni)
            .map_ok(|id| RecvStream::new(self.counted(), id))
    }

    /// Close with an application error code and reason.
    ///
    /// Once a connection has ended (closed by either side, timed out or
    /// reset), data that arrived before the end can still be read to the end
    /// of its stream; reads of other streams, and writes, `finish` and
    /// `reset` on any stream, fail with `ConnectionLost`. The connection keeps
    /// nothing else: it frees its TLS session, buffers and records at once.
    pub fn close(&self, code: u64, reason: &[u8]) {
        let mut state = self.shared.lock();
        if let Some(conn) = state.proto.connection_mut(self.handle) {
            conn.close(Instant::now(), code, reason);
        }
        state.touch(self.handle);
    }

    /// Start a 1-RTT key update now (RFC 9001 §6), as quark does by itself
    /// before a key's confidentiality limit. False when one may not start
    /// yet: before the handshake is confirmed, or while the previous update
    /// is unacknowledged.
    pub fn initiate_key_update(&self) -> bool {
        let mut state = self.shared.lock();
        let started = state
            .proto
            .connection_mut(self.handle)
            .is_some_and(|c| c.initiate_key_update(Instant::now()));
        if started {
            state.touch(self.handle);
        }
        started
    }

    /// Set (or with `None` clear) the RFC 9218 priority of stream `id`'s
    /// sending side: lower urgency is sent first, incremental streams of one
    /// urgency share round-robin. False if the stream is gone or has no
    /// sending side here. See [`SendStream::set_priority`](crate::SendStream::set_priority).
    pub fn set_stream_priority(&self, id: StreamId, priority: Option<Priority>) -> bool {
        let mut state = self.shared.lock();
        let ok = state
            .proto
            .connection_mut(self.handle)
            .is_some_and(|c| c.set_stream_priority(id, priority).is_ok());
        if ok {
            state.touch(self.handle);
        }
        ok
    }

    /// Wait until the connection has ended, and say why.
    pub async fn closed(&self) -> ConnectionError {
        poll_fn(|cx| {
            let mut state = self.shared.lock();
            let Some(entry) = state.conns.get_mut(&self.handle) else {
                return Poll::Ready(ConnectionError::LocallyClosed);
            };
            if let Some(e) = entry.error.as_deref() {
                return Poll::Ready(e.clone());
            }
            entry.wakers.wait(Wait::Closed, cx.waker());
            Poll::Pending
        })
        .await
    }

    /// Wait for the handshake to complete (for a connection taken with
    /// [`Connecting::into_0rtt`]); says whether the server accepted the
    /// 0-RTT data.
    pub async fn handshake(&self) -> Result<bool, ConnectionError> {
        poll_fn(|cx| {
            let mut state = self.shared.lock();
            let state = &mut *state;
            let entry = state.conns.get_mut(&self.handle).expect("connection entry");
            if let Some(e) = entry.error.as_deref() {
                return Poll::Ready(Err(e.clone()));
            }
            if entry.connected {
                let accepted = state
                    .proto
                    .connection(self.handle)
                    .is_some_and(|c| c.is_0rtt_accepted());
                return Poll::Ready(Ok(accepted));
            }
            entry.wakers.wait(Wait::Connected, cx.waker());
            Poll::Pending
        })
        .await
    }

    /// Whether the server accepted this connection's 0-RTT data (false
    /// until the handshake completed, and without 0-RTT).
    pub fn is_0rtt_accepted(&self) -> bool {
        self.inspect(|c| c.is_0rtt_accepted()).unwrap_or(false)
    }

    /// Whether the handshake resumed a TLS session from a ticket (so a
    /// ticket one server issued was accepted by this one, in a fleet).
    pub fn is_resumed(&self) -> bool {
        self.inspect(|c| c.is_resumed()).unwrap_or(false)
    }

    /// The peer's address.
    pub fn remote_address(&self) -> SocketAddr {
        self.inspect(|c| c.remote_address())
            .unwrap_or_else(|| ([0, 0, 0, 0], 0).into())
    }

    /// Negotiated ALPN protocol.
    pub fn alpn(&self) -> Option<Vec<u8>> {
        self.inspect(|c| c.alpn().map(<[u8]>::to_vec)).flatten()
    }

    /// Negotiated TLS cipher suite, e.g. "TLS13_AES_128_GCM_SHA256".
    pub fn cipher_suite(&self) -> Option<String> {
        self.inspect(|c| c.cipher_suite().map(|s| format!("{:?}", s.suite())))
            .flatten()
    }

    /// The QUIC version in use (it may differ from the one the client
    /// started in: RFC 9368).
    pub fn quic_version(&self) -> Option<u32> {
        self.inspect(|c| c.version())
    }

    /// Counters.
    pub fn stats(&self) -> ConnectionStats {
        self.inspect(|c| c.stats()).unwrap_or_default()
    }

    /// Where ECN validation of the path stands (RFC 9000 §13.4.2); `None`
    /// once the connection is gone.
    pub fn ecn_state(&self) -> Option<EcnState> {
        self.inspect(|c| c.ecn_state())
    }

    /// The size of the UDP datagrams this connection sends now: the path
    /// MTU that PMTU discovery validated (RFC 9000 §14), 1200 at first.
    pub fn path_mtu(&self) -> usize {
        self.inspect(|c| c.max_datagram_size()).unwrap_or_default()
    }

    /// Whether the path MTU was taken from the endpoint's cache (what
    /// another connection on the same path validated) instead of searched.
    pub fn path_mtu_from_cache(&self) -> bool {
        self.inspect(|c| c.mtu_from_cache()).unwrap_or_default()
    }

    /// Smoothed RTT.
    pub fn rtt(&self) -> Duration {
        self.inspect(|c| c.rtt()).unwrap_or_default()
    }

    /// Whether the peer has acknowledged everything written on every
    /// stream, each stream's end (FIN) or reset included (true once the
    /// connection has ended). A graceful close waits for this before
    /// [`close`](Self::close), which discards whatever is still unsent.
    pub fn all_acked(&self) -> bool {
        self.inspect(|c| c.all_acked()).unwrap_or(true)
    }

    /// Bytes held in the send buffers of all streams, and reserved for
    /// writes, and the send budget they stay within (for tests).
    #[doc(hidden)]
    pub fn send_buffered(&self) -> (usize, usize) {
        self.inspect(|c| (c.send_buffered(), c.send_budget()))
            .unwrap_or_default()
    }

    /// Run `task` on the runtime that drives this connection: its endpoint's, or
    /// in a [`crate::WorkerGroup`] its worker's. Every call on a connection locks
    /// that endpoint's state, so tasks using the connection belong there (the
    /// lock then never bounces between cores).
    pub fn spawn<F>(&self, task: F) -> tokio::task::JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.shared.runtime.spawn(task)
    }

    /// The runtime that drives this connection (see [`Connection::spawn`]).
    pub fn runtime(&self) -> &tokio::runtime::Handle {
        &self.shared.runtime
    }

    /// The index of the worker that owns this connection in a
    /// [`crate::WorkerGroup`]; `None` for a stand-alone endpoint.
    pub fn worker(&self) -> Option<usize> {
        self.shared.worker.as_ref().map(|w| w.index)
    }

    fn inspect<R>(&self, f: impl FnOnce(&quark_proto::Connection) -> R) -> Option<R> {
        let state = self.shared.lock();
        state.proto.connection(self.handle).map(f)
    }
}

/// Count the stream handles about to be made for `id` while the lock is held:
/// a connection reference per half, and the send half's bookkeeping.
fn count_halves(entry: &mut ConnEntry, id: StreamId, dir: Dir, send: bool) {
    entry.refs += if dir == Dir::Bi { 2 } else { 1 };
    if send {
        entry.send_halves.insert(id, None);
    }
}

impl Clone for Connection {
    fn clone(&self) -> Self {
        Connection::new(self.shared.clone(), self.handle)
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        release(&mut self.shared.lock(), self.handle);
    }
}

/// A stream half's counted reference to its connection. Unlike a
/// `Connection` it gives the reference back only when told
/// ([`ConnRef::release`]): the half's own `Drop` does it under the lock it
/// takes anyway, rather than taking it a second time.
pub(crate) struct ConnRef {
    pub(crate) shared: SharedRef,
    pub(crate) handle: ConnectionHandle,
}

impl ConnRef {
    /// Give the reference back; `state` is the shared state, locked.
    pub(crate) fn release(&self, state: &mut State) {
        release(state, self.handle);
    }
}

/// One reference to connection `h` fewer: the last closes it with code 0.
fn release(state: &mut State, h: ConnectionHandle) {
    let Some(entry) = state.conns.get_mut(&h) else {
        return;
    };
    entry.refs -= 1;
    if entry.refs == 0 {
        if let Some(conn) = state.proto.connection_mut(h) {
            conn.close(Instant::now(), 0, b"");
        }
        state.touch(h);
    }
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("handle", &self.handle)
            .finish()
    }
}

/// A connection whose handshake is under way.
pub struct Connecting {
    conn: Option<Connection>,
}

impl Connecting {
    pub(crate) fn new(conn: Connection) -> Self {
        Connecting { conn: Some(conn) }
    }

    /// Use the connection before its handshake completes (0-RTT, RFC 9001
    /// §4.6): `Ok` when the client resumes a session whose ticket allows
    /// early data (`ClientConfig::with_0rtt`). Streams then open at once and
    /// what is written goes out in 0-RTT packets; if the server rejects the
    /// early data, quark sends it again after the handshake, so the
    /// application sees no difference but the delay
    /// ([`Connection::handshake`] tells which). 0-RTT data can be replayed
    /// by an attacker: send only what is safe to repeat. `Err(self)` when
    /// 0-RTT is not possible: await the handshake as usual.
    pub fn into_0rtt(mut self) -> Result<Connection, Self> {
        let conn = self.conn.as_ref().expect("not yet completed");
        let available = conn.inspect(|c| c.is_0rtt_available()).unwrap_or(false);
        if available {
            Ok(self.conn.take().expect("present"))
        } else {
            Err(self)
        }
    }
}

impl Future for Connecting {
    type Output = Result<Connection, ConnectionError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let conn = self.conn.as_ref().expect("polled after completion");
        let mut state = conn.shared.lock();
        let entry = state.conns.get_mut(&conn.handle).expect("connection entry");
        if let Some(e) = entry.error.as_deref() {
            return Poll::Ready(Err(e.clone()));
        }
        if entry.connected {
            drop(state);
            return Poll::Ready(Ok(self.conn.take().expect("present")));
        }
        entry.wakers.wait(Wait::Connected, cx.waker());
        Poll::Pending
    }
}
