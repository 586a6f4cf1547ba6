//! The send buffer: written bytes held until acknowledged, with the bookkeeping of
//! what is unsent, in flight, lost and acknowledged.

use std::collections::VecDeque;

use bytes::{BufMut, Bytes};

use super::SendRange;
use super::store::Store;
use crate::stream::ranges::Ranges;

/// Where the FIN stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fin {
    /// Not written by the application.
    None,
    /// Written, waiting to be sent (first time, or again after a loss).
    Pending,
    /// In a frame not yet acknowledged or declared lost.
    InFlight,
    /// Acknowledged.
    Acked,
}

/// Bytes written by the application and not yet acknowledged, with bookkeeping
/// of what is unsent, in flight, lost and acknowledged. Used for streams and for the
/// CRYPTO stream of each packet-number space. Memory is freed as the acknowledged
/// prefix advances; copied writes are coalesced into contiguous storage (no
/// allocation per write once capacity is reached), large shared ones are held
/// by reference.
#[derive(Debug)]
pub struct SendBuffer {
    /// Bytes `acked_end..written`.
    data: Store,
    /// Every byte below this offset is acknowledged and freed.
    acked_end: u64,
    /// Acknowledged ranges above `acked_end` (never touching it).
    acked: Ranges,
    /// Ranges declared lost and not acknowledged since, to send again.
    lost: Ranges,
    /// One past the highest byte ever sent; new data starts here.
    sent_end: u64,
    fin: Fin,
    /// The FIN was sent at least once (a bare FIN sent again is a retransmission).
    fin_sent: bool,
    /// `clear` was called: nothing more is sent.
    cleared: bool,
}

impl Default for SendBuffer {
    fn default() -> Self {
        Self::new()
    }
}

impl SendBuffer {
    /// An empty buffer.
    pub fn new() -> Self {
        Self::with_storage(VecDeque::new())
    }

    /// An empty buffer that writes into `storage` (emptied first), typically a
    /// freed stream's, so a new stream need not allocate.
    pub fn with_storage(storage: VecDeque<u8>) -> Self {
        SendBuffer {
            data: Store::with_ring(storage),
            acked_end: 0,
            acked: Ranges::default(),
            lost: Ranges::default(),
            sent_end: 0,
            fin: Fin::None,
            fin_sent: false,
            cleared: false,
        }
    }

    /// An empty buffer whose next byte is at `offset`, every byte before it
    /// acknowledged: a CRYPTO stream taken up again after
    /// [`all_acked_at`](Self::all_acked_at).
    pub fn resumed_at(offset: u64) -> Self {
        SendBuffer {
            acked_end: offset,
            sent_end: offset,
            ..Self::new()
        }
    }

    /// Where the stream ends if everything written is acknowledged (no FIN,
    /// not cleared); only its offset is then worth keeping.
    pub fn all_acked_at(&self) -> Option<u64> {
        (self.data.is_empty()
            && self.lost.is_empty()
            && self.fin == Fin::None
            && !self.cleared
            && self.sent_end == self.acked_end)
            .then_some(self.acked_end)
    }

    /// Append bytes (no limit here; callers bound what they accept). Writing after
    /// [`finish`](Self::finish) or [`clear`](Self::clear) is a caller bug; the bytes are
    /// ignored.
    pub fn write(&mut self, data: &[u8]) {
        debug_assert!(self.fin == Fin::None && !self.cleared, "write after finish");
        if self.fin != Fin::None || self.cleared {
            return;
        }
        self.data.push_copy(data);
    }

    /// Append the application's bytes without copying them here (small chunks
    /// are copied); see [`write`](Self::write).
    pub fn write_shared(&mut self, data: Bytes) {
        debug_assert!(self.fin == Fin::None && !self.cleared, "write after finish");
        if self.fin != Fin::None || self.cleared {
            return;
        }
        self.data.push_shared(data);
    }

    /// Mark the end of the stream after everything written so far.
    pub fn finish(&mut self) {
        if self.fin == Fin::None {
            self.fin = Fin::Pending;
        }
    }

    /// Total bytes written (the final size once finished).
    pub fn written(&self) -> u64 {
        self.acked_end + self.data.len() as u64
    }

    /// Bytes held (written and not yet acknowledged).
    pub fn buffered(&self) -> usize {
        self.data.len()
    }

    /// Bytes written and never sent yet.
    pub fn unsent(&self) -> usize {
        self.written().saturating_sub(self.sent_end) as usize
    }

    /// Whether something is waiting to be sent: lost data, unsent data or an unsent FIN.
    pub fn has_pending(&self) -> bool {
        !self.cleared
            && (!self.lost.is_empty() || self.sent_end < self.written() || self.fin == Fin::Pending)
    }

    /// Choose the next range to send, at most `max_len` bytes: lost data first (lowest
    /// offset first), then new data. Marks it in flight. Returns a bare FIN (len 0) when
    /// only the FIN is left to send. Never returns acknowledged bytes.
    pub fn next_range(&mut self, max_len: usize) -> Option<SendRange> {
        if self.cleared {
            return None;
        }
        let written = self.written();
        let (range, retransmit) = if !self.lost.is_empty() {
            if max_len == 0 {
                return None;
            }
            (self.lost.pop_front(max_len as u64)?, true)
        } else if self.sent_end < written {
            if max_len == 0 {
                return None;
            }
            let start = self.sent_end;
            let end = written.min(start.saturating_add(max_len as u64));
            self.sent_end = end;
            (start..end, false)
        } else if self.fin == Fin::Pending {
            // Only the FIN is outstanding: a bare FIN at the final size.
            (written..written, self.fin_sent)
        } else {
            return None;
        };
        let fin = self.fin == Fin::Pending && range.end == written;
        if fin {
            self.fin = Fin::InFlight;
            self.fin_sent = true;
        }
        Some(SendRange {
            offset: range.start,
            len: (range.end - range.start) as usize,
            fin,
            retransmit,
        })
    }

    /// Like [`next_range`](Self::next_range), but lost data is taken from the
    /// first lost range at or above `from`, then new data, and only then from
    /// the lowest lost offset: successive probes that pass on where the last
    /// one ended cycle through everything unacknowledged rather than always
    /// resending its start.
    pub fn next_range_from(&mut self, from: u64, max_len: usize) -> Option<SendRange> {
        if self.cleared || max_len == 0 || self.fin != Fin::None {
            return self.next_range(max_len);
        }
        let Some(lost) = self.lost.first_from(from) else {
            if self.sent_end < self.written() {
                let start = self.sent_end;
                let end = self.written().min(start.saturating_add(max_len as u64));
                self.sent_end = end;
                return Some(SendRange {
                    offset: start,
                    len: (end - start) as usize,
                    fin: false,
                    retransmit: false,
                });
            }
            return self.next_range(max_len);
        };
        let end = lost.end.min(lost.start.saturating_add(max_len as u64));
        self.lost.remove(lost.start, end);
        Some(SendRange {
            offset: lost.start,
            len: (end - lost.start) as usize,
            fin: false,
            retransmit: true,
        })
    }

    /// Append the bytes of `offset..offset+len` to `dst`.
    ///
    /// # Panics
    /// If the range is not buffered (already acknowledged, or never written): the caller
    /// copies a range just returned by [`next_range`](Self::next_range).
    pub fn copy_range<B: BufMut>(&self, offset: u64, len: usize, dst: &mut B) {
        assert!(
            offset >= self.acked_end && offset + len as u64 <= self.written(),
            "copy_range {offset}+{len} outside the buffered {}..{}",
            self.acked_end,
            self.written()
        );
        self.data.copy((offset - self.acked_end) as usize, len, dst);
    }

    /// The peer acknowledged a frame that carried this range. Returns true when every
    /// byte and the FIN (if finished) have now been acknowledged. Duplicate and stale
    /// acknowledgements are harmless.
    pub fn on_ack(&mut self, offset: u64, len: usize, fin: bool) -> bool {
        if self.cleared {
            return false;
        }
        // Only bytes that were sent and are still held can be newly acknowledged.
        let start = offset.max(self.acked_end);
        let end = offset.saturating_add(len as u64).min(self.sent_end);
        if start < end {
            self.lost.remove(start, end);
            if start == self.acked_end {
                self.advance_acked(end);
            } else {
                self.acked.insert(start, end);
            }
        }
        if fin && matches!(self.fin, Fin::Pending | Fin::InFlight) && self.fin_sent {
            self.fin = Fin::Acked;
        }
        self.is_all_acked()
    }

    /// The acknowledged prefix reaches `end`: absorb out-of-order acknowledged ranges
    /// that now touch it and free the memory.
    fn advance_acked(&mut self, mut end: u64) {
        while let Some(e) = self.acked.pop_reaching(end) {
            end = end.max(e);
        }
        let freed = (end - self.acked_end) as usize;
        self.data.drain_front(freed);
        self.acked_end = end;
    }

    /// Give back the storage if nothing is held (an idle connection's
    /// CRYPTO stream); it is allocated again by the next write.
    pub fn shrink_empty(&mut self) {
        self.data.shrink_empty();
    }

    /// Bytes of storage allocated (for memory accounting).
    pub fn allocated(&self) -> usize {
        self.data.capacity()
    }

    /// The byte storage, for reuse by another stream.
    pub fn into_storage(self) -> VecDeque<u8> {
        self.data.into_ring()
    }

    /// Whether all written bytes, and the FIN if the stream is finished, are acknowledged.
    fn is_all_acked(&self) -> bool {
        self.data.is_empty() && matches!(self.fin, Fin::None | Fin::Acked)
    }

    /// A frame that carried this range was declared lost: queue whatever part of it is
    /// not yet acknowledged for retransmission. Duplicate and stale notifications are
    /// harmless (at worst some bytes are sent again).
    pub fn on_lost(&mut self, offset: u64, len: usize, fin: bool) {
        if self.cleared {
            return;
        }
        let start = offset.max(self.acked_end);
        let end = offset.saturating_add(len as u64).min(self.sent_end);
        if start < end {
            let lost = &mut self.lost;
            self.acked
                .for_each_gap(start, end, |s, e| lost.insert(s, e));
        }
        if fin && self.fin == Fin::InFlight {
            self.fin = Fin::Pending;
        }
    }

    /// Drop all data (after RESET_STREAM): nothing more will be sent.
    pub fn clear(&mut self) {
        let written = self.written();
        self.data.clear();
        self.acked_end = written;
        self.sent_end = written;
        self.acked.clear();
        self.lost.clear();
        self.cleared = true;
    }
}

#[cfg(test)]
mod tests;
