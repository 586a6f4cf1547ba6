//! The driver's receive buffers, lent to connections (zero-copy receive).
//!
//! `recvmmsg` writes each batch into the free room of these buffers; the
//! protocol decrypts it in place and may keep in-order STREAM data where it
//! lies, as slices, until the application reads it. A buffer with slices
//! still held cannot take the next batch: it is parked and another used. The
//! parked buffers are the memory peers' data pins beyond flow control, so
//! their number is bounded: past [`MAX_PARKED`] connections copy what they
//! keep, as they did before lending, until readers free some.

use std::sync::atomic::Ordering::Relaxed;

use bytes::BytesMut;

use crate::counters::driver as counters;

/// Room for a full GRO batch per buffer.
pub(super) const RECV_BUF_SIZE: usize = 64 * 1024;

/// Receive buffers held by unread slices at most (4 MiB) before lending stops.
pub(super) const MAX_PARKED: usize = 64;

/// Receive buffers: the `live` ones `recvmmsg` fills, and `parked` ones still
/// held by slices of received data.
pub(super) struct RxBufs {
    live: Vec<BytesMut>,
    parked: Vec<BytesMut>,
}

impl RxBufs {
    pub(super) fn new(count: usize) -> Self {
        RxBufs {
            live: (0..count)
                .map(|_| BytesMut::with_capacity(RECV_BUF_SIZE))
                .collect(),
            parked: Vec::new(),
        }
    }

    /// The first `n` buffers, each with room for a full GRO batch; and
    /// whether connections may keep slices of what they receive into them.
    pub(super) fn ready(&mut self, n: usize) -> (&mut [BytesMut], bool) {
        let n = n.min(self.live.len());
        for i in 0..n {
            // What the protocol left is empty (it takes every byte); with no
            // slice left elsewhere the whole buffer comes back.
            self.live[i].clear();
            if !self.live[i].try_reclaim(RECV_BUF_SIZE) {
                let fresh = self.unparked();
                self.parked
                    .push(std::mem::replace(&mut self.live[i], fresh));
            }
        }
        if self.parked.len() >= MAX_PARKED {
            // Some may be free by now; they are let go (new ones come when
            // needed), or lending would never resume.
            self.parked.retain_mut(|b| !b.try_reclaim(RECV_BUF_SIZE));
        }
        let lend = self.parked.len() < MAX_PARKED;
        if counters::on() {
            counters::MOST_PARKED.fetch_max(self.parked.len() as u64, Relaxed);
            counters::add(&counters::UNLENT, u64::from(!lend));
        }
        (&mut self.live[..n], lend)
    }

    /// Buffer `i` of the last `ready`, to hand to the protocol.
    pub(super) fn get(&mut self, i: usize) -> &mut BytesMut {
        &mut self.live[i]
    }

    /// A parked buffer no slice holds any more, or a new one.
    fn unparked(&mut self) -> BytesMut {
        match self
            .parked
            .iter_mut()
            .position(|b| b.try_reclaim(RECV_BUF_SIZE))
        {
            Some(i) => self.parked.swap_remove(i),
            None => BytesMut::with_capacity(RECV_BUF_SIZE),
        }
    }

    /// Buffers held by slices of unread data.
    #[cfg(test)]
    pub(super) fn parked(&self) -> usize {
        self.parked.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_held_by_a_slice_is_parked_and_comes_back_when_freed() {
        let mut rx = RxBufs::new(2);
        let (bufs, lend) = rx.ready(2);
        assert!(lend);
        bufs[0].extend_from_slice(&[1; 1500]);
        let first = bufs[0].as_ptr();
        // The protocol takes the whole batch and keeps a slice of it.
        let kept = rx.get(0).split_to(1500).freeze().slice(100..200);
        let (bufs, _) = rx.ready(2);
        assert!(bufs[0].capacity() >= RECV_BUF_SIZE);
        assert_ne!(
            bufs[0].as_ptr(),
            first,
            "a held buffer is not written again"
        );
        assert_eq!(rx.parked(), 1);
        assert_eq!(&kept[..], &[1; 100]);
        drop(kept);
        // The live buffer is held in turn: the freed one replaces it.
        rx.get(0).extend_from_slice(&[2; RECV_BUF_SIZE]);
        let kept = rx.get(0).split_to(RECV_BUF_SIZE).freeze();
        let (bufs, _) = rx.ready(1);
        assert_eq!(bufs[0].as_ptr(), first, "the freed buffer is reused");
        assert!(bufs[0].capacity() >= RECV_BUF_SIZE);
        assert_eq!(rx.parked(), 1);
        assert_eq!(kept[0], 2);
    }

    #[test]
    fn lending_stops_at_the_bound() {
        let mut rx = RxBufs::new(1);
        let mut kept = Vec::new();
        for _ in 0..MAX_PARKED {
            let (bufs, lend) = rx.ready(1);
            assert!(lend);
            bufs[0].extend_from_slice(&[7; RECV_BUF_SIZE]);
            kept.push(rx.get(0).split_to(RECV_BUF_SIZE).freeze());
        }
        let (_, lend) = rx.ready(1);
        assert!(!lend, "{} parked", rx.parked());
        kept.clear();
        let (_, lend) = rx.ready(1);
        assert!(lend);
    }
}
