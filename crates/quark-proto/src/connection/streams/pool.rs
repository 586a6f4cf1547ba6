//! Stream storage shared by the connections of a thread (issue #33: memory
//! per connection while serving). A connection that serves one request at a
//! time kept a send ring, a receive ring and a stream table between its
//! requests: ~6 KiB each at 5 000 connections, although only the requests in
//! progress need them. Small bursts now hand their storage here when their
//! last stream closes, and the next stream of any connection on this thread
//! takes it back: memory follows the requests in progress, not the
//! connections, and a request still costs no allocation (the streams'
//! boxed entries come from here too).
//!
//! Per thread, not per endpoint: no lock and no handle to pass to every
//! stream call; a runtime drives an endpoint's connections from its thread.
//! Bounded in count and bytes; what does not fit is freed.

use std::cell::RefCell;
use std::collections::VecDeque;

use super::StreamEntry;
use crate::types::{IdMap, StreamId};

/// Most rings of each kind kept, all connections of the thread together.
const MAX_RINGS: usize = 1024;
/// Most bytes of rings kept.
const MAX_RING_BYTES: usize = 2 << 20;
/// Larger rings are not pooled (a big transfer's; freed as before).
pub(super) const MAX_RING_CAPACITY: usize = 64 * 1024;
/// Most stream tables kept.
const MAX_TABLES: usize = 512;
/// Tables for more streams than this are not pooled.
const MAX_TABLE_CAPACITY: usize = 8;
/// Most stream entries' boxes kept.
const MAX_ENTRIES: usize = 1024;

pub(super) type Table = IdMap<StreamId, Box<StreamEntry>>;

/// What a thread keeps. Reached through [`with`], once per stream opened or
/// freed: a thread-local access costs tens of instructions, so a stream's
/// ring, table and entry moves share one.
#[derive(Default)]
pub(super) struct Pool {
    /// Send rings, receive rings: apart, as in a connection's `Spare`.
    rings: [Vec<VecDeque<u8>>; 2],
    ring_bytes: usize,
    tables: Vec<Table>,
    /// The boxes themselves are what is kept: handed out without allocating.
    #[allow(clippy::vec_box)]
    entries: Vec<Box<StreamEntry>>,
}

thread_local! {
    static POOL: RefCell<Pool> = const {
        RefCell::new(Pool {
            rings: [Vec::new(), Vec::new()],
            ring_bytes: 0,
            tables: Vec::new(),
            entries: Vec::new(),
        })
    };
}

/// Run `f` with this thread's pool (not re-entrant: `f` must not call
/// `with`). While the thread is being torn down, with an empty pool of its
/// own (what it keeps is then freed).
pub(super) fn with<R>(f: impl FnOnce(&mut Pool) -> R) -> R {
    let mut f = Some(f);
    match POOL.try_with(|p| f.take().map(|f| f(&mut p.borrow_mut()))) {
        Ok(Some(r)) => r,
        // `f` ran above only if the pool was there.
        _ => f.map(|f| f(&mut Pool::default())).expect("not run yet"),
    }
}

impl Pool {
    /// A kept ring of `kind` (0 send, 1 receive), if any (empty).
    pub(super) fn take_ring(&mut self, kind: usize) -> Option<VecDeque<u8>> {
        let ring = self.rings[kind].pop()?;
        self.ring_bytes -= ring.capacity();
        Some(ring)
    }

    /// Keep `ring` (emptied) of `kind` for any connection's next stream, if
    /// there is room (else it is freed). A ring too large for the pool comes
    /// back: a connection with large messages keeps its own (`Spare`).
    pub(super) fn put_ring(&mut self, kind: usize, mut ring: VecDeque<u8>) -> Option<VecDeque<u8>> {
        let cap = ring.capacity();
        if cap > MAX_RING_CAPACITY {
            return Some(ring);
        }
        let rings = &mut self.rings[kind];
        if cap > 0 && rings.len() < MAX_RINGS && self.ring_bytes + cap <= MAX_RING_BYTES {
            ring.clear();
            self.ring_bytes += cap;
            rings.push(ring);
        }
        None
    }

    /// A kept (empty) stream table, or a new one.
    pub(super) fn take_table(&mut self) -> Table {
        self.tables.pop().unwrap_or_default()
    }

    /// Keep an emptied stream table, if small and there is room.
    pub(super) fn put_table(&mut self, table: Table) {
        let cap = table.capacity();
        if cap > 0
            && cap <= MAX_TABLE_CAPACITY
            && table.is_empty()
            && self.tables.len() < MAX_TABLES
        {
            self.tables.push(table);
        }
    }

    /// `e` in a box, a kept one if any: a stream costs no allocation.
    pub(super) fn entry(&mut self, e: StreamEntry) -> Box<StreamEntry> {
        match self.entries.pop() {
            Some(mut b) => {
                *b = e;
                b
            }
            None => Box::new(e),
        }
    }

    /// Keep a freed stream's box (its halves already taken out), if there is
    /// room.
    pub(super) fn put_entry(&mut self, b: Box<StreamEntry>) {
        if self.entries.len() < MAX_ENTRIES {
            self.entries.push(b);
        }
    }
}

/// Bytes this thread's pool holds (rings and an estimate of the tables).
pub fn stream_pool_bytes() -> usize {
    let entry = std::mem::size_of::<(StreamId, Box<StreamEntry>)>() + 1;
    POOL.with_borrow(|p| {
        p.ring_bytes
            + (p.rings[0].capacity() + p.rings[1].capacity()) * std::mem::size_of::<VecDeque<u8>>()
            + p.tables.iter().map(|t| t.capacity() * entry).sum::<usize>()
            + p.tables.capacity() * std::mem::size_of::<Table>()
            + p.entries.len() * std::mem::size_of::<StreamEntry>()
            + p.entries.capacity() * std::mem::size_of::<Box<StreamEntry>>()
    })
}

/// Free everything this thread's pool holds (a runtime's periodic trim, or
/// a test that measures the heap).
pub fn release_stream_pool() {
    POOL.with_borrow_mut(|p| *p = Pool::default());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pool_is_bounded() {
        release_stream_pool();
        with(|p| {
            for _ in 0..2 * MAX_RINGS {
                assert!(p.put_ring(0, VecDeque::with_capacity(4096)).is_none());
            }
            assert!(p.rings[0].len() <= MAX_RINGS);
            assert!(p.ring_bytes <= MAX_RING_BYTES);
            // A large ring is handed back for its connection to keep.
            let big = VecDeque::with_capacity(MAX_RING_CAPACITY + 1);
            assert!(p.put_ring(1, big).is_some());
            assert!(p.take_ring(1).is_none(), "the kinds are apart");
            let ring = p.take_ring(0).expect("a kept send ring");
            assert!(ring.is_empty() && ring.capacity() >= 4096);
            for _ in 0..2 * MAX_TABLES {
                let mut t = Table::default();
                t.reserve(1);
                p.put_table(t);
            }
            assert!(p.tables.len() <= MAX_TABLES);
        });
        assert!(stream_pool_bytes() <= 3 << 20);
        release_stream_pool();
        assert_eq!(stream_pool_bytes(), 0);
    }
}
