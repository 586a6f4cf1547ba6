//! The order in which streams with data get to send: RFC 9218's extensible
//! priorities. Streams nobody gave a priority go round-robin, as they always
//! did; the urgency levels exist only once some stream has a priority, so a
//! connection without priorities pays one branch per queued stream.

use std::collections::{BTreeSet, VecDeque};
use std::ops::Bound::{Excluded, Unbounded};

use super::outgoing::Turn;
use super::{StreamError, Streams};
use crate::connection::sent::SentFrames;
use crate::types::StreamId;

/// Urgency levels: 0 (most urgent) to 7 (RFC 9218 §4.1).
pub(super) const LEVELS: usize = 8;

/// A stream's priority (RFC 9218 §4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Priority {
    /// 0 (sent first) to 7; larger values are treated as 7.
    pub urgency: u8,
    /// Whether the stream's data is useful in pieces, so it may share the
    /// connection with others of its urgency rather than go whole.
    pub incremental: bool,
}

impl Default for Priority {
    /// RFC 9218 §4.1, §4.2: u=3, not incremental.
    fn default() -> Self {
        Priority {
            urgency: 3,
            incremental: false,
        }
    }
}

impl Priority {
    fn level(self) -> usize {
        usize::from(self.urgency).min(LEVELS - 1)
    }

    /// Whether the stream shares the queue of streams without a priority:
    /// those go round-robin at the default urgency.
    fn is_plain(self) -> bool {
        self.incremental && self.level() == DEFAULT_LEVEL
    }
}

/// Where streams without a priority are served.
pub(super) const DEFAULT_LEVEL: usize = 3;

/// Streams of one urgency with data to send.
#[derive(Default)]
pub(super) struct Level {
    /// Non-incremental streams, served one after another in stream-ID order.
    pub(super) sequential: BTreeSet<StreamId>,
    /// Incremental streams, round-robin (unused at the default level: those
    /// share the plain queue).
    pub(super) incremental: VecDeque<StreamId>,
}

/// The streams with data to send.
#[derive(Default)]
pub(super) struct SendQueue {
    /// Streams without a priority (and incremental ones of the default
    /// urgency), round-robin.
    pub(super) plain: VecDeque<StreamId>,
    /// Present once any stream got a priority.
    pub(super) levels: Option<Box<[Level; LEVELS]>>,
}

impl SendQueue {
    /// Queue a stream that has data to send.
    #[inline]
    pub(super) fn push(&mut self, id: StreamId, priority: Option<Priority>) {
        match priority {
            None => self.plain.push_back(id),
            Some(p) => self.push_prioritized(id, p),
        }
    }

    fn push_prioritized(&mut self, id: StreamId, p: Priority) {
        if p.is_plain() {
            self.plain.push_back(id);
            return;
        }
        let level = &mut self.levels.get_or_insert_with(Default::default)[p.level()];
        if p.incremental {
            level.incremental.push_back(id);
        } else {
            level.sequential.insert(id);
        }
    }

    /// Take a queued stream out (its priority changes).
    pub(super) fn remove(&mut self, id: StreamId, priority: Option<Priority>) {
        match priority {
            Some(p) if !p.is_plain() => {
                if let Some(levels) = self.levels.as_mut() {
                    let level = &mut levels[p.level()];
                    level.sequential.remove(&id);
                    level.incremental.retain(|&s| s != id);
                }
            }
            _ => self.plain.retain(|&s| s != id),
        }
    }

    /// Make room for prioritized streams before the first one is queued.
    pub(super) fn enable_levels(&mut self) {
        self.levels.get_or_insert_with(Default::default);
    }

    /// Whether a stream less urgent than one of `priority` (streams
    /// without one are at the default urgency) has data queued.
    pub(super) fn has_less_urgent(&self, priority: Option<Priority>) -> bool {
        let Some(levels) = self.levels.as_ref() else {
            return false;
        };
        let mine = priority.map_or(DEFAULT_LEVEL, Priority::level);
        (mine + 1..LEVELS).any(|u| {
            let level = &levels[u];
            !level.sequential.is_empty()
                || !level.incremental.is_empty()
                || (u == DEFAULT_LEVEL && !self.plain.is_empty())
        })
    }

    pub(super) fn is_empty(&self) -> bool {
        self.plain.is_empty()
            && self.levels.as_ref().is_none_or(|levels| {
                levels
                    .iter()
                    .all(|l| l.sequential.is_empty() && l.incremental.is_empty())
            })
    }

    /// Storage held, counted in stream IDs (the levels' box included): for
    /// the memory breakdown.
    pub(super) fn capacity(&self) -> usize {
        let levels = self.levels.as_ref().map_or(0, |levels| {
            std::mem::size_of::<[Level; LEVELS]>() / std::mem::size_of::<StreamId>()
                + levels
                    .iter()
                    .map(|l| l.sequential.len() + l.incremental.capacity())
                    .sum::<usize>()
        });
        self.plain.capacity() + levels
    }

    /// Give back the storage of an empty queue (an idle connection); it is
    /// made again on the next push.
    pub(super) fn shrink_idle(&mut self) {
        if self.is_empty() {
            *self = SendQueue::default();
        }
    }

    #[cfg(feature = "testing")]
    pub(super) fn len(&self) -> usize {
        self.plain.len()
            + self.levels.as_ref().map_or(0, |levels| {
                levels
                    .iter()
                    .map(|l| l.sequential.len() + l.incremental.len())
                    .sum()
            })
    }
}

impl Streams {
    /// Set (or with `None` clear) the priority of a stream's sending side.
    /// Takes effect from the next packet.
    pub fn set_priority(
        &mut self,
        id: StreamId,
        priority: Option<Priority>,
    ) -> Result<(), StreamError> {
        let entry = self.map.get_mut(&id).ok_or(StreamError::UnknownStream)?;
        if entry.send.is_none() {
            return Err(StreamError::WrongDirection);
        }
        if entry.priority == priority {
            return Ok(());
        }
        self.send_queue.enable_levels();
        if entry.queued {
            self.send_queue.remove(id, entry.priority);
            self.send_queue.push(id, priority);
        }
        entry.priority = priority;
        Ok(())
    }

    /// The priority set on a stream, if any.
    pub fn priority(&self, id: StreamId) -> Option<Priority> {
        self.map.get(&id).and_then(|e| e.priority)
    }

    /// [`write_stream_frames`](Self::write_stream_frames) once priorities are
    /// in use. RFC 9218 §10 (scheduling): lower urgency first; of one
    /// urgency, non-incremental streams one after another in stream-ID order,
    /// then incremental ones round-robin.
    pub(super) fn write_prioritized(
        &mut self,
        buf: &mut Vec<u8>,
        max_end: usize,
        sent: &mut SentFrames,
    ) {
        // Out of `self` while streams take their turns, put back after.
        let Some(mut levels) = self.send_queue.levels.take() else {
            return;
        };
        let mut plain = std::mem::take(&mut self.send_queue.plain);
        'levels: for (u, level) in levels.iter_mut().enumerate() {
            // Non-incremental ones first, each whole before the next.
            let mut after: Option<StreamId> = None;
            loop {
                let next = match after {
                    None => level.sequential.first().copied(),
                    Some(a) => level
                        .sequential
                        .range((Excluded(a), Unbounded))
                        .next()
                        .copied(),
                };
                let Some(id) = next else { break };
                match self.write_turn(id, buf, max_end, sent) {
                    Turn::Done => {
                        level.sequential.remove(&id);
                    }
                    Turn::More { full: true } => break 'levels,
                    Turn::More { full: false } => after = Some(id),
                }
            }
            let queue = if u == DEFAULT_LEVEL {
                &mut plain
            } else {
                &mut level.incremental
            };
            for _ in 0..queue.len() {
                let Some(id) = queue.pop_front() else { break };
                if let Turn::More { full } = self.write_turn(id, buf, max_end, sent) {
                    queue.push_back(id);
                    if full {
                        break 'levels;
                    }
                }
            }
        }
        // Streams queued during the turns (none today) are kept too.
        plain.append(&mut self.send_queue.plain);
        self.send_queue.plain = plain;
        self.send_queue.levels = Some(levels);
    }
}

#[cfg(test)]
#[path = "sched_tests.rs"]
mod tests;
