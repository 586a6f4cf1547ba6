//! From protocol events to task wake-ups: a connection's events (readable,
//! writable, connected, lost, ...) wake the tasks that wait for them. The driver
//! also learns whether anyone was woken, to let them answer before it transmits.

use std::collections::VecDeque;
use std::task::Waker;

use quark_proto::{Connection, ConnectionHandle, Event, StreamEvent};

use crate::shared::{ConnEntry, State, dir_index};

/// Apply a connection's pending events, waking the tasks they concern. Returns
/// whether a task was woken.
pub(crate) fn deliver_events(state: &mut State, h: ConnectionHandle) -> bool {
    let State {
        proto,
        conns,
        ready,
        accept_wakers,
        ..
    } = state;
    let Some(conn) = proto.connection_mut(h) else {
        return false;
    };
    apply(conn, conns.get_mut(&h), h, ready, accept_wakers)
}

/// Apply `conn`'s pending events to its entry (both already looked up). With no
/// entry, nobody waits: the events are dropped.
pub(crate) fn apply(
    conn: &mut Connection,
    entry: Option<&mut ConnEntry>,
    h: ConnectionHandle,
    ready: &mut VecDeque<ConnectionHandle>,
    accept_wakers: &mut Vec<Waker>,
) -> bool {
    let Some(entry) = entry else {
        while conn.poll_event().is_some() {}
        return false;
    };
    let mut woke = false;
    while let Some(ev) = conn.poll_event() {
        if handle_event(entry, ev, &mut woke) {
            ready.push_back(h);
            woke |= !accept_wakers.is_empty();
            accept_wakers.drain(..).for_each(Waker::wake);
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
