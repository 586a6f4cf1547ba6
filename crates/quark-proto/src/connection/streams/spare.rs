//! Byte storage of freed streams, kept for the next streams to use. A
//! request/response workload opens a stream per request; without this every
//! request allocates and frees two ring buffers. Small ones glibc serves slowly
//! (sizes above its per-thread cache); large ones (64 KiB messages, 100 in
//! flight) it maps and unmaps or trims and faults back in, page by page: with
//! only rings up to 16 KiB kept, such a workload spent a sixth of its CPU in
//! page faults and ran at about 0.75x the rate it does now (BENCHMARKS.md).
//!
//! A burst of streams (a client with 100 requests in flight) frees and takes
//! back as many rings as it has streams, in waves, with no stream open between
//! two waves: the store keeps as many rings as the last burst had out, within
//! the connection's receive window (no more idle memory than the peer may make
//! us hold in unread data anyway). Shrinking to the idle bound whenever no
//! stream was open undid that at every wave: parallel 64 KiB requests then
//! faulted 110 000 pages in 20 000 requests, half its runs.

use std::collections::VecDeque;

use super::pool::Pool;

/// Fewest buffers a store may keep, however small the last burst.
pub(super) const MAX_SPARE: usize = 8;
/// Most buffers kept, whatever the bursts.
const MAX_SPARE_BUSY: usize = 256;
/// Larger buffers are freed, not kept.
const MAX_KEPT_CAPACITY: usize = 256 * 1024;
/// Idle bytes always allowed, whatever the receive window.
const MAX_SPARE_BYTES: usize = 512 * 1024;

/// A stack of empty byte rings.
#[derive(Default)]
pub(super) struct Spare {
    bufs: Vec<VecDeque<u8>>,
    /// Capacity of the kept buffers, in all.
    bytes: usize,
    /// Buffers handed out and not yet returned.
    out: usize,
    /// Most buffers out at once in the current burst.
    peak: usize,
    /// Most buffers the store keeps: the last burst's peak.
    keep_count: usize,
}

impl Spare {
    /// Capacity of the rings kept.
    pub(super) fn bytes(&self) -> usize {
        self.bytes
    }

    /// An empty ring, reused when one is kept, here or in the thread's pool
    /// of `kind` (0 send, 1 receive rings).
    pub(super) fn take(&mut self, kind: usize, pool: &mut Pool) -> VecDeque<u8> {
        self.out += 1;
        self.peak = self.peak.max(self.out);
        match self.bufs.pop() {
            Some(buf) => {
                self.bytes -= buf.capacity();
                buf
            }
            None => pool.take_ring(kind).unwrap_or_default(),
        }
    }

    /// After a burst of at most [`MAX_SPARE`] streams, with none open now:
    /// hand the kept rings to the thread's pool (`pool.rs`), so that a
    /// connection between two requests holds none. Whether it did: larger
    /// bursts keep theirs here, sized to this connection's bursts.
    pub(super) fn donate_small(&mut self, kind: usize, pool: &mut Pool) -> bool {
        if self.out != 0 || self.keep_count > MAX_SPARE {
            return false;
        }
        // Rings too large for the pool stay. The stack keeps its (small)
        // storage: the next burst pushes again.
        let mut i = 0;
        while i < self.bufs.len() {
            if self.bufs[i].capacity() > super::pool::MAX_RING_CAPACITY {
                i += 1;
                continue;
            }
            let buf = self.bufs.swap_remove(i);
            self.bytes -= buf.capacity();
            let _ = pool.put_ring(kind, buf);
        }
        true
    }

    /// Take back `buf` (emptied) for a later stream, if it is not too large
    /// and there is room: at most `window` bytes (the connection's receive
    /// window). `burst_over`: no stream is open any more, so the store shrinks
    /// to what this burst had out at its peak.
    pub(super) fn keep(&mut self, mut buf: VecDeque<u8>, window: usize, burst_over: bool) {
        self.out = self.out.saturating_sub(1);
        if burst_over {
            self.keep_count = self.peak.clamp(MAX_SPARE, MAX_SPARE_BUSY);
            self.peak = self.out;
            let bytes = Self::max_bytes(self.keep_count, window);
            self.shrink(self.keep_count, bytes);
        }
        let max_count = self
            .keep_count
            .max(self.peak)
            .clamp(MAX_SPARE, MAX_SPARE_BUSY);
        let max_bytes = Self::max_bytes(max_count, window);
        let cap = buf.capacity();
        if cap == 0
            || cap > MAX_KEPT_CAPACITY
            || self.bufs.len() >= max_count
            || self.bytes + cap > max_bytes
        {
            return;
        }
        buf.clear();
        self.bytes += cap;
        self.bufs.push(buf);
    }

    /// The byte bound for `count` buffers: the small idle bound, unless a
    /// burst had more streams out than that, then the receive window.
    fn max_bytes(count: usize, window: usize) -> usize {
        if count > MAX_SPARE {
            window.max(MAX_SPARE_BYTES)
        } else {
            MAX_SPARE_BYTES
        }
    }

    /// Free every kept buffer and the stack itself (an idle connection).
    /// The next burst starts from the small bound again.
    pub(super) fn clear(&mut self) {
        self.bufs = Vec::new();
        self.bytes = 0;
        self.peak = self.out;
        self.keep_count = 0;
    }

    /// Heap of the stack itself (the rings are in `bytes`).
    pub(super) fn stack_bytes(&self) -> usize {
        self.bufs.capacity() * std::mem::size_of::<VecDeque<u8>>()
    }

    /// Free buffers until at most `count` holding `bytes` remain.
    fn shrink(&mut self, count: usize, bytes: usize) {
        while self.bufs.len() > count || self.bytes > bytes {
            let Some(buf) = self.bufs.pop() else { break };
            self.bytes -= buf.capacity();
        }
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.bufs.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WINDOW: usize = 16 << 20;

    /// Takes `n` buffers, as `n` streams opening.
    fn open(spare: &mut Spare, n: usize) -> Vec<VecDeque<u8>> {
        (0..n)
            .map(|_| spare.take(0, &mut Pool::default()))
            .collect()
    }

    #[test]
    fn one_stream_at_a_time_keeps_a_few_buffers_and_few_bytes() {
        let mut spare = Spare::default();
        // Streams of 4 KiB, one at a time: each burst has one buffer out.
        for _ in 0..MAX_SPARE + 3 {
            let mut b = spare.take(0, &mut Pool::default());
            b.reserve(4096);
            spare.keep(b, WINDOW, true);
        }
        assert_eq!(spare.len(), 1, "the one buffer goes round");
        let b = spare.take(0, &mut Pool::default());
        assert!(b.is_empty() && b.capacity() >= 4096);
        spare.keep(b, WINDOW, true);
        // Empty rings and overlarge ones are not kept.
        let _ = spare.take(0, &mut Pool::default());
        spare.keep(VecDeque::new(), WINDOW, true);
        let _ = spare.take(0, &mut Pool::default());
        spare.keep(VecDeque::with_capacity(MAX_KEPT_CAPACITY * 2), WINDOW, true);
        assert_eq!(spare.len(), 0);
        // Many large buffers back at once after a small burst: the idle bounds.
        let _out = open(&mut spare, MAX_SPARE);
        for _ in 0..MAX_SPARE {
            spare.keep(VecDeque::with_capacity(MAX_KEPT_CAPACITY), WINDOW, false);
        }
        assert!(spare.bytes <= MAX_SPARE_BYTES, "{} bytes kept", spare.bytes);
        assert!(spare.len() >= 1 && spare.len() < MAX_SPARE);
        while spare.len() > 0 {
            spare.take(0, &mut Pool::default());
        }
        assert_eq!(spare.bytes, 0);
    }

    #[test]
    fn bursts_keep_what_they_had_out_and_no_more_than_the_window() {
        let mut spare = Spare::default();
        for wave in 0..3 {
            // 100 streams out at once, then all freed: the last closes the burst.
            let bufs = open(&mut spare, 100);
            if wave > 0 {
                assert!(bufs.iter().all(|b| b.capacity() >= 64 * 1024), "reused");
                assert_eq!(spare.len(), 0);
            }
            let n = bufs.len();
            for (i, mut b) in bufs.into_iter().enumerate() {
                b.reserve(64 * 1024);
                spare.keep(b, WINDOW, i + 1 == n);
            }
            assert_eq!(spare.len(), 100, "wave {wave}");
        }
        // A smaller burst next: the store shrinks to it when it ends.
        let bufs = open(&mut spare, 10);
        let n = bufs.len();
        for (i, b) in bufs.into_iter().enumerate() {
            spare.keep(b, WINDOW, i + 1 == n);
        }
        assert_eq!(spare.len(), 10.max(MAX_SPARE));
        // Never more than the receive window, nor more than MAX_SPARE_BUSY.
        let mut spare = Spare::default();
        let _out = open(&mut spare, 1000);
        for _ in 0..1000 {
            spare.keep(VecDeque::with_capacity(MAX_KEPT_CAPACITY), WINDOW, false);
        }
        assert!(spare.bytes <= WINDOW && spare.len() <= MAX_SPARE_BUSY);
        let mut small = Spare::default();
        let _out = open(&mut small, 1000);
        for _ in 0..1000 {
            small.keep(VecDeque::with_capacity(64), WINDOW, false);
        }
        assert_eq!(small.len(), MAX_SPARE_BUSY);
    }
}
