//! From protocol events to task wake-ups: a connection's events (readable,
//! writable, connected, lost, ...) wake the tasks that wait for them. The driver
//! also learns whether anyone was woken, to let them answer before it transmits.

use std::task::Waker;

use quark_proto::{ConnectionHandle, Event, StreamEvent};
use smallvec::SmallVec;

use crate::shared::{ConnEntry, State, dir_index};

/// Apply a connection's pending events, waking the tasks they concern. Returns
/// whether a task was woken.
pub(crate) fn deliver_events(state: &mut State, h: ConnectionHandle) -> bool {
    let Some(conn) = state.proto.connection_mut(h) else {
        return false;
    };
    let mut events: SmallVec<[Event; 8]> = SmallVec::new();
    while let Some(ev) = conn.poll_event() {
        events.push(ev);
    }
    let Some(entry) = state.conns.get_mut(&h) else {
        return false;
    };
    let mut woke = false;
    for ev in events {
        if handle_event(entry, ev, &mut woke) {
            state.ready.push_back(h);
            woke |= !state.accept_wakers.is_empty();
            state.accept_wakers.drain(..).for_each(|w| w.wake());
        }
    }
    woke
}

/// Wake the task in `slot`, if any, noting it in `woke`.
fn wake(slot: Option<Waker>, woke: &mut bool) {
    if let Some(waker) = slot {
        waker.wake();
        *woke = true;
    }
}

/// Apply one event. Returns true if a server connection just became ready for `accept`.
fn handle_event(entry: &mut ConnEntry, ev: Event, woke: &mut bool) -> bool {
    let w = &mut entry.wakers;
    match ev {
        Event::Connected => {
            entry.connected = true;
            wake(w.connected.take(), woke);
            return entry.incoming;
        }
        Event::Stream(StreamEvent::Readable(id)) => wake(w.readers.remove(&id), woke),
        Event::Stream(StreamEvent::Writable(id)) => wake(w.writers.remove(&id), woke),
        Event::Stream(StreamEvent::Finished(id)) => {
            if let Some(outcome) = entry.send_halves.get_mut(&id) {
                *outcome = Some(None);
            }
            wake(w.finishers.remove(&id), woke);
        }
        Event::Stream(StreamEvent::Stopped(id, code)) => {
            if let Some(outcome) = entry.send_halves.get_mut(&id) {
                *outcome = Some(Some(code));
            }
            wake(w.finishers.remove(&id), woke);
            wake(w.writers.remove(&id), woke);
        }
        Event::Stream(StreamEvent::Opened(dir)) => wake(w.accept[dir_index(dir)].take(), woke),
        Event::Stream(StreamEvent::Available(dir)) => wake(w.open[dir_index(dir)].take(), woke),
        Event::ConnectionLost(e) => {
            entry.error = Some(e);
            w.wake_all();
            *woke = true;
        }
        Event::Drained => {
            entry.drained = true;
            w.wake_all();
            *woke = true;
        }
    }
    false
}
