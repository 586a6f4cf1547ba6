//! The connections' next deadlines, earliest first, so a driver round finds the
//! due timers and the next wake-up without visiting every connection: a
//! server with 10 000 idle connections pays for the ones whose time has come.
//!
//! A min-heap of `(deadline, connection)`. Each time a connection's deadline
//! changes, the new one is pushed; the old entry stays until it surfaces and is
//! then dropped as stale (it no longer matches the connection's deadline).
//! When stale entries outnumber the live ones, the heap is rebuilt.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Instant;

use quark_proto::{ConnectionHandle, IdMap};

use crate::shared::ConnEntry;

#[derive(Default)]
pub(crate) struct Deadlines {
    heap: BinaryHeap<Reverse<(Instant, ConnectionHandle)>>,
}

/// Whether `(at, h)` is `h`'s current deadline.
fn current(conns: &IdMap<ConnectionHandle, ConnEntry>, at: Instant, h: ConnectionHandle) -> bool {
    conns.get(&h).is_some_and(|e| e.timeout == Some(at))
}

impl Deadlines {
    /// `h`'s deadline is now `at` (call after setting its entry's `timeout`).
    pub(crate) fn set(
        &mut self,
        conns: &IdMap<ConnectionHandle, ConnEntry>,
        h: ConnectionHandle,
        at: Instant,
    ) {
        self.heap.push(Reverse((at, h)));
        if self.heap.len() > 2 * conns.len() + 64 {
            self.heap = conns
                .iter()
                .filter_map(|(&h, e)| e.timeout.map(|t| Reverse((t, h))))
                .collect();
        }
    }

    /// Adds the connections whose deadline is at or before `now` to `due`, each
    /// once (a deadline set twice is in the heap twice).
    pub(crate) fn take_due(
        &mut self,
        conns: &IdMap<ConnectionHandle, ConnEntry>,
        now: Instant,
        due: &mut Vec<ConnectionHandle>,
    ) {
        let before = due.len();
        while let Some(&Reverse((at, h))) = self.heap.peek() {
            if at > now {
                break;
            }
            self.heap.pop();
            if current(conns, at, h) {
                due.push(h);
            }
        }
        if due.len() > before + 1 {
            due.sort_unstable();
            due.dedup();
        }
    }

    /// The earliest live deadline.
    pub(crate) fn next(&mut self, conns: &IdMap<ConnectionHandle, ConnEntry>) -> Option<Instant> {
        while let Some(&Reverse((at, h))) = self.heap.peek() {
            if current(conns, at, h) {
                return Some(at);
            }
            self.heap.pop();
        }
        None
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.heap.len()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn conns(n: usize) -> IdMap<ConnectionHandle, ConnEntry> {
        (0..n)
            .map(|i| (ConnectionHandle(i), ConnEntry::new(false)))
            .collect()
    }

    fn set(d: &mut Deadlines, c: &mut IdMap<ConnectionHandle, ConnEntry>, h: usize, at: Instant) {
        let h = ConnectionHandle(h);
        c.get_mut(&h).unwrap().timeout = Some(at);
        d.set(c, h, at);
    }

    #[test]
    fn due_and_next_follow_the_latest_deadlines() {
        let t0 = Instant::now();
        let ms = |n: u64| t0 + Duration::from_millis(n);
        let (mut d, mut c) = (Deadlines::default(), conns(3));
        set(&mut d, &mut c, 0, ms(10));
        set(&mut d, &mut c, 1, ms(5));
        set(&mut d, &mut c, 2, ms(20));
        // Connection 1 moves later, 0 earlier (and back, and again: twice in
        // the heap): the old entries are stale.
        set(&mut d, &mut c, 1, ms(30));
        set(&mut d, &mut c, 0, ms(2));
        set(&mut d, &mut c, 0, ms(3));
        set(&mut d, &mut c, 0, ms(2));
        assert_eq!(d.next(&c), Some(ms(2)));
        let mut due = Vec::new();
        d.take_due(&c, ms(10), &mut due);
        assert_eq!(
            due,
            [ConnectionHandle(0)],
            "1's old 5 ms and 0's old 10 ms are stale"
        );
        c.get_mut(&ConnectionHandle(0)).unwrap().timeout = None; // fired
        assert_eq!(d.next(&c), Some(ms(20)));
        // A removed connection's deadline is gone with it.
        c.remove(&ConnectionHandle(2));
        assert_eq!(d.next(&c), Some(ms(30)));
        due.clear();
        d.take_due(&c, ms(100), &mut due);
        assert_eq!(due, [ConnectionHandle(1)]);
        assert_eq!(d.next(&c), None);
    }

    #[test]
    fn stale_entries_stay_bounded() {
        let t0 = Instant::now();
        let (mut d, mut c) = (Deadlines::default(), conns(10));
        // Every connection pushes its deadline later a thousand times.
        for round in 0..1000u64 {
            for h in 0..10 {
                set(
                    &mut d,
                    &mut c,
                    h,
                    t0 + Duration::from_micros(round * 10 + h as u64),
                );
            }
            assert!(d.len() <= 2 * 10 + 64 + 1, "{} entries", d.len());
        }
        assert_eq!(d.next(&c), Some(t0 + Duration::from_micros(9990)));
    }
}
