//! Byte storage of freed streams, kept for the next streams to use. A
//! request/response workload opens a stream per request; without this every
//! request allocates and frees two ring buffers of a few KiB, which glibc serves
//! slowly (sizes above its per-thread cache).

use std::collections::VecDeque;

/// Most buffers kept per connection.
const MAX_SPARE: usize = 8;
/// Larger buffers are freed, not kept: at most `MAX_SPARE * MAX_KEPT_CAPACITY`
/// idle bytes per connection.
const MAX_KEPT_CAPACITY: usize = 16 * 1024;

/// A small stack of empty byte rings.
#[derive(Default)]
pub(super) struct Spare {
    bufs: Vec<VecDeque<u8>>,
}

impl Spare {
    /// An empty ring, reused when one is kept.
    pub(super) fn take(&mut self) -> VecDeque<u8> {
        self.bufs.pop().unwrap_or_default()
    }

    /// Keep `buf` (emptied) for a later stream, if it is small and there is room.
    pub(super) fn keep(&mut self, mut buf: VecDeque<u8>) {
        let cap = buf.capacity();
        if cap == 0 || cap > MAX_KEPT_CAPACITY || self.bufs.len() >= MAX_SPARE {
            return;
        }
        buf.clear();
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
    fn keeps_small_emptied_buffers_up_to_a_bound() {
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
    }
}
