//! Stream control frames waiting to be sent. The per-stream kinds are queues
//! keyed by stream: a stream is in each at most once, however often its frame
//! is triggered again or lost, and a freed stream leaves them. So no queue
//! holds more entries than there are live streams, whatever the peer does.

use std::collections::VecDeque;
use std::collections::hash_map::Entry;

use super::IdMap;
use crate::types::StreamId;

/// Streams owed one kind of frame, first queued first sent, each at most once.
/// `V` is what the frame carries beyond the stream ID when it is not read from
/// the stream at send time (STREAM_DATA_BLOCKED's limit); queuing a stream that
/// is already queued replaces it. Boxed on first use and given back by
/// `shrink_idle` when empty: four of these sat in every idle connection
/// (~70 bytes each; issue #30).
pub(super) struct StreamQueue<V> {
    inner: Option<Box<Queue<V>>>,
}

struct Queue<V> {
    /// Queuing order. May still hold streams forgotten since; `members` says
    /// which entries count.
    order: VecDeque<StreamId>,
    members: IdMap<V>,
}

impl<V> Default for StreamQueue<V> {
    fn default() -> Self {
        StreamQueue { inner: None }
    }
}

impl<V: Copy> StreamQueue<V> {
    /// Queue `id` unless it is queued already (then its value becomes `value`).
    pub(super) fn push(&mut self, id: StreamId, value: V) {
        let q = self.inner.get_or_insert_with(|| {
            Box::new(Queue {
                order: VecDeque::new(),
                members: IdMap::default(),
            })
        });
        match q.members.entry(id) {
            Entry::Occupied(mut e) => *e.get_mut() = value,
            Entry::Vacant(e) => {
                e.insert(value);
                q.order.push_back(id);
            }
        }
    }

    /// The first stream queued, with its value.
    pub(super) fn front(&mut self) -> Option<(StreamId, V)> {
        let q = self.inner.as_mut()?;
        while let Some(&id) = q.order.front() {
            if let Some(&value) = q.members.get(&id) {
                return Some((id, value));
            }
            q.order.pop_front(); // forgotten
        }
        None
    }

    /// Take the stream `front` returned off the queue.
    pub(super) fn pop_front(&mut self) {
        if let Some(q) = self.inner.as_mut()
            && let Some(id) = q.order.pop_front()
        {
            q.members.remove(&id);
        }
    }

    /// `id`'s stream is gone: it is owed nothing any more.
    pub(super) fn forget(&mut self, id: StreamId) {
        let Some(q) = self.inner.as_mut() else {
            return;
        };
        // Most streams are freed with nothing queued: skip the hashing.
        if q.members.is_empty() || q.members.remove(&id).is_none() {
            return;
        }
        // Forgotten entries stay in `order` until they reach the front; sweep
        // them once they outnumber the live ones (amortised O(1) per forget).
        if q.order.len() > 2 * q.members.len() + 16 {
            let members = &q.members;
            q.order.retain(|id| members.contains_key(id));
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.inner.as_ref().is_none_or(|q| q.members.is_empty())
    }

    /// Idle: give the storage back if nothing is queued.
    pub(super) fn shrink_idle(&mut self) {
        if self.is_empty() {
            self.inner = None;
        }
    }

    /// Heap held (for the memory breakdown).
    pub(super) fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        self.inner.as_ref().map_or(0, |q| {
            size_of::<Queue<V>>()
                + q.order.capacity() * size_of::<StreamId>()
                + q.members.capacity() * (size_of::<(StreamId, V)>() + 1)
        })
    }

    /// Streams queued, and the length of the queuing order (forgotten
    /// entries included).
    #[cfg(any(test, feature = "testing"))]
    pub(super) fn lengths(&self) -> (usize, usize) {
        self.inner
            .as_ref()
            .map_or((0, 0), |q| (q.members.len(), q.order.len()))
    }
}

/// Control frames waiting to be sent.
#[derive(Default)]
pub(super) struct Pending {
    pub(super) max_data: bool,
    /// MAX_STREAM_DATA, carrying the stream's limit when sent.
    pub(super) max_stream_data: StreamQueue<()>,
    pub(super) max_streams: [bool; 2],
    pub(super) streams_blocked: [Option<u64>; 2],
    /// STREAM_DATA_BLOCKED at the limit held.
    pub(super) stream_data_blocked: StreamQueue<u64>,
    pub(super) data_blocked: Option<u64>,
    /// RESET_STREAM, with the code and final size of the stream when sent.
    pub(super) reset: StreamQueue<()>,
    /// STOP_SENDING, with the stream's code when sent.
    pub(super) stop: StreamQueue<()>,
}

impl Pending {
    /// Whether no control frame at all is waiting.
    pub(super) fn is_idle(&self) -> bool {
        !self.max_data
            && self.max_streams == [false; 2]
            && self.streams_blocked == [None; 2]
            && self.data_blocked.is_none()
            && self.max_stream_data.is_empty()
            && self.stream_data_blocked.is_empty()
            && self.reset.is_empty()
            && self.stop.is_empty()
    }

    /// Idle: the empty queues give their storage back.
    pub(super) fn shrink_idle(&mut self) {
        self.max_stream_data.shrink_idle();
        self.stream_data_blocked.shrink_idle();
        self.reset.shrink_idle();
        self.stop.shrink_idle();
    }

    /// Heap held by the queues (for the memory breakdown).
    pub(super) fn heap_bytes(&self) -> usize {
        self.max_stream_data.heap_bytes()
            + self.stream_data_blocked.heap_bytes()
            + self.reset.heap_bytes()
            + self.stop.heap_bytes()
    }

    /// A stream was freed: drop what it was owed (a freed stream needs no more
    /// frames: its credit, reset and stop request are moot).
    pub(super) fn forget(&mut self, id: StreamId) {
        self.max_stream_data.forget(id);
        self.stream_data_blocked.forget(id);
        self.reset.forget(id);
        self.stop.forget(id);
    }

    /// Each per-stream queue's streams queued and order length, named.
    #[cfg(feature = "testing")]
    pub(super) fn lengths(&self, out: &mut Vec<(&'static str, usize)>) {
        for (names, q) in [
            (
                ["max_stream_data", "max_stream_data_order"],
                self.max_stream_data.lengths(),
            ),
            (
                ["stream_data_blocked", "stream_data_blocked_order"],
                self.stream_data_blocked.lengths(),
            ),
            (["reset_stream", "reset_stream_order"], self.reset.lengths()),
            (["stop_sending", "stop_sending_order"], self.stop.lengths()),
        ] {
            out.push((names[0], q.0));
            out.push((names[1], q.1));
        }
    }
}

impl super::Streams {
    /// The length of every queue a peer's frames can add to (testing the
    /// bounds): `(name, entries)`.
    #[cfg(feature = "testing")]
    pub(crate) fn queue_lengths(&self, out: &mut Vec<(&'static str, usize)>) {
        out.push(("streams", self.map.len()));
        out.push(("stream_events", self.events.len()));
        out.push(("accept_bidi", self.accept_queue[0].len()));
        out.push(("accept_uni", self.accept_queue[1].len()));
        out.push(("send_queue", self.send_queue.len()));
        self.pending.lengths(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Dir, Side};

    fn id(i: u64) -> StreamId {
        StreamId::new(Side::Client, Dir::Bi, i)
    }

    #[test]
    fn a_stream_is_queued_once_with_its_latest_value() {
        let mut q = StreamQueue::default();
        for limit in 0..100_000u64 {
            q.push(id(limit % 3), limit);
        }
        assert_eq!(q.lengths(), (3, 3));
        let mut out = Vec::new();
        while let Some(entry) = q.front() {
            out.push(entry);
            q.pop_front();
        }
        assert_eq!(out, vec![(id(0), 99_999), (id(1), 99_997), (id(2), 99_998)]);
        assert!(q.is_empty());
    }

    #[test]
    fn forgotten_streams_leave_the_queue() {
        let mut q = StreamQueue::default();
        // Streams queued and freed one after another, never sent: the order
        // must not keep their IDs.
        for i in 0..100_000 {
            q.push(id(i), ());
            if i % 10 != 0 {
                q.forget(id(i));
            }
        }
        let (live, order) = q.lengths();
        assert_eq!(live, 10_000);
        assert!(
            order <= 2 * live + 16 + 1,
            "{order} entries for {live} streams"
        );
        // Only the live ones come out, in order.
        let mut n = 0;
        while let Some((got, ())) = q.front() {
            assert_eq!(got, id(n * 10));
            q.pop_front();
            n += 1;
        }
        assert_eq!(n, 10_000);
    }
}
