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
    static ACKED: Cell<SentList> = const { Cell::new(Vec::new()) };
    static LOST: Cell<SentList> = const { Cell::new(Vec::new()) };
    static DECRYPTED: Cell<Vec<Decrypted>> = const { Cell::new(Vec::new()) };
    static SEAL: Cell<Vec<SealJob>> = const { Cell::new(Vec::new()) };
}

fn take<T: 'static>(key: &'static std::thread::LocalKey<Cell<Vec<T>>>) -> Vec<T> {
    key.try_with(Cell::take).unwrap_or_default()
}

fn put<T: 'static>(key: &'static std::thread::LocalKey<Cell<Vec<T>>>, mut v: Vec<T>) {
    if v.capacity() == 0 || v.capacity() > MAX_KEPT {
        return;
    }
    v.clear();
    // Replaces (and frees) one a nested call put back first: rare, harmless.
    let _ = key.try_with(|c| c.set(v));
}

/// The thread's vectors for an ACK: acknowledged, lost (both empty).
pub(super) fn take_ack() -> (SentList, SentList) {
    (take(&ACKED), take(&LOST))
}

/// Give back what [`take_ack`] returned.
pub(super) fn put_ack(acked: SentList, lost: SentList) {
    put(&ACKED, acked);
    put(&LOST, lost);
}

/// The thread's vector for lost or dropped packets (empty).
pub(super) fn take_lost() -> SentList {
    take(&LOST)
}

/// Give back what [`take_lost`] returned.
pub(super) fn put_lost(lost: SentList) {
    put(&LOST, lost);
}

/// The thread's vector for a receive batch's decrypted packets (empty).
pub(super) fn take_decrypted() -> Vec<Decrypted> {
    take(&DECRYPTED)
}

/// Give back what [`take_decrypted`] returned.
pub(super) fn put_decrypted(v: Vec<Decrypted>) {
    put(&DECRYPTED, v);
}

/// The thread's vector for a send batch's packets to seal (empty).
pub(super) fn take_seal() -> Vec<SealJob> {
    take(&SEAL)
}

/// Give back what [`take_seal`] returned.
pub(super) fn put_seal(v: Vec<SealJob>) {
    put(&SEAL, v);
}

/// Bytes the thread keeps (tests and diagnostics).
pub fn scratch_pool_bytes() -> usize {
    fn bytes<T: 'static>(key: &'static std::thread::LocalKey<Cell<Vec<T>>>) -> usize {
        let v = take(key);
        let n = v.capacity() * std::mem::size_of::<T>();
        let _ = key.try_with(|c| c.set(v));
        n
    }
    bytes(&ACKED) + bytes(&LOST) + bytes(&DECRYPTED) + bytes(&SEAL)
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
        let (a, l) = take_ack();
        let inner = take_lost();
        assert_eq!(inner.capacity(), 0);
        put_lost(inner);
        put_ack(a, l);
    }
}
