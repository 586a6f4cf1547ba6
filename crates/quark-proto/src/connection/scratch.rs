//! Scratch vectors shared by the connections of a thread (issue #33: memory
//! per connection while serving). The packets an ACK acknowledges or loses,
//! the packets of a receive batch waiting for their frames to be processed,
//! the 1-RTT packets of a send batch waiting to be sealed: each lives only
//! within one call, yet a busy connection kept all of them grown between its
//! calls (~1.4 KiB). A thread runs one connection's call at a time, so one
//! vector of each kind per thread serves them all.
//!
//! Taken at the start of the call and put back at its end (a thread-local
//! access each, tens of instructions; no allocation once grown). A nested
//! take, or a thread being torn down, gets an empty vector: correct, only
//! slower. What comes back empty but larger than the bound is freed (a bulk
//! transfer's ACK of thousands of packets), so a thread keeps at most the
//! bound of each.

use std::cell::Cell;

use super::recv::Decrypted;
use super::sent::SentFrames;
use crate::packet::SealJob;
use crate::recovery::SentPacket;

/// Packets newly acknowledged or declared lost, with their numbers.
pub(super) type SentList = Vec<(u64, SentPacket<SentFrames>)>;

/// Most elements a kept vector may hold (what a busy connection's batches
/// reach; a larger one is freed when given back).
const MAX_KEPT: usize = 1024;

thread_local! {
    /// Acknowledged and lost together: an ACK takes both in one access.
    static ACK: Cell<(SentList, SentList)> = const { Cell::new((Vec::new(), Vec::new())) };
    static DECRYPTED: Cell<Vec<Decrypted>> = const { Cell::new(Vec::new()) };
    static SEAL: Cell<Vec<SealJob>> = const { Cell::new(Vec::new()) };
}

#[inline]
fn take<T: Default + 'static>(key: &'static std::thread::LocalKey<Cell<T>>) -> T {
    key.try_with(Cell::take).unwrap_or_default()
}

/// Emptied, or freed if it grew past the bound.
#[inline]
fn keep<T>(v: &mut Vec<T>) {
    if v.capacity() > MAX_KEPT {
        *v = Vec::new();
    }
    v.clear();
}

#[inline]
fn put<T: 'static>(key: &'static std::thread::LocalKey<Cell<T>>, v: T) {
    // Replaces (and frees) one a nested call put back first: rare, harmless.
    let _ = key.try_with(|c| c.set(v));
}

/// The thread's vectors for an ACK: acknowledged, lost (both empty).
#[inline]
pub(super) fn take_ack() -> (SentList, SentList) {
    take(&ACK)
}

/// Give back what [`take_ack`] returned.
#[inline]
pub(super) fn put_ack(mut acked: SentList, mut lost: SentList) {
    keep(&mut acked);
    keep(&mut lost);
    put(&ACK, (acked, lost));
}

/// The thread's vector for a receive batch's decrypted packets (empty).
#[inline]
pub(super) fn take_decrypted() -> Vec<Decrypted> {
    take(&DECRYPTED)
}

/// Give back what [`take_decrypted`] returned.
#[inline]
pub(super) fn put_decrypted(mut v: Vec<Decrypted>) {
    keep(&mut v);
    put(&DECRYPTED, v);
}

/// The thread's vector for a send batch's packets to seal (empty).
#[inline]
pub(super) fn take_seal() -> Vec<SealJob> {
    take(&SEAL)
}

/// Give back what [`take_seal`] returned.
#[inline]
pub(super) fn put_seal(mut v: Vec<SealJob>) {
    keep(&mut v);
    put(&SEAL, v);
}

/// Bytes the thread keeps (tests and diagnostics).
pub fn scratch_pool_bytes() -> usize {
    fn bytes<T>(v: &Vec<T>) -> usize {
        v.capacity() * std::mem::size_of::<T>()
    }
    let (acked, lost) = take(&ACK);
    let (decrypted, seal) = (take(&DECRYPTED), take(&SEAL));
    let n = bytes(&acked) + bytes(&lost) + bytes(&decrypted) + bytes(&seal);
    put(&ACK, (acked, lost));
    put(&DECRYPTED, decrypted);
    put(&SEAL, seal);
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_vectors_are_bounded_and_reused() {
        let mut v = take_seal();
        v.reserve(10);
        let cap = v.capacity();
        put_seal(v);
        assert!(scratch_pool_bytes() >= cap * std::mem::size_of::<SealJob>());
        let again = take_seal();
        assert!(again.is_empty() && again.capacity() == cap, "reused");
        put_seal(Vec::with_capacity(MAX_KEPT + 1));
        assert_eq!(take_seal().capacity(), 0, "too large: freed");
        // Nested: the inner take finds nothing, both give back, one is kept.
        let (a, mut l) = take_ack();
        l.reserve(4);
        let (ia, il) = take_ack();
        assert_eq!(il.capacity(), 0);
        put_ack(ia, il);
        put_ack(a, l);
        assert!(take_ack().1.capacity() >= 4, "the outer one kept");
    }
}
