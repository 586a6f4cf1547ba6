//! The connection's streams: opening and accepting, stream-ID limits
//! (MAX_STREAMS), the application's reads and writes, and the bookkeeping that
//! turns them into frames (`outgoing.rs`) and frames into them (`incoming.rs`).

mod budget;
mod early;
mod incoming;
mod memory;
mod outgoing;
mod pending;
mod pool;
mod sched;
mod spare;

use std::collections::VecDeque;
use std::collections::hash_map::Entry;
use std::time::{Duration, Instant};

use bytes::Bytes;

use self::budget::{CreditWait, SendBudget};
use self::pending::Pending;
pub use self::pool::{release_stream_pool, stream_pool_bytes};
pub use self::sched::Priority;
use self::sched::SendQueue;
use self::spare::Spare;
use crate::stream::{
    AutoWindow, FlowClock, ReadError, ReadInto, ReadOutcome, RecvFlow, RecvState, RecvStream,
    SendFlow, SendState, SendStream, WriteError,
};
use crate::transport_params::TransportParameters;
use crate::types::{Dir, Side, StreamId};

/// Stream IDs are small integers chosen within limits we set, so a trivial hash
/// is both fast and safe here.
type IdMap<V> = crate::types::IdMap<StreamId, V>;

/// Something the application should hear about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamEvent {
    /// The peer opened a stream of this direction: `accept` it.
    Opened(Dir),
    /// Data (or the end, or a reset) can be read.
    Readable(StreamId),
    /// Flow-control credit or buffer space opened up.
    Writable(StreamId),
    /// Everything we wrote, and the FIN, was acknowledged.
    Finished(StreamId),
    /// The peer asked us to stop sending (STOP_SENDING with this code).
    Stopped(StreamId, u64),
    /// More streams of this direction may be opened.
    Available(Dir),
}

/// Why a stream operation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StreamError {
    /// No such stream (never opened, or already closed and forgotten).
    #[error("unknown stream")]
    UnknownStream,
    /// The operation does not apply to this direction of the stream.
    #[error("stream has no such direction")]
    WrongDirection,
    /// Writing failed.
    #[error(transparent)]
    Write(#[from] WriteError),
    /// Reading failed.
    #[error(transparent)]
    Read(#[from] ReadError),
}

pub(crate) struct StreamEntry {
    pub(crate) send: Option<SendStream>,
    pub(crate) recv: Option<RecvStream>,
    /// In the queue of streams with data to send.
    queued: bool,
    /// Set by the application (RFC 9218); `None`: round-robin with the others.
    priority: Option<Priority>,
    /// Code of the RESET_STREAM we sent (to repeat it if lost).
    reset_code: Option<u64>,
    /// Code of the STOP_SENDING we sent (to repeat it if lost).
    stop_code: Option<u64>,
    /// A Readable event is outstanding (avoid one per packet).
    readable_signalled: bool,
    /// Room set aside for this stream's next writes (`reserve`), counted in
    /// the send budget and the connection's credit.
    reserved: usize,
    /// In the queue of streams waiting for room in the send budget.
    budget_queued: bool,
    /// A write was refused for want of the peer's credit, none came since.
    credit_wait: CreditWait,
}

/// Local settings for streams.
#[derive(Clone, Copy, Debug)]
pub(crate) struct StreamLimits {
    pub(crate) stream_window: u64,
    pub(crate) stream_window_max: u64,
    pub(crate) connection_window: u64,
    pub(crate) connection_window_max: u64,
    pub(crate) send_buffer: usize,
    pub(crate) send_buffer_max: usize,
    pub(crate) send_budget: usize,
    pub(crate) send_budget_max: usize,
    /// `TransportConfig::send_timeout`, `None` when zero.
    pub(crate) send_timeout: Option<Duration>,
    pub(crate) max_concurrent: [u64; 2],
}

const fn dir_index(dir: Dir) -> usize {
    match dir {
        Dir::Bi => 0,
        Dir::Uni => 1,
    }
}

const DIRS: [Dir; 2] = [Dir::Bi, Dir::Uni];

/// All streams of a connection.
pub struct Streams {
    side: Side,
    limits: StreamLimits,
    /// Boxed: an entry is ~530 bytes, and a table holds at least four
    /// slots, so a connection serving one request held 2.1 KiB of table
    /// (issue #33); boxed, ~600 bytes, in an allocation glibc's per-thread
    /// cache serves.
    map: IdMap<Box<StreamEntry>>,
    /// Next index for streams we open, per direction.
    next_local: [u64; 2],
    /// The peer's MAX_STREAMS for our streams.
    max_local: [u64; 2],
    /// Streams the peer has opened (highest index + 1), per direction.
    next_remote: [u64; 2],
    /// The limit on streams the peer opens: what we advertised, or are about to.
    max_remote: [u64; 2],
    /// The limit last written in a MAX_STREAMS frame (0 once that frame is
    /// lost: the peer's view is then unknown).
    max_remote_sent: [u64; 2],
    /// Peer streams that finished and were freed.
    closed_remote: [u64; 2],
    accept_queue: [VecDeque<StreamId>; 2],
    send_queue: SendQueue,
    pub(crate) send_flow: SendFlow,
    pub(crate) recv_flow: RecvFlow,
    /// The connection's latest time and RTT, for the receive windows.
    clock: Option<FlowClock>,
    /// The congestion window then, for the send buffers.
    cwnd: u64,
    /// The peer's initial per-stream limits: bidi streams it opens, bidi we open, uni we open.
    peer_window: [u64; 3],
    pending: Pending,
    events: VecDeque<StreamEvent>,
    /// Storage of freed streams, for new ones: send rings, receive rings.
    /// Apart, so a receiving half gets a ring sized for what it received
    /// before, not a send ring that grows (and is copied) again.
    spare: [Spare; 2],
    /// What all send buffers hold, who waits for room, and since when the
    /// connection has had something to send without progress.
    budget: SendBudget,
    /// Client: looks for a stalled response (`connection/stall.rs`) since
    /// the peer last sent something ack-eliciting. Here, in the table's
    /// slack, not in `Connection`, which has none.
    pub(crate) stall_looks: u8,
}

impl Streams {
    pub(crate) fn new(side: Side, limits: StreamLimits) -> Self {
        Streams {
            side,
            limits,
            map: IdMap::default(),
            next_local: [0; 2],
            max_local: [0; 2],
            next_remote: [0; 2],
            max_remote: limits.max_concurrent,
            max_remote_sent: limits.max_concurrent,
            closed_remote: [0; 2],
            accept_queue: Default::default(),
            send_queue: SendQueue::default(),
            send_flow: SendFlow::new(0),
            recv_flow: RecvFlow::new(limits.connection_window, limits.connection_window_max),
            clock: None,
            cwnd: 0,
            peer_window: [0; 3],
            pending: Pending::default(),
            events: VecDeque::new(),
            spare: Default::default(),
            budget: SendBudget::default(),
            stall_looks: 0,
        }
    }

    /// Apply the peer's transport parameters (its initial limits for us).
    pub(crate) fn set_peer_params(&mut self, p: &TransportParameters) {
        self.max_local = [p.initial_max_streams_bidi, p.initial_max_streams_uni];
        self.send_flow = SendFlow::new(p.initial_max_data);
        self.peer_window = [
            p.initial_max_stream_data_bidi_local,
            p.initial_max_stream_data_bidi_remote,
            p.initial_max_stream_data_uni,
        ];
        for dir in DIRS {
            if self.max_local[dir_index(dir)] > 0 {
                self.events.push_back(StreamEvent::Available(dir));
            }
        }
    }

    /// Open a stream if the peer's limit allows; otherwise note that we are
    /// blocked (STREAMS_BLOCKED) and return `None`.
    pub fn open(&mut self, dir: Dir) -> Option<StreamId> {
        let d = dir_index(dir);
        if self.next_local[d] >= self.max_local[d] {
            self.pending.streams_blocked[d] = Some(self.max_local[d]);
            return None;
        }
        let id = StreamId::new(self.side, dir, self.next_local[d]);
        self.next_local[d] += 1;
        self.insert_stream(id);
        Some(id)
    }

    /// Take the next stream the peer opened.
    pub fn accept(&mut self, dir: Dir) -> Option<StreamId> {
        self.accept_queue[dir_index(dir)].pop_front()
    }

    /// Write application data; returns how much was taken (0: blocked, wait for
    /// a Writable event).
    pub fn write(&mut self, id: StreamId, data: &[u8]) -> Result<usize, StreamError> {
        self.write_with(id, data.len(), false, |send, credit| {
            send.write(data, credit)
        })
    }

    /// [`write`](Self::write) of `parts` as if joined (a message's head and
    /// body): one pass through the flow control and the send budget for
    /// them all. Returns how many bytes of the joined parts were taken.
    pub fn write_parts(&mut self, id: StreamId, parts: &[&[u8]]) -> Result<usize, StreamError> {
        let len = parts.iter().map(|p| p.len()).sum();
        self.write_with(id, len, false, |send, credit| {
            send.write_parts(parts, credit)
        })
    }

    /// [`write`](Self::write) of the application's own bytes, held by reference
    /// rather than copied (see [`SendStream::write_shared`]).
    pub fn write_shared(&mut self, id: StreamId, data: &Bytes) -> Result<usize, StreamError> {
        self.write_with(id, data.len(), false, |send, credit| {
            send.write_shared(data, credit)
        })
    }

    /// A write of `len` bytes that `take` hands to the stream, with the
    /// connection's flow control, the send budget, and the frames a blocked
    /// write owes. `reserve`: `take` only counts the bytes, which are set
    /// aside for the stream's next writes instead of written.
    fn write_with(
        &mut self,
        id: StreamId,
        len: usize,
        reserve: bool,
        take: impl FnOnce(&mut SendStream, u64) -> Result<usize, WriteError>,
    ) -> Result<usize, StreamError> {
        let (limit, cap) = (self.send_buffer_limit(), self.send_budget());
        let entry = self.map.get_mut(&id).ok_or(StreamError::UnknownStream)?;
        let send = entry.send.as_mut().ok_or(StreamError::WrongDirection)?;
        send.set_buffer_limit(limit);
        // Others' reservations are spoken for; this stream's own are its.
        let own = entry.reserved;
        let others = self.budget.reserved - own;
        let credit = self.send_flow.credit().saturating_sub(others as u64);
        let used = self.budget.held + others;
        let room = budget::room(cap, used, &self.send_queue, entry.priority).max(own);
        let n = take(send, credit.min(room as u64))?;
        if let Some(limit) = send.take_blocked() {
            self.pending.stream_data_blocked.push(id, limit);
        }
        let stream_dry = n == 0 && send.stream_credit() == 0;
        if reserve {
            entry.reserved = n;
            self.budget.reserved = others + n;
        } else {
            if own > 0 {
                // The reservation is used first.
                let used = n.min(own);
                entry.reserved -= used;
                self.budget.reserved -= used;
            }
            self.budget.held += n;
            self.send_flow.consume(n as u64);
            if n > 0 && !entry.queued {
                entry.queued = true;
                self.send_queue.push(id, entry.priority);
            }
        }
        if n < len && self.send_flow.credit() == 0 {
            self.send_flow.set_blocked();
            if let Some(limit) = self.send_flow.take_blocked() {
                self.pending.data_blocked = Some(limit);
            }
        }
        if n == 0 && len > 0 {
            self.on_refused(id, stream_dry, credit == 0 || room == 0);
        } else if reserve && n < own {
            self.on_budget_freed(own - n);
        }
        Ok(n)
    }

    /// How many bytes, at most `max`, a write to the stream would take now;
    /// they are set aside for its next writes (counted in the send budget and
    /// the connection's credit, so other streams cannot take them) until
    /// written, or until the stream is finished or reset; a later call
    /// replaces the reservation. 0: blocked, as a refused write is (a
    /// Writable event follows when room returns). Lets an application read
    /// from its source only what the stream can take.
    pub fn reserve(&mut self, id: StreamId, max: usize) -> Result<usize, StreamError> {
        self.write_with(id, max, true, |send, credit| send.accept(max, credit))
    }

    /// Finish the sending side (FIN).
    pub fn finish(&mut self, id: StreamId) -> Result<(), StreamError> {
        let entry = self.map.get_mut(&id).ok_or(StreamError::UnknownStream)?;
        entry
            .send
            .as_mut()
            .ok_or(StreamError::WrongDirection)?
            .finish()?;
        if !entry.queued {
            entry.queued = true;
            self.send_queue.push(id, entry.priority);
        }
        // Nothing more will be written: what it waited for, or had set
        // aside, goes back.
        let freed = self.budget.release(entry);
        self.on_budget_freed(freed);
        Ok(())
    }

    /// Abandon the sending side with an application error code (RESET_STREAM).
    pub fn reset(&mut self, id: StreamId, code: u64) -> Result<(), StreamError> {
        let entry = self.map.get_mut(&id).ok_or(StreamError::UnknownStream)?;
        let send = entry.send.as_mut().ok_or(StreamError::WrongDirection)?;
        let before = send.buffered();
        if send.reset().is_some() {
            entry.reset_code = Some(code);
            self.pending.reset.push(id, ());
        }
        let freed = before - send.buffered();
        self.on_cleared(freed);
        self.stop_waiting(id);
        Ok(())
    }

    /// The connection was given `now`; its smoothed RTT is `rtt` and its
    /// congestion window `cwnd`: what the receive windows grow by (reads
    /// carry no clock) and what the send buffers follow.
    pub(crate) fn observe(&mut self, now: Instant, rtt: Duration, cwnd: u64) {
        self.clock = Some(FlowClock { now, rtt });
        self.cwnd = cwnd;
        self.note_stall(now);
    }

    /// Unacknowledged bytes a stream may hold: twice the congestion window,
    /// within the configured bounds. Only in-flight data and a bounded unsent
    /// part (`NOT_SENT_LIMIT`) ever fill it.
    fn send_buffer_limit(&self) -> usize {
        let twice = usize::try_from(self.cwnd.saturating_mul(2)).unwrap_or(usize::MAX);
        twice.clamp(
            self.limits.send_buffer,
            self.limits.send_buffer_max.max(self.limits.send_buffer),
        )
    }

    /// Read received data.
    pub fn read<D: ReadInto + ?Sized>(
        &mut self,
        id: StreamId,
        buf: &mut D,
    ) -> Result<ReadOutcome, StreamError> {
        self.read_and_end(id, buf, false)
            .map(|(outcome, _)| outcome)
    }

    /// [`read`](Self::read); with `end`, a read that returns the stream's
    /// last bytes (its FIN here) also ends it, as a `Finished` read would,
    /// and says so (`true`): a request's reader then needs no further read
    /// (and its lock) to learn of the end.
    pub fn read_and_end<D: ReadInto + ?Sized>(
        &mut self,
        id: StreamId,
        buf: &mut D,
        end: bool,
    ) -> Result<(ReadOutcome, bool), StreamError> {
        let entry = self.map.get_mut(&id).ok_or(StreamError::UnknownStream)?;
        let recv = entry.recv.as_mut().ok_or(StreamError::WrongDirection)?;
        let before = recv.read_offset();
        let outcome = recv.read_into(buf);
        let ended = end && matches!(outcome, Ok(ReadOutcome::Data(_))) && recv.end_if_drained();
        let consumed = recv.read_offset() - before;
        let window = recv.take_max_stream_data(self.clock).map(|_| recv.window());
        if let Ok(ReadOutcome::Blocked) = outcome {
            entry.readable_signalled = false;
        }
        let done = ended || matches!(outcome, Ok(ReadOutcome::Finished) | Err(_));
        self.after_read(id, consumed, window, done);
        outcome.map(|o| (o, ended)).map_err(StreamError::from)
    }

    /// Up to `max` bytes of stream `id` as [`Bytes`], without a copy where
    /// they are held in a receive buffer (zero-copy receive). `Ok(None)` once
    /// the stream has ended; an empty `Bytes` when nothing is readable yet.
    pub fn read_bytes(&mut self, id: StreamId, max: usize) -> Result<Option<Bytes>, StreamError> {
        let entry = self.map.get_mut(&id).ok_or(StreamError::UnknownStream)?;
        let recv = entry.recv.as_mut().ok_or(StreamError::WrongDirection)?;
        let before = recv.read_offset();
        let result = recv.read_bytes(max);
        let consumed = recv.read_offset() - before;
        let window = recv.take_max_stream_data(self.clock).map(|_| recv.window());
        if matches!(&result, Ok(Some(b)) if b.is_empty()) {
            entry.readable_signalled = false;
        }
        self.after_read(id, consumed, window, matches!(result, Ok(None) | Err(_)));
        result.map_err(StreamError::from)
    }

    /// Readable bytes of stream `id` held as slices of receive buffers.
    pub fn shared_readable(&self, id: StreamId) -> usize {
        let recv = self.map.get(&id).and_then(|e| e.recv.as_ref());
        recv.map_or(0, |r| r.buffer().shared_bytes())
    }

    /// What follows any read of stream `id`: `consumed` bytes back to the
    /// connection's window, a MAX_STREAM_DATA owed when the stream's limit
    /// moved (`window`: its window then), and the stream freed when `done`.
    fn after_read(&mut self, id: StreamId, consumed: u64, window: Option<u64>, done: bool) {
        if let Some(window) = window {
            self.pending.max_stream_data.push(id, ());
            // Room at the connection level for what this stream may now get.
            self.recv_flow.ensure_window(window.saturating_mul(3) / 2);
        }
        self.on_consumed(consumed);
        if done {
            self.maybe_free(id);
            self.release_read(id);
        }
    }

    /// Bytes of some stream were read or discarded: return them to the
    /// connection-level window.
    pub(crate) fn on_consumed(&mut self, n: u64) {
        if n == 0 {
            return;
        }
        self.recv_flow.on_consumed(n);
        if self.recv_flow.take_max_data(self.clock).is_some() {
            self.pending.max_data = true;
        }
    }

    /// The peer may have used the last of its connection credit (its data
    /// reached our MAX_DATA, or it says so with DATA_BLOCKED): what was read
    /// since the last MAX_DATA goes back to it now, however little.
    pub(crate) fn unblock_peer(&mut self) {
        if self.recv_flow.peer_blocked() && self.recv_flow.take_max_data(self.clock).is_some() {
            self.pending.max_data = true;
        }
    }

    /// Tell the peer we no longer want data (STOP_SENDING).
    pub fn stop_sending(&mut self, id: StreamId, code: u64) -> Result<(), StreamError> {
        let entry = self.map.get_mut(&id).ok_or(StreamError::UnknownStream)?;
        let recv = entry.recv.as_mut().ok_or(StreamError::WrongDirection)?;
        let unread = recv
            .buffer()
            .max_offset()
            .saturating_sub(recv.read_offset());
        if recv.stop() {
            entry.stop_code = Some(code);
            self.pending.stop.push(id, ());
        }
        // Data that will never be read must not hold the connection window,
        // and the credit it frees is announced as a read's is: the peer may
        // be waiting for it to send on another stream, which has nothing to
        // read, so no read would announce it.
        self.on_consumed(unread);
        self.maybe_free(id);
        Ok(())
    }

    /// Whether the stream exists and can take more data now.
    pub fn is_writable(&self, id: StreamId) -> bool {
        let Some(entry) = self.map.get(&id) else {
            return false;
        };
        let others = self.budget.reserved - entry.reserved;
        let credit = self.send_flow.credit() > others as u64;
        let used = self.budget.held + others;
        let room = budget::room(self.send_budget(), used, &self.send_queue, entry.priority) > 0
            || entry.reserved > 0;
        entry
            .send
            .as_ref()
            .is_some_and(|s| s.is_writable() && credit && room)
    }

    /// Whether a read would return something other than `Blocked`.
    pub fn is_readable(&self, id: StreamId) -> bool {
        self.map
            .get(&id)
            .and_then(|e| e.recv.as_ref())
            .is_some_and(|r| r.is_readable())
    }

    /// Bytes a read would return now.
    pub fn readable_bytes(&self, id: StreamId) -> usize {
        self.map
            .get(&id)
            .and_then(|e| e.recv.as_ref())
            .map_or(0, |r| r.buffer().readable())
    }

    /// Next event for the application.
    pub fn poll_event(&mut self) -> Option<StreamEvent> {
        self.events.pop_front()
    }

    /// Number of live streams (for tests and metrics).
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True when no stream is live.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Whether any stream or control frame is waiting to be sent.
    pub(crate) fn wants_to_send(&self) -> bool {
        self.has_stream_data() || self.has_control()
    }

    /// Whether stream data (new or to resend) is waiting to be sent.
    pub(crate) fn has_stream_data(&self) -> bool {
        !self.send_queue.is_empty()
    }

    /// Whether a bidirectional stream we opened still waits for the peer's
    /// data (a request without its whole response). A walk of the table:
    /// asked only when a stall timer fires.
    pub(crate) fn awaits_peer(&self) -> bool {
        self.map.iter().any(|(id, e)| {
            id.dir() == Dir::Bi
                && id.initiator() == self.side
                && e.recv
                    .as_ref()
                    .is_some_and(|r| matches!(r.state(), RecvState::Recv | RecvState::SizeKnown))
        })
    }

    fn insert_stream(&mut self, id: StreamId) {
        let ours = id.initiator() == self.side;
        let max_send = match (id.dir(), ours) {
            (Dir::Uni, false) => None,
            (Dir::Bi, false) => Some(self.peer_window[0]),
            (Dir::Bi, true) => Some(self.peer_window[1]),
            (Dir::Uni, true) => Some(self.peer_window[2]),
        };
        let has_recv = id.dir() == Dir::Bi || !ours;
        let window = AutoWindow::new(self.limits.stream_window, self.limits.stream_window_max);
        let send_buffer = self.limits.send_buffer;
        // One visit to the thread's pool for the table, the rings and the box.
        pool::with(|pool| {
            if self.map.capacity() == 0 {
                self.map = pool.take_table();
            }
            let [send_spare, recv_spare] = &mut self.spare;
            let send = max_send
                .map(|max| SendStream::with_storage(max, send_buffer, send_spare.take(0, pool)));
            let recv = has_recv.then(|| RecvStream::with_storage(window, recv_spare.take(1, pool)));
            let entry = pool.entry(StreamEntry {
                send,
                recv,
                queued: false,
                priority: None,
                reset_code: None,
                stop_code: None,
                readable_signalled: false,
                reserved: 0,
                budget_queued: false,
                credit_wait: CreditWait::None,
            });
            self.map.insert(id, entry);
        });
    }

    /// The connection closed: nothing more is sent or received on any stream.
    /// Keep only the receiving halves a read still has something for (data, the
    /// end, a reset); the rest, send buffers and kept storage, goes.
    pub(crate) fn shed(&mut self) {
        self.map.retain(|_, entry| {
            entry.send = None;
            // It will write no more: its waits and reservation go, so that
            // freeing it later takes nothing from the budget reset below.
            self.budget.release(entry);
            let Some(recv) = entry.recv.as_mut() else {
                return false;
            };
            recv.shed();
            recv.is_readable()
                && !matches!(recv.state(), RecvState::DataRead | RecvState::ResetRead)
        });
        self.map.shrink_to_fit();
        self.spare = Default::default();
        self.send_queue = SendQueue::default();
        self.pending = Pending::default();
        self.budget = SendBudget::default();
    }

    /// Forget a stream whose both halves are done; a freed peer stream makes room
    /// for the peer to open another (MAX_STREAMS).
    fn maybe_free(&mut self, id: StreamId) {
        // One probe for the look and the removal.
        let Entry::Occupied(slot) = self.map.entry(id) else {
            return;
        };
        let entry = slot.get();
        let send_done = entry
            .send
            .as_ref()
            .is_none_or(|s| matches!(s.state(), SendState::DataRecvd | SendState::ResetRecvd));
        let recv_done = entry.recv.as_ref().is_none_or(|r| {
            matches!(r.state(), RecvState::DataRead | RecvState::ResetRead)
                || (entry.stop_code.is_some()
                    && matches!(r.state(), RecvState::DataRecvd | RecvState::ResetRecvd))
        });
        if !(send_done && recv_done) || entry.queued {
            return;
        }
        let mut entry = slot.remove();
        self.pending.forget(id);
        self.budget.forget(&entry);
        let window = self.limits.connection_window as usize;
        let over = self.map.is_empty();
        let [send, recv] = &mut self.spare;
        if let Some(s) = entry.send.take() {
            send.keep(s.into_storage(), window, over);
        }
        if let Some(r) = entry.recv.take() {
            recv.keep(r.into_storage(), window, over);
        }
        // One visit to the thread's pool for the box, the rings and the table.
        pool::with(|pool| {
            pool.put_entry(entry);
            if over {
                self.donate_small(pool);
            }
        });
        if id.initiator() != self.side {
            let d = dir_index(id.dir());
            self.closed_remote[d] += 1;
            //= https://www.rfc-editor.org/rfc/rfc9000#section-4.6
            //# an endpoint ... SHOULD send MAX_STREAMS frames to increase the limit as
            //# streams are closed. Batch increases to an eighth of the limit.
            let target = self.closed_remote[d] + self.limits.max_concurrent[d];
            if target - self.max_remote[d] >= (self.limits.max_concurrent[d] / 8).max(1) {
                self.max_remote[d] = target;
                self.pending.max_streams[d] = true;
            }
        }
    }

    fn signal_readable(events: &mut VecDeque<StreamEvent>, entry: &mut StreamEntry, id: StreamId) {
        if !entry.readable_signalled {
            entry.readable_signalled = true;
            events.push_back(StreamEvent::Readable(id));
        }
    }
}
