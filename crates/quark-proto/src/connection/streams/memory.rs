//! What a connection's streams hold in memory, for budgets: the part of a
//! connection's memory a peer can make grow.

use super::Streams;

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
