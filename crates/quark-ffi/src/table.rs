//! The handle table: C holds integers, never pointers, so a stale or
//! double-closed handle is an error, not a use after free.
//!
//! A handle is `generation << 32 | slot`. Closing a handle bumps its slot's
//! generation, so the old number no longer matches even once the slot is reused.
//!
//! A lookup takes no lock and clones no `Arc`: each slot has one atomic word
//! (generation, open bit, number of calls using it) and holds its `Handle`
//! inline. A lookup raises the count if the generation matches an open slot
//! (one compare-and-swap); the object is dropped by whoever brings the count
//! of a closed slot to zero: `quark_close` itself, or the last call that was
//! still using it (a call blocked on the handle in another thread finishes
//! with it, as documented at `quark_close`). Slots live in chunks that are
//! never freed, so a stale handle always reads valid memory.

use std::cell::UnsafeCell;
use std::ops::Deref;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{RawWaker, RawWakerVTable, Waker};

use parking_lot::Mutex;

use crate::error::QuarkError;
use crate::object::{Handle, Object};
use crate::ready::Ready;

/// Slots per chunk, and chunks: at most 2^20 handles open at once (a bound
/// on the table), allocated a chunk at a time.
const CHUNK_BITS: usize = 10;
const CHUNKS: usize = 1 << 10;
const MAX_HANDLES: usize = CHUNKS << CHUNK_BITS;
/// Generations stay below 2^31 so every handle is a positive `i64`.
const GENERATION_MASK: u64 = 0x7fff_ffff;
/// In a slot's state: the slot holds an open handle.
const OPEN: u64 = 1 << 31;
/// In a slot's state: the calls using its object (below the open bit).
const USERS: u64 = OPEN - 1;

struct Slot {
    /// `generation << 32 | OPEN | users`.
    state: AtomicU64,
    /// Written only while the slot is closed with no users (see `Sync`).
    handle: UnsafeCell<Option<Handle>>,
    /// The ready list a wake of the open handle marks, kept apart from
    /// `handle` so that a waker never becomes the user that drops a handle
    /// (quark may wake while holding a connection's lock, which dropping a
    /// stream takes). Locked only by wakes, open and close.
    ready: Mutex<Option<Arc<Ready>>>,
}

// SAFETY: `handle` is shared (`&Handle`, and `Handle` is `Sync`) only by
// `Ref`s, which exist while `state` counts them as users of an open or
// closing slot; it is written only by `insert` (slot taken off the free
// list: closed, no users, no `Ref`) and by the reclaim of the `Ref` that
// brought a closed slot's users to zero (no other `Ref`, and a closed slot
// gains none). The acquire/release orderings on `state` order those writes
// against every read.
unsafe impl Sync for Slot {}

impl Slot {
    fn new() -> Self {
        Slot {
            state: AtomicU64::new(1 << 32),
            handle: UnsafeCell::new(None),
            ready: Mutex::new(None),
        }
    }
}

static SLOTS: [OnceLock<Box<[Slot]>>; CHUNKS] = [const { OnceLock::new() }; CHUNKS];

/// Slots never used yet start at `next`; closed ones wait in `free`.
struct Free {
    next: usize,
    free: Vec<u32>,
}

static FREE: Mutex<Free> = Mutex::new(Free {
    next: 0,
    free: Vec::new(),
});

fn slot(index: usize) -> Option<&'static Slot> {
    SLOTS
        .get(index >> CHUNK_BITS)?
        .get()?
        .get(index & ((1 << CHUNK_BITS) - 1))
}

fn split(handle: i64) -> Option<(usize, u64)> {
    if handle <= 0 {
        return None;
    }
    Some(((handle & 0xffff_ffff) as usize, handle as u64 >> 32))
}

/// A handle's object in use by one call; the object lives at least as long.
pub(crate) struct Ref {
    slot: &'static Slot,
    index: u32,
}

impl Deref for Ref {
    type Target = Handle;

    fn deref(&self) -> &Handle {
        // SAFETY: this `Ref` is counted in `state`, so nothing writes
        // `handle` while it lives (see `Sync for Slot`).
        match unsafe { &*self.slot.handle.get() } {
            Some(h) => h,
            None => unreachable!("a slot in use holds its handle"),
        }
    }
}

impl Drop for Ref {
    #[inline]
    fn drop(&mut self) {
        let before = self.slot.state.fetch_sub(1, Ordering::AcqRel);
        // Closed (no OPEN bit) and we were its last user.
        if before & (OPEN | USERS) == 1 {
            self.reclaim();
        }
    }
}

impl Ref {
    /// Drop the object of a closed slot whose last user this was: no `Ref`
    /// is left and none can be made, so it is ours.
    #[cold]
    #[inline(never)]
    fn reclaim(&self) {
        // SAFETY: exclusive access, as above.
        let handle = unsafe { (*self.slot.handle.get()).take() };
        drop(handle);
        FREE.lock().free.push(self.index);
    }
}

/// Store `object`, a member of the endpoint whose ready list is `ready`;
/// returns its new handle.
pub(crate) fn insert(object: Object, ready: Arc<Ready>) -> Result<i64, QuarkError> {
    let index = {
        let mut f = FREE.lock();
        match f.free.pop() {
            Some(i) => i as usize,
            None if f.next < MAX_HANDLES => {
                f.next += 1;
                f.next - 1
            }
            None => return Err(QuarkError::Limit),
        }
    };
    let chunk = SLOTS[index >> CHUNK_BITS]
        .get_or_init(|| (0..1 << CHUNK_BITS).map(|_| Slot::new()).collect());
    let slot = &chunk[index & ((1 << CHUNK_BITS) - 1)];
    let state = slot.state.load(Ordering::Acquire);
    let id = ((state >> 32) << 32 | index as u64) as i64;
    *slot.ready.lock() = Some(ready.clone());
    // SAFETY: a slot off the free list (or never used) is closed with no
    // users and no `Ref`: nothing else reads or writes `handle`.
    unsafe {
        *slot.handle.get() = Some(Handle {
            object,
            nonblocking: AtomicBool::new(ready.new_nonblocking()),
            waker: waker(id),
            ready,
        });
    }
    slot.state.store(state | OPEN, Ordering::Release);
    Ok(id)
}

/// The object behind `handle`, in use until the `Ref` drops: the caller may
/// block on it while another thread closes the handle.
#[inline]
pub(crate) fn get(handle: i64) -> Result<Ref, QuarkError> {
    let (index, generation) = split(handle).ok_or(QuarkError::BadHandle)?;
    let slot = slot(index).ok_or(QuarkError::BadHandle)?;
    let mut state = slot.state.load(Ordering::Acquire);
    loop {
        if state >> 32 != generation || state & OPEN == 0 {
            return Err(QuarkError::BadHandle);
        }
        match slot.state.compare_exchange_weak(
            state,
            state + 1,
            Ordering::Acquire,
            Ordering::Acquire,
        ) {
            Ok(_) => {
                return Ok(Ref {
                    slot,
                    index: index as u32,
                });
            }
            Err(now) => state = now,
        }
    }
}

/// Close `handle`: its number is dead from now on (the slot's generation
/// moves on) and its object is dropped when the returned `Ref`, and any
/// other call's, is done with it.
pub(crate) fn remove(handle: i64) -> Result<Ref, QuarkError> {
    let (index, generation) = split(handle).ok_or(QuarkError::BadHandle)?;
    let slot = slot(index).ok_or(QuarkError::BadHandle)?;
    let mut state = slot.state.load(Ordering::Acquire);
    loop {
        if state >> 32 != generation || state & OPEN == 0 {
            return Err(QuarkError::BadHandle);
        }
        // Skip 0 so that slot 0 never yields handle 0.
        let next = match (generation + 1) & GENERATION_MASK {
            0 => 1,
            g => g,
        };
        // Closed, next generation, and this call one more user.
        let closed = next << 32 | ((state & USERS) + 1);
        match slot
            .state
            .compare_exchange_weak(state, closed, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => break,
            Err(now) => state = now,
        }
    }
    let ready = slot.ready.lock().take();
    drop(ready);
    Ok(Ref {
        slot,
        index: index as u32,
    })
}

/// Put `handle` on its endpoint's ready list if it is still open.
fn mark(handle: i64) {
    let Some((index, generation)) = split(handle) else {
        return;
    };
    let Some(slot) = slot(index) else {
        return;
    };
    let ready = slot.ready.lock();
    // Under the lock: `remove` empties `ready` after closing the slot, so an
    // open slot of this generation still holds this handle's list.
    let state = slot.state.load(Ordering::Acquire);
    if state >> 32 == generation
        && state & OPEN != 0
        && let Some(r) = &*ready
    {
        r.mark(handle);
    }
}

/// The waker a handle leaves with what it waits for: the handle's number is
/// all it carries, so making one allocates nothing.
fn waker(handle: i64) -> Waker {
    fn clone(data: *const ()) -> RawWaker {
        RawWaker::new(data, &VTABLE)
    }
    fn wake(data: *const ()) {
        mark(data.addr() as i64);
    }
    fn drop(_: *const ()) {}
    static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, wake, wake, drop);
    // SAFETY: the data is the handle's number, never dereferenced; the
    // vtable's functions are thread-safe (`mark` locks what it reads) and
    // `clone` returns a waker of the same vtable.
    unsafe {
        Waker::from_raw(RawWaker::new(
            std::ptr::without_provenance(handle as usize),
            &VTABLE,
        ))
    }
}
