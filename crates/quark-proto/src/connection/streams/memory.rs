//! What a connection's streams hold in memory, for budgets: the part of a
//! connection's memory a peer can make grow.

use std::collections::VecDeque;

use super::{StreamEntry, StreamEvent, Streams, pool, spare};
use crate::types::StreamId;

/// A stream's entry in the map, its two halves' fixed parts included (an
/// estimate: the map's own slack is not counted).
const ENTRY: usize = 320;

impl Streams {
    /// Bytes of heap the streams hold: entries, receive reassembly with its
    /// storage, data held for sending, and the rings kept for new streams.
    /// O(streams): callers ask now and then, not per packet.
    pub(crate) fn memory(&self) -> usize {
        let streams: usize = self
            .map
            .values()
            .map(|e| {
                ENTRY
                    + e.recv.as_ref().map_or(0, |r| r.buffer().allocated())
                    + e.send.as_ref().map_or(0, |s| s.buffered())
            })
            .sum();
        streams + self.spare.iter().map(|s| s.bytes()).sum::<usize>()
    }
}

impl Streams {
    /// Heap held, as allocated: the map's table (with its slack), the
    /// entries' buffers, the kept rings and the queues. For the memory
    /// breakdown; O(streams).
    pub(crate) fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        let table = self.map.capacity() * (size_of::<(StreamId, Box<StreamEntry>)>() + 1)
            + self.map.len() * size_of::<StreamEntry>();
        let buffers: usize = self
            .map
            .values()
            .map(|e| {
                e.recv.as_ref().map_or(0, |r| r.buffer().allocated())
                    + e.send.as_ref().map_or(0, |s| s.buffered())
            })
            .sum();
        let spare: usize = self.spare.iter().map(|s| s.bytes() + s.stack_bytes()).sum();
        let queues = (self.accept_queue[0].capacity()
            + self.accept_queue[1].capacity()
            + self.send_queue.capacity())
            * size_of::<StreamId>()
            + self.events.capacity() * size_of::<StreamEvent>();
        table + buffers + spare + queues + self.pending.heap_bytes()
    }

    /// With no stream open, give back what only a busy connection needs:
    /// the map's table, the kept rings, the queues' storage.
    pub(crate) fn shrink_idle(&mut self) {
        if !self.map.is_empty() {
            return;
        }
        pool::with(|pool| pool.put_table(std::mem::take(&mut self.map)));
        for s in &mut self.spare {
            s.clear();
        }
        for q in &mut self.accept_queue {
            if q.is_empty() {
                *q = VecDeque::new();
            }
        }
        self.send_queue.shrink_idle();
        self.pending.shrink_idle();
        if self.events.is_empty() {
            self.events = VecDeque::new();
        }
    }
}

impl Streams {
    /// The last stream closed: after a small burst, the kept rings and the
    /// table go to the thread's pool (`pool.rs`) until the next stream.
    pub(super) fn donate_small(&mut self, pool: &mut pool::Pool) {
        let [send, recv] = &mut self.spare;
        let both = send.donate_small(0, pool) & recv.donate_small(1, pool);
        if both {
            pool.put_table(std::mem::take(&mut self.map));
        }
    }
}

impl Streams {
    /// A request read to its end while its answer is still being sent: its
    /// receive ring goes to the thread's pool now, not when the answer is
    /// acknowledged (issue #33). Only with few streams open, as for
    /// `donate_small`: a burst of large uploads keeps its rings here.
    pub(super) fn release_read(&mut self, id: StreamId) {
        if self.map.len() > spare::MAX_SPARE {
            return;
        }
        if let Some(recv) = self.map.get_mut(&id).and_then(|e| e.recv.as_mut())
            && recv.storage_capacity() <= pool::MAX_RING_CAPACITY
        {
            let ring = recv.take_storage();
            if ring.capacity() > 0 {
                pool::with(|pool| pool.put_ring(1, ring));
            }
        }
    }
}
