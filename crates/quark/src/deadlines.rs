//! The connections' next deadlines, earliest first, so a driver round finds the
//! due timers and the next wake-up without visiting every connection: a
//! server with 10 000 idle connections pays for the ones whose time has come.
//!
//! A min-heap of `(deadline, connection)`, with at most one live entry per
//! connection: its entry's time (`ConnEntry::queued`) is at or before the
//! connection's deadline. A deadline that moves later (the usual case: every
//! request pushes the loss or idle timer back) pushes nothing; when the
//! entry surfaces, it goes back in at the deadline then in force. Only a
//! deadline that moves earlier is pushed, leaving the older entry stale,
//! dropped when it surfaces. At 5 000 connections with one request in flight
//! each, pushing every change cost two pushes and two pops of a 10 000-entry
//! heap per request, each a walk over cold cache lines (issue #33).
//! When stale entries outnumber the live ones, the heap is rebuilt.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Instant;

use quark_proto::{ConnectionHandle, IdMap};

use crate::counters::driver as counters;
use crate::shared::ConnEntry;

#[derive(Default)]
pub(crate) struct Deadlines {
    heap: BinaryHeap<Reverse<(Instant, ConnectionHandle)>>,
    /// Push every change, as before the lazy entries (a measurement switch:
    /// `Endpoint::set_lazy_deadlines(false)`).
    pub(crate) eager: bool,
}

/// What a surfaced entry `(at, h)` is now.
enum Surfaced {
    /// Superseded by an earlier entry, or its connection is gone.
    Stale,
    /// `h`'s deadline, at `at`.
    Due,
    /// `h`'s deadline moved later (or went): re-queued, or dropped.
    Moved,
}

impl Deadlines {
    /// `h`'s deadline is now `at` (call after setting its entry's `timeout`).
    pub(crate) fn set(
        &mut self,
        conns: &mut IdMap<ConnectionHandle, ConnEntry>,
        h: ConnectionHandle,
        at: Instant,
    ) {
        let Some(e) = conns.get_mut(&h) else {
            return;
        };
        if !self.eager && e.queued.is_some_and(|q| q <= at) {
            // Its entry surfaces first and is re-queued then.
            return;
        }
        e.queued = Some(at);
        self.push(at, h);
        if self.heap.len() > 2 * conns.len() + 64 {
            self.heap = conns
                .iter_mut()
                .filter_map(|(&h, e)| {
                    e.queued = e.timeout;
                    e.timeout.map(|t| Reverse((t, h)))
                })
                .collect();
        }
    }

    fn push(&mut self, at: Instant, h: ConnectionHandle) {
        counters::add(&counters::HEAP_PUSHES, 1);
        self.heap.push(Reverse((at, h)));
    }

    /// The top entry `(at, h)`, popped: whether it was `h`'s and its
    /// deadline is `at`; a deadline moved later is pushed back in.
    fn surface(
        &mut self,
        conns: &mut IdMap<ConnectionHandle, ConnEntry>,
        at: Instant,
        h: ConnectionHandle,
    ) -> Surfaced {
        self.heap.pop();
        let Some(e) = conns.get_mut(&h) else {
            return Surfaced::Stale;
        };
        if e.queued != Some(at) {
            return Surfaced::Stale;
        }
        match e.timeout {
            Some(t) if t <= at => Surfaced::Due,
            Some(t) => {
                e.queued = Some(t);
                self.push(t, h);
                Surfaced::Moved
            }
            None => {
                e.queued = None;
                Surfaced::Moved
            }
        }
    }

    /// Adds the connections whose deadline is at or before `now` to `due`, each
    /// once.
    pub(crate) fn take_due(
        &mut self,
        conns: &mut IdMap<ConnectionHandle, ConnEntry>,
        now: Instant,
        due: &mut Vec<ConnectionHandle>,
    ) {
        let before = due.len();
        while let Some(&Reverse((at, h))) = self.heap.peek() {
            if at > now {
                break;
            }
            if let Surfaced::Due = self.surface(conns, at, h) {
                // Fired: the next deadline gets a new entry (`set`).
                if let Some(e) = conns.get_mut(&h) {
                    e.queued = None;
                }
                due.push(h);
            }
        }
        if due.len() > before + 1 {
            due.sort_unstable();
            due.dedup();
        }
    }

    /// The earliest live deadline.
    pub(crate) fn next(
        &mut self,
        conns: &mut IdMap<ConnectionHandle, ConnEntry>,
    ) -> Option<Instant> {
        while let Some(&Reverse((at, h))) = self.heap.peek() {
            let live = conns
                .get(&h)
                .is_some_and(|e| e.queued == Some(at) && e.timeout.is_some_and(|t| t <= at));
            if live {
                return Some(at);
            }
            self.surface(conns, at, h);
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
        // Connection 1 moves later, 0 earlier (and back, and again): the
        // old entries are stale or wait to be re-queued.
        set(&mut d, &mut c, 1, ms(30));
        set(&mut d, &mut c, 0, ms(2));
        set(&mut d, &mut c, 0, ms(3));
        set(&mut d, &mut c, 0, ms(2));
        assert_eq!(d.next(&mut c), Some(ms(2)));
        let mut due = Vec::new();
        d.take_due(&mut c, ms(10), &mut due);
        assert_eq!(
            due,
            [ConnectionHandle(0)],
            "1's old 5 ms and 0's old 10 ms are stale"
        );
        c.get_mut(&ConnectionHandle(0)).unwrap().timeout = None; // fired
        assert_eq!(d.next(&mut c), Some(ms(20)));
        // A removed connection's deadline is gone with it.
        c.remove(&ConnectionHandle(2));
        assert_eq!(d.next(&mut c), Some(ms(30)));
        due.clear();
        d.take_due(&mut c, ms(100), &mut due);
        assert_eq!(due, [ConnectionHandle(1)]);
        assert_eq!(d.next(&mut c), None);
    }

    #[test]
    fn deadlines_moving_later_push_nothing() {
        let t0 = Instant::now();
        let (mut d, mut c) = (Deadlines::default(), conns(10));
        // Every connection pushes its deadline later a thousand times (a
        // request's loss timer, then the idle timer, then the next one).
        for round in 0..1000u64 {
            for h in 0..10 {
                set(
                    &mut d,
                    &mut c,
                    h,
                    t0 + Duration::from_micros(round * 10 + h as u64),
                );
            }
        }
        assert_eq!(d.len(), 10, "one entry per connection");
        assert_eq!(d.next(&mut c), Some(t0 + Duration::from_micros(9990)));
        assert_eq!(d.len(), 10, "each re-queued once at its deadline");
    }

    #[test]
    fn stale_entries_stay_bounded() {
        let t0 = Instant::now();
        let (mut d, mut c) = (Deadlines::default(), conns(10));
        // Every connection pulls its deadline earlier a thousand times.
        for round in (0..1000u64).rev() {
            for h in 0..10 {
                set(
                    &mut d,
                    &mut c,
                    h,
                    t0 + Duration::from_micros(round * 10 + h as u64),
                );
                assert!(d.len() <= 2 * 10 + 64 + 1, "{} entries", d.len());
            }
        }
        assert_eq!(d.next(&mut c), Some(t0));
    }

    /// Against a scan of every connection: random deadlines set, cleared,
    /// fired and removed, the heap finds the same due set and next deadline.
    #[test]
    fn agrees_with_a_scan() {
        let t0 = Instant::now();
        let us = |n: u64| t0 + Duration::from_micros(n);
        let (mut d, mut c) = (Deadlines::default(), conns(50));
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut rand = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let mut now = 0;
        for _ in 0..20_000 {
            let h = rand(50) as usize;
            match rand(10) {
                0..=5 if c.contains_key(&ConnectionHandle(h)) => {
                    set(&mut d, &mut c, h, us(now + rand(2000)))
                }
                6 if c.contains_key(&ConnectionHandle(h)) => {
                    c.get_mut(&ConnectionHandle(h)).unwrap().timeout = None
                }
                7 => {
                    c.remove(&ConnectionHandle(h));
                }
                8 => {
                    c.entry(ConnectionHandle(h))
                        .or_insert_with(|| ConnEntry::new(false));
                }
                _ => {
                    now += rand(300);
                    let mut want: Vec<_> = c
                        .iter()
                        .filter(|(_, e)| e.timeout.is_some_and(|t| t <= us(now)))
                        .map(|(&h, _)| h)
                        .collect();
                    want.sort_unstable();
                    let mut due = Vec::new();
                    d.take_due(&mut c, us(now), &mut due);
                    due.sort_unstable();
                    assert_eq!(due, want);
                    for h in due {
                        c.get_mut(&h).unwrap().timeout = None; // fired
                    }
                    let next = c.values().filter_map(|e| e.timeout).min();
                    assert_eq!(d.next(&mut c), next);
                }
            }
        }
    }
}
