//! Small byte buffers a connection reuses: a request stream's read-ahead
//! and each HEADERS frame built to send took a malloc and a free per
//! request at each end.

use std::sync::Mutex;

/// Buffers kept per connection, at most.
const KEEP: usize = 8;
/// Larger buffers (a big field section's) are not kept.
const MAX_CAPACITY: usize = 2048;

/// A connection's spare buffers (bounded: [`KEEP`] of at most
/// [`MAX_CAPACITY`] bytes each).
#[derive(Default)]
pub(crate) struct Buffers(Mutex<Vec<Vec<u8>>>);

impl Buffers {
    /// An empty buffer: a kept one, or a new one (no allocation until used).
    pub(crate) fn take(&self) -> Vec<u8> {
        self.0.lock().unwrap().pop().unwrap_or_default()
    }

    /// Keeps `buf` for a later [`take`](Self::take), if there is room.
    pub(crate) fn give(&self, mut buf: Vec<u8>) {
        if buf.capacity() == 0 || buf.capacity() > MAX_CAPACITY {
            return;
        }
        buf.clear();
        let mut kept = self.0.lock().unwrap();
        if kept.len() < KEEP {
            if kept.capacity() == 0 {
                kept.reserve_exact(KEEP);
            }
            kept.push(buf);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_a_bounded_number_of_small_cleared_buffers() {
        let pool = Buffers::default();
        assert_eq!(pool.take().capacity(), 0);
        let mut b = Vec::with_capacity(128);
        b.extend_from_slice(b"old bytes");
        let ptr = b.as_ptr();
        pool.give(b);
        let again = pool.take();
        assert!(again.is_empty() && again.as_ptr() == ptr);
        pool.give(Vec::with_capacity(MAX_CAPACITY + 1));
        assert_eq!(pool.take().capacity(), 0);
        for _ in 0..KEEP + 4 {
            pool.give(Vec::with_capacity(64));
        }
        assert_eq!(pool.0.lock().unwrap().len(), KEEP);
    }
}
