//! The connection's send budget: the bytes all its streams' send buffers hold
//! (written, not yet acknowledged) and the room set aside for streams' next
//! writes, kept under one bound. A stream refused for want of room waits in a
//! queue and is woken in turn as acknowledgements free room. And the stall
//! clock: since when the connection has had something to send without the
//! peer letting it progress (acknowledging new data or granting credit).

use std::collections::VecDeque;
use std::time::Instant;

use super::sched::{Priority, SendQueue};
use super::{StreamEntry, StreamEvent, Streams};
use crate::stream::SendState;
use crate::types::StreamId;

/// Bytes freed per stream woken from the queue: about what one write takes
/// (a file server's piece), so a few bytes freed do not wake many writers
/// that would each find almost nothing.
const WAKE_QUANTUM: usize = 64 * 1024;

/// Room in the send budget `cap` with `used` of it taken, for a write on a
/// stream of `priority`. RFC 9218 §10: more urgent responses go first, but
/// the scheduler orders only what was written, and less urgent streams'
/// unsent bytes would fill the budget ahead of an urgent one (on a
/// congested path, for rounds of loss recovery). So while a less urgent
/// stream has data queued, a more urgent one may go past the budget by
/// half of it: still a bound. One branch without priorities.
#[inline]
pub(super) fn room(
    cap: usize,
    used: usize,
    queue: &SendQueue,
    priority: Option<Priority>,
) -> usize {
    if queue.levels.is_some() && queue.has_less_urgent(priority) {
        return (cap + cap / 2).saturating_sub(used);
    }
    cap.saturating_sub(used)
}

/// Why a stream's last write took nothing, when the peer must act.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum CreditWait {
    /// Not waiting for the peer.
    None,
    /// For stream credit (MAX_STREAM_DATA).
    Stream,
    /// For connection credit (MAX_DATA).
    Connection,
}

/// What the send buffers hold, who waits for room, and the stall clock.
#[derive(Default)]
pub(super) struct SendBudget {
    /// Bytes held in all send buffers.
    pub(super) held: usize,
    /// Room set aside for streams' next writes (`reserve`), in all.
    pub(super) reserved: usize,
    /// Streams refused for want of room, in the order they were refused.
    waiters: VecDeque<StreamId>,
    /// Bytes freed since the last stream was woken from `waiters`.
    freed: usize,
    /// Streams whose `credit_wait` is not `None`.
    credit_waiters: u32,
    /// Streams whose `budget_queued` is set (`waiters` may also hold streams
    /// that stopped waiting).
    room_waiters: u32,
    /// When the connection, having had something to send without progress
    /// since the send timeout ago, is closed.
    stall_deadline: Option<Instant>,
}

impl SendBudget {
    /// A stream is freed: what it still counted goes with it.
    pub(super) fn forget(&mut self, entry: &StreamEntry) {
        self.reserved -= entry.reserved;
        if let Some(send) = &entry.send {
            self.held -= send.buffered();
        }
        if entry.credit_wait != CreditWait::None {
            self.credit_waiters -= 1;
        }
        if entry.budget_queued {
            self.room_waiters -= 1;
        }
    }

    /// Whether the connection has something to send: bytes held, or a writer
    /// waiting for the peer's credit.
    fn has_work(&self) -> bool {
        self.held > 0 || self.credit_waiters > 0
    }

    /// The stream of `entry` will write no more (finished, reset): it waits
    /// for nothing. Returns its reservation, given back to the budget.
    pub(super) fn release(&mut self, entry: &mut StreamEntry) -> usize {
        let freed = std::mem::take(&mut entry.reserved);
        self.reserved -= freed;
        if entry.credit_wait != CreditWait::None {
            entry.credit_wait = CreditWait::None;
            self.credit_waiters -= 1;
        }
        if std::mem::take(&mut entry.budget_queued) {
            self.room_waiters -= 1;
        }
        freed
    }
}

impl Streams {
    /// The send budget now: twice the congestion window (a long fat path
    /// needs a window in flight and as much again ready), within the
    /// configured bounds.
    pub(crate) fn send_budget(&self) -> usize {
        let twice = usize::try_from(self.cwnd.saturating_mul(2)).unwrap_or(usize::MAX);
        let floor = self.limits.send_budget;
        twice.clamp(floor, self.limits.send_budget_max.max(floor))
    }

    /// Whether some stream's write was refused for want of the peer's credit
    /// or of room in the send budget, and waits for it: then the transport,
    /// not the application, is what left nothing to send. (A stream's own
    /// buffer limit is not counted: unless configured below the budget it
    /// never binds first, and its not-sent limit leaves data to send.)
    pub(crate) fn writes_held_back(&self) -> bool {
        self.budget.credit_waiters > 0 || self.budget.room_waiters > 0
    }

    /// Bytes held in all send buffers, and room reserved for writes.
    pub(crate) fn send_buffered(&self) -> usize {
        self.budget.held + self.budget.reserved
    }

    /// Whether the peer has acknowledged everything written on every
    /// stream: its bytes, and its FIN or RESET_STREAM. A FIN sent on its
    /// own holds no bytes, so the budget alone cannot say it is still out.
    pub(crate) fn all_acked(&self) -> bool {
        self.budget.held == 0
            && self.map.values().all(|entry| {
                entry.send.as_ref().is_none_or(|send| {
                    matches!(
                        send.state(),
                        SendState::Send | SendState::DataRecvd | SendState::ResetRecvd
                    )
                })
            })
    }

    /// A write (or reservation) on `id` took nothing: note what it waits for.
    /// `stream_dry`: it has no stream credit left; `short`: the connection's
    /// credit not spoken for, or the budget's room, was exhausted.
    #[cold]
    pub(super) fn on_refused(&mut self, id: StreamId, stream_dry: bool, short: bool) {
        let Some(entry) = self.map.get_mut(&id) else {
            return;
        };
        let wait = if stream_dry {
            CreditWait::Stream
        } else if self.send_flow.credit() == 0 {
            CreditWait::Connection
        } else {
            CreditWait::None
        };
        if wait != CreditWait::None {
            if entry.credit_wait == CreditWait::None {
                self.budget.credit_waiters += 1;
            }
            entry.credit_wait = wait;
        } else if short && !entry.budget_queued {
            // Room held by us (bytes in flight, other streams' reservations):
            // our own acknowledgements and writes free it.
            entry.budget_queued = true;
            self.budget.room_waiters += 1;
            self.budget.waiters.push_back(id);
        }
        // Otherwise the stream's own limits held it back (unsent bytes,
        // its buffer): sending or acknowledgements wake it, as before.
    }

    /// `id` waits for nothing any more (finished, reset): its reservation
    /// returns to the budget.
    #[cold]
    pub(super) fn stop_waiting(&mut self, id: StreamId) {
        let Some(entry) = self.map.get_mut(&id) else {
            return;
        };
        let freed = self.budget.release(entry);
        self.on_budget_freed(freed);
    }

    /// `freed` held bytes were dropped (a reset).
    pub(super) fn on_cleared(&mut self, freed: usize) {
        self.budget.held -= freed;
        self.on_budget_freed(freed);
    }

    /// `freed` bytes of the budget came free: wake waiting streams in the
    /// order they were refused, one per [`WAKE_QUANTUM`] freed, and all of
    /// them once half the budget is free. The latter also wakes, in the end,
    /// any stream whose turn went to a writer that did not use it.
    #[inline]
    pub(super) fn on_budget_freed(&mut self, freed: usize) {
        // Per acknowledgement: nobody waits, almost always.
        if freed > 0 && !self.budget.waiters.is_empty() {
            self.wake_budget_waiters(freed);
        }
    }

    #[cold]
    fn wake_budget_waiters(&mut self, freed: usize) {
        let cap = self.send_budget();
        let used = self.budget.held + self.budget.reserved;
        if used <= cap / 2 {
            while let Some(id) = self.budget.waiters.pop_front() {
                self.wake_budget_waiter(id);
            }
            self.budget.freed = 0;
            return;
        }
        if used >= cap {
            return;
        }
        let quantum = WAKE_QUANTUM.min(cap / 4).max(1);
        self.budget.freed += freed;
        while self.budget.freed >= quantum {
            let Some(id) = self.budget.waiters.pop_front() else {
                break;
            };
            if self.wake_budget_waiter(id) {
                self.budget.freed -= quantum;
            }
        }
        if self.budget.waiters.is_empty() {
            // Room freed while nobody waits is no one's turn later.
            self.budget.freed = 0;
        }
    }

    /// Whether `id` still waited for room (and is now told to write).
    fn wake_budget_waiter(&mut self, id: StreamId) -> bool {
        let Some(entry) = self.map.get_mut(&id) else {
            return false;
        };
        if !std::mem::take(&mut entry.budget_queued) {
            return false;
        }
        self.budget.room_waiters -= 1;
        self.events.push_back(StreamEvent::Writable(id));
        true
    }

    /// The peer granted stream credit on `id`.
    pub(super) fn on_stream_credit(&mut self, id: StreamId) {
        if let Some(entry) = self.map.get_mut(&id) {
            if entry.credit_wait == CreditWait::Stream {
                entry.credit_wait = CreditWait::None;
                self.budget.credit_waiters -= 1;
            }
        }
        self.on_progress();
    }

    /// The peer granted connection credit: nobody waits for it any more
    /// (those still short when they write again wait again).
    #[cold]
    pub(super) fn on_connection_credit(&mut self) {
        if self.budget.credit_waiters > 0 {
            for entry in self.map.values_mut() {
                if entry.credit_wait == CreditWait::Connection {
                    entry.credit_wait = CreditWait::None;
                    self.budget.credit_waiters -= 1;
                }
            }
        }
        self.on_progress();
    }

    /// The peer acknowledged new data or granted credit: the stall clock
    /// starts again (at the next `observe`, if there is still work).
    pub(super) fn on_progress(&mut self) {
        self.budget.stall_deadline = None;
    }

    /// Start the stall clock at `now` if the connection has work and it is
    /// not running; stop it if there is none. The deadline is worked out
    /// here, once per stall, not whenever the next timeout is asked for.
    pub(super) fn note_stall(&mut self, now: Instant) {
        if !self.budget.has_work() {
            self.budget.stall_deadline = None;
        } else if self.budget.stall_deadline.is_none() {
            self.budget.stall_deadline = self.limits.send_timeout.map(|t| now + t);
        }
    }

    /// When the connection is to be closed for making no progress in
    /// sending: the send timeout after the peer last let it progress, or
    /// after it last had nothing to send; `None` when it has nothing to send.
    pub(crate) fn send_deadline(&self) -> Option<Instant> {
        self.budget
            .stall_deadline
            .filter(|_| self.budget.has_work())
    }
}
