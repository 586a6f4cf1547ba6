//! Spurious-loss detection and congestion undo.
//!
//! A packet declared lost may still arrive (it was only reordered or delayed). Its
//! data was already queued again, which is harmless; but the congestion window
//! was cut for nothing. Each space remembers its recently lost packets
//! ([`LostHistory`], bounded in count and age); an ACK that covers one reveals a
//! spurious loss. [`Episodes`] mirrors the controllers' recovery periods (RFC 9002
//! §7.3.2, the same rule they apply) and counts the losses of the current one:
//! when every loss of the episode that cut the window turns out spurious, the cut
//! is undone with [`crate::cc::Controller::on_spurious_congestion`].
//
//= https://www.rfc-editor.org/rfc/rfc9002#section-7.3.2
//# The recovery period aims to limit congestion window reduction to once
//# per round trip.  Therefore, during a recovery period, the congestion
//# window does not change in response to new losses or increases in the
//# ECN-CE count.

use std::collections::VecDeque;
use std::time::Instant;

/// Lost packets remembered per space; older ones are forgotten first (their
/// episode then simply cannot be undone).
pub(super) const MAX_LOST_RECORDS: usize = 512;

/// A packet declared lost, remembered in case it is acknowledged later.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct LostRecord {
    pub(super) pn: u64,
    pub(super) time_sent: Instant,
    pub(super) lost_at: Instant,
    /// The congestion episode its loss counted toward (0: none that can be undone).
    pub(super) episode: u32,
}

/// Recently lost packets of one space, in packet-number order.
///
/// Packets are declared lost in increasing packet-number order (the thresholds only
/// ever reach further), so appending keeps the order and the front is the oldest.
#[derive(Debug, Default)]
pub(super) struct LostHistory {
    records: VecDeque<LostRecord>,
}

impl LostHistory {
    pub(super) fn heap_bytes(&self) -> usize {
        self.records.capacity() * std::mem::size_of::<LostRecord>()
    }

    /// Free the storage when empty (an idle connection).
    pub(super) fn shrink_idle(&mut self) {
        if self.records.is_empty() {
            self.records = VecDeque::new();
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    pub(super) fn push(&mut self, record: LostRecord) {
        if self.records.back().is_some_and(|b| b.pn >= record.pn) {
            debug_assert!(false, "lost packets out of order");
            return;
        }
        if self.records.len() == MAX_LOST_RECORDS {
            self.records.pop_front();
        }
        self.records.push_back(record);
    }

    /// Forget packets declared lost before `before`: they were really lost.
    pub(super) fn expire(&mut self, before: Instant) {
        while self.records.front().is_some_and(|r| r.lost_at < before) {
            self.records.pop_front();
        }
    }

    /// Move the records for packet numbers `lo..=hi` to `out`.
    pub(super) fn take_range(&mut self, lo: u64, hi: u64, out: &mut Vec<LostRecord>) {
        let start = self.records.partition_point(|r| r.pn < lo);
        let end = start
            + self
                .records
                .range(start..)
                .take_while(|r| r.pn <= hi)
                .count();
        if start < end {
            out.extend(self.records.drain(start..end));
        }
    }

    #[cfg(test)]
    pub(super) fn clear(&mut self) {
        self.records.clear();
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.records.len()
    }
}

/// One congestion episode: a recovery period and the losses counted toward it.
#[derive(Clone, Copy, Debug)]
struct Episode {
    id: u32,
    /// When it began (the controllers' congestion_recovery_start_time).
    start: Instant,
    /// The episode it replaced began here (restored when this one is undone).
    prev_start: Option<Instant>,
    /// Losses counted toward it that have not been found spurious.
    outstanding: u32,
    /// Only losses signalled it: no ECN-CE, no persistent congestion.
    undoable: bool,
}

/// Mirror of the controllers' recovery periods (RFC 9002 Appendix B.5/B.6).
#[derive(Debug, Default)]
pub(super) struct Episodes {
    current: Option<Episode>,
    last_id: u32,
}

impl Episodes {
    /// A congestion signal for packets sent up to `sent_time`, with `lost` in-flight
    /// losses. Returns the episode id to tag those losses with (0: not undoable).
    pub(super) fn on_signal(
        &mut self,
        now: Instant,
        sent_time: Instant,
        lost: u32,
        ecn: bool,
        persistent: bool,
    ) -> u32 {
        //= https://www.rfc-editor.org/rfc/rfc9002#appendix-B.6
        //# // No reaction if already in a recovery period.
        //# if (InCongestionRecovery(sent_time)):
        //#   return
        let id = match &mut self.current {
            Some(e) if sent_time <= e.start => {
                e.outstanding = e.outstanding.saturating_add(lost);
                // Real congestion inside the episode: the cut stands.
                e.undoable &= !ecn && !persistent;
                e.id
            }
            _ => {
                self.last_id = self.last_id.wrapping_add(1).max(1);
                self.current = Some(Episode {
                    id: self.last_id,
                    start: now,
                    prev_start: self.current.map(|e| e.start),
                    outstanding: lost,
                    undoable: lost > 0 && !ecn && !persistent,
                });
                self.last_id
            }
        };
        //= https://www.rfc-editor.org/rfc/rfc9002#appendix-B.8
        //# if (InPersistentCongestion(pc_lost)):
        //#   congestion_window = kMinimumWindow
        //#   congestion_recovery_start_time = 0
        if persistent {
            self.current = None;
            return 0;
        }
        id
    }

    /// A lost packet counted toward `episode` was acknowledged. True when that was
    /// the last loss of the current, undoable episode: the caller undoes the cut.
    pub(super) fn on_spurious(&mut self, episode: u32) -> bool {
        let Some(e) = self
            .current
            .as_mut()
            .filter(|e| e.id == episode && episode != 0)
        else {
            return false;
        };
        e.outstanding = e.outstanding.saturating_sub(1);
        if e.outstanding > 0 || !e.undoable {
            return false;
        }
        // The controller goes back to the recovery period it was in before.
        self.current = e.prev_start.map(|start| Episode {
            id: 0,
            start,
            prev_start: None,
            outstanding: 0,
            undoable: false,
        });
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recovery::test_epoch;
    use std::time::Duration;

    const MS: Duration = Duration::from_millis(1);

    fn rec(pn: u64, t: Instant) -> LostRecord {
        LostRecord {
            pn,
            time_sent: t,
            lost_at: t,
            episode: 1,
        }
    }

    #[test]
    fn history_finds_ranges_expires_and_is_bounded() {
        let t0 = test_epoch();
        let mut h = LostHistory::default();
        for pn in [3, 5, 9, 12] {
            h.push(rec(pn, t0 + pn as u32 * MS));
        }
        let mut out = Vec::new();
        h.take_range(4, 9, &mut out);
        assert_eq!(out.iter().map(|r| r.pn).collect::<Vec<_>>(), vec![5, 9]);
        h.take_range(6, 8, &mut out);
        assert_eq!(out.len(), 2);
        h.expire(t0 + 4 * MS);
        assert_eq!(h.len(), 1, "3 expired, 12 kept");
        for pn in 100..100 + 2 * MAX_LOST_RECORDS as u64 {
            h.push(rec(pn, t0));
        }
        assert_eq!(h.len(), MAX_LOST_RECORDS);
        h.clear();
        assert!(h.is_empty());
    }

    #[test]
    fn episodes_follow_the_recovery_period_rule() {
        let t0 = test_epoch();
        let mut e = Episodes::default();
        // Losses of packets sent before the episode began join it.
        let a = e.on_signal(t0 + 100 * MS, t0 + 10 * MS, 2, false, false);
        assert_eq!(e.on_signal(t0 + 110 * MS, t0 + 90 * MS, 1, false, false), a);
        assert!(!e.on_spurious(a) && !e.on_spurious(a));
        assert!(e.on_spurious(a), "all three spurious: undo");
        assert!(!e.on_spurious(a), "only once");
        // A packet sent after the episode began starts a new one.
        let b = e.on_signal(t0 + 200 * MS, t0 + 150 * MS, 1, false, false);
        let c = e.on_signal(t0 + 300 * MS, t0 + 250 * MS, 1, false, false);
        assert!(b != c && b != 0 && c != 0);
        assert!(!e.on_spurious(b), "b is no longer current");
        assert!(e.on_spurious(c));
        // Undoing c restores b's recovery period: a loss sent before b's start
        // joins it and is not undoable.
        assert_eq!(
            e.on_signal(t0 + 310 * MS, t0 + 190 * MS, 1, false, false),
            0
        );
    }

    #[test]
    fn ecn_and_persistent_congestion_cannot_be_undone() {
        let t0 = test_epoch();
        let mut e = Episodes::default();
        let a = e.on_signal(t0 + 100 * MS, t0, 1, false, false);
        e.on_signal(t0 + 101 * MS, t0 + 50 * MS, 0, true, false);
        assert!(!e.on_spurious(a));
        assert_eq!(e.on_signal(t0 + 200 * MS, t0 + 150 * MS, 3, false, true), 0);
        // After persistent congestion the period is over: the next loss is new.
        let b = e.on_signal(t0 + 210 * MS, t0 + 120 * MS, 1, false, false);
        assert!(b != 0 && e.on_spurious(b));
    }
}
