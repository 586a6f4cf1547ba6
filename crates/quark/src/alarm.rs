//! Wake-ups at an instant, run by an endpoint's driver, for work beside its
//! connections (`Endpoint::connect_first`'s staggered attempts). They ride
//! on the driver's own timer: they need no timer of the runtime's, and a
//! caller-driven endpoint (the C API's), whose waits see only its socket and
//! that timer, still wakes for them.

use std::task::Waker;
use std::time::Instant;

use crate::shared::SharedRef;

/// One wake-up slot on an endpoint's driver, emptied when dropped.
pub(crate) struct Alarm {
    shared: SharedRef,
    id: u64,
}

/// An alarm as the driver keeps it: (its slot, when, whom to wake).
pub(crate) type Entry = (u64, Instant, Waker);

impl Alarm {
    pub(crate) fn new(shared: SharedRef) -> Self {
        let id = {
            let mut state = shared.lock();
            state.next_alarm += 1;
            state.next_alarm
        };
        Alarm { shared, id }
    }

    /// Wake `waker` at `at`, in place of what this alarm held.
    pub(crate) fn set(&self, at: Instant, waker: &Waker) {
        let mut state = self.shared.lock();
        match state.alarms.iter_mut().find(|a| a.0 == self.id) {
            Some(a) if a.1 == at && a.2.will_wake(waker) => return,
            Some(a) => (a.1, a.2) = (at, waker.clone()),
            None => state.alarms.push((self.id, at, waker.clone())),
        }
        // So that it arms its timer for this one.
        state.wake_driver();
    }
}

impl Drop for Alarm {
    fn drop(&mut self) {
        self.shared.lock().alarms.retain(|a| a.0 != self.id);
    }
}

/// Wakes the alarms due at `now` and forgets them; returns the earliest of
/// the rest.
pub(crate) fn fire(alarms: &mut Vec<Entry>, now: Instant) -> Option<Instant> {
    alarms.retain(|(_, at, waker)| {
        let due = *at <= now;
        if due {
            waker.wake_by_ref();
        }
        !due
    });
    alarms.iter().map(|a| a.1).min()
}
