//! Byte storage of freed streams, kept for the next streams to use. A
//! request/response workload opens a stream per request; without this every
//! request allocates and frees two ring buffers. Small ones glibc serves slowly
//! (sizes above its per-thread cache); large ones (64 KiB messages, 100 in
//! flight) it maps and unmaps or trims and faults back in, page by page: with
//! only rings up to 16 KiB kept, such a workload spent a sixth of its CPU in
//! page faults and ran at about 0.75x the rate it does now (BENCHMARKS.md).

use std::collections::VecDeque;

/// Most buffers kept per connection.
const MAX_SPARE: usize = 8;
/// Larger buffers are freed, not kept.
const MAX_KEPT_CAPACITY: usize = 256 * 1024;
/// Most idle bytes kept per connection: a bound of its own, since the peer
/// decides how many streams come and go and how much each carries.
const MAX_SPARE_BYTES: usize = 512 * 1024;

/// A small stack of empty byte rings.
#[derive(Default)]
pub(super) struct Spare {
    bufs: Vec<VecDeque<u8>>,
    /// Capacity of the kept buffers, in all.
    bytes: usize,
}

impl Spare {
    /// An empty ring, reused when one is kept.
    pub(super) fn take(&mut self) -> VecDeque<u8> {
        let buf = self.bufs.pop().unwrap_or_default();
        self.bytes -= buf.capacity();
        buf
    }

    /// Keep `buf` (emptied) for a later stream, if it is not too large and
    /// there is room.
    pub(super) fn keep(&mut self, mut buf: VecDeque<u8>) {
        let cap = buf.capacity();
        if cap == 0
            || cap > MAX_KEPT_CAPACITY
            || self.bufs.len() >= MAX_SPARE
            || self.bytes + cap > MAX_SPARE_BYTES
        {
            return;
        }
        buf.clear();
        self.bytes += cap;
        self.bufs.push(buf);
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.bufs.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_emptied_buffers_up_to_a_count_and_a_byte_bound() {
        let mut spare = Spare::default();
        for _ in 0..MAX_SPARE + 3 {
            let mut b = VecDeque::with_capacity(4096);
            b.extend([1u8, 2, 3]);
            spare.keep(b);
        }
        assert_eq!(spare.len(), MAX_SPARE);
        let b = spare.take();
        assert!(b.is_empty() && b.capacity() >= 4096);
        spare.keep(VecDeque::with_capacity(MAX_KEPT_CAPACITY * 2));
        spare.keep(VecDeque::new());
        assert_eq!(spare.len(), MAX_SPARE - 1);

        // Large buffers: as many as the byte bound allows.
        let mut spare = Spare::default();
        for _ in 0..MAX_SPARE {
            spare.keep(VecDeque::with_capacity(MAX_KEPT_CAPACITY));
        }
        assert!(spare.bytes <= MAX_SPARE_BYTES, "{} bytes kept", spare.bytes);
        assert!(spare.len() >= 1 && spare.len() < MAX_SPARE);
        while spare.len() > 0 {
            spare.take();
        }
        assert_eq!(spare.bytes, 0);
    }
}
