//! From protocol events to task wake-ups: a connection's events (readable,
//! writable, connected, lost, ...) wake the tasks that wait for them. The driver
//! also learns whom it woke, to let them answer before it transmits.

use std::collections::VecDeque;
use std::task::Waker;

use quark_proto::{Connection, ConnectionHandle, Event, StreamEvent};

use crate::shared::{ConnEntry, State, Wait, dir_index};

/// Wakers woken: readers (given data) and the rest.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Woken {
    pub(crate) readers: usize,
    pub(crate) others: usize,
}

impl Woken {
    pub(crate) fn any(self) -> bool {
        self.readers + self.others > 0
    }
}

impl std::ops::AddAssign for Woken {
    fn add_assign(&mut self, rhs: Woken) {
        self.readers += rhs.readers;
        self.others += rhs.others;
    }
}

/// Apply a connection's pending events, waking the tasks they concern. Returns
/// whom it woke.
pub(crate) fn deliver_events(state: &mut State, h: ConnectionHandle) -> Woken {
    let State {
        proto,
        conns,
        ready,
        accept_wakers,
        ..
    } = state;
    let Some(conn) = proto.connection_mut(h) else {
        return Woken::default();
    };
    apply(conn, conns.get_mut(&h), h, ready, accept_wakers)
}

/// Apply `conn`'s pending events to its entry (both already looked up). With no
/// entry, nobody waits: the events are dropped. Returns whom it woke.
pub(crate) fn apply(
    conn: &mut Connection,
    entry: Option<&mut ConnEntry>,
    h: ConnectionHandle,
    ready: &mut VecDeque<ConnectionHandle>,
    accept_wakers: &mut Vec<Waker>,
) -> Woken {
    let Some(entry) = entry else {
        while conn.poll_event().is_some() {}
        return Woken::default();
    };
    let mut woke = Woken::default();
    while let Some(ev) = conn.poll_event() {
        if handle_event(entry, ev, &mut woke) {
            ready.push_back(h);
            woke.others += accept_wakers.len();
            accept_wakers.drain(..).for_each(Waker::wake);
        }
    }
    woke
}

/// Wake the task in `slot`, if any, counting it in `count`.
fn wake(slot: Option<Waker>, count: &mut usize) {
    if let Some(waker) = slot {
        waker.wake();
        *count += 1;
    }
}

/// Apply one event. Returns true if a server connection just became ready for `accept`.
fn handle_event(entry: &mut ConnEntry, ev: Event, woke: &mut Woken) -> bool {
    let w = &mut entry.wakers;
    match ev {
        Event::Connected => {
            entry.connected = true;
            woke.others += w.wake(Wait::Connected);
            return entry.incoming;
        }
        Event::Stream(StreamEvent::Readable(id)) => wake(w.readers.remove(&id), &mut woke.readers),
        Event::Stream(StreamEvent::Writable(id)) => wake(w.writers.remove(&id), &mut woke.others),
        Event::Stream(StreamEvent::Finished(id)) => {
            if let Some(outcome) = entry.send_halves.get_mut(&id) {
                *outcome = Some(None);
            }
            wake(w.finishers.remove(&id), &mut woke.others);
        }
        Event::Stream(StreamEvent::Stopped(id, code)) => {
            if let Some(outcome) = entry.send_halves.get_mut(&id) {
                *outcome = Some(Some(code));
            }
            wake(w.finishers.remove(&id), &mut woke.others);
            wake(w.writers.remove(&id), &mut woke.others);
        }
        Event::Stream(StreamEvent::Opened(dir)) => {
            woke.others += w.wake(Wait::Accept(dir_index(dir)));
        }
        Event::Stream(StreamEvent::Available(dir)) => {
            woke.others += w.wake(Wait::Open(dir_index(dir)));
        }
        Event::DatagramReceived => woke.readers += w.wake(Wait::DatagramRead),
        Event::DatagramsWritable => woke.others += w.wake(Wait::DatagramWrite),
        Event::ConnectionLost(e) => {
            entry.error = Some(Box::new(e));
            woke.others += w.wake_all();
        }
        Event::Drained => {
            entry.drained = true;
            woke.others += w.wake_all();
        }
    }
    false
}
