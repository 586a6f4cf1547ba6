//! The handle table: C holds integers, never pointers, so a stale or
//! double-closed handle is an error, not a use after free.
//!
//! A handle is `generation << 32 | slot`. Closing a handle bumps its slot's
//! generation, so the old number no longer matches even once the slot is reused.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use parking_lot::{Mutex, MutexGuard};

use crate::error::QuarkError;
use crate::object::{Handle, Object};
use crate::ready::Ready;

/// At most this many handles are open at once (a bound on the table).
const MAX_HANDLES: usize = 1 << 20;
/// Generations stay below 2^31 so every handle is a positive `i64`.
const GENERATION_MASK: u32 = 0x7fff_ffff;

struct Slot {
    generation: u32,
    object: Option<Arc<Handle>>,
}

#[derive(Default)]
struct Table {
    slots: Vec<Slot>,
    free: Vec<u32>,
}

static TABLE: Mutex<Table> = Mutex::new(Table {
    slots: Vec::new(),
    free: Vec::new(),
});

/// Every call takes this lock once: parking_lot's (no poisoning to check,
/// the uncontended path inlined) costs ~10 instructions a call less than
/// std's. A panic while holding it leaves the table consistent (every change
/// is a single assignment).
fn table() -> MutexGuard<'static, Table> {
    TABLE.lock()
}

fn split(handle: i64) -> Option<(usize, u32)> {
    if handle <= 0 {
        return None;
    }
    let slot = (handle & 0xffff_ffff) as usize;
    let generation = u32::try_from(handle >> 32).ok()?;
    Some((slot, generation))
}

/// Store `object`, a member of the endpoint whose ready list is `ready`;
/// returns its new handle.
pub(crate) fn insert(object: Object, ready: Arc<Ready>) -> Result<i64, QuarkError> {
    let mut t = table();
    let index = match t.free.pop() {
        Some(i) => i as usize,
        None => {
            if t.slots.len() >= MAX_HANDLES {
                return Err(QuarkError::Limit);
            }
            t.slots.push(Slot {
                generation: 1,
                object: None,
            });
            t.slots.len() - 1
        }
    };
    let slot = &mut t.slots[index];
    let id = (i64::from(slot.generation) << 32) | index as i64;
    slot.object = Some(Arc::new(Handle {
        object,
        nonblocking: AtomicBool::new(false),
        waker: ready.waker(id),
        ready,
    }));
    Ok(id)
}

/// The object behind `handle`, shared: the caller may block on it without
/// holding the table lock.
pub(crate) fn get(handle: i64) -> Result<Arc<Handle>, QuarkError> {
    let (index, generation) = split(handle).ok_or(QuarkError::BadHandle)?;
    let t = table();
    match t.slots.get(index) {
        Some(Slot {
            generation: g,
            object: Some(o),
        }) if *g == generation => Ok(o.clone()),
        _ => Err(QuarkError::BadHandle),
    }
}

/// Take `handle` out of the table; the slot's generation moves on so the
/// number is dead from now on.
pub(crate) fn remove(handle: i64) -> Result<Arc<Handle>, QuarkError> {
    let (index, generation) = split(handle).ok_or(QuarkError::BadHandle)?;
    let mut t = table();
    let slot = t.slots.get_mut(index).ok_or(QuarkError::BadHandle)?;
    if slot.generation != generation || slot.object.is_none() {
        return Err(QuarkError::BadHandle);
    }
    let object = slot.object.take().ok_or(QuarkError::BadHandle)?;
    // Skip 0 so that slot 0 never yields handle 0.
    slot.generation = (slot.generation + 1) & GENERATION_MASK;
    if slot.generation == 0 {
        slot.generation = 1;
    }
    t.free.push(index as u32);
    Ok(object)
}
