//! Waiting for libquark handles the way a C event loop does: every handle is
//! non-blocking, a call that gives `QUARK_ERROR_AGAIN` waits for its handle
//! to come off the endpoint's ready list (`quark_ready`), and one task per
//! endpoint runs the caller-driven endpoint (`quark_process`) when
//! `quark_on_work` says so, and hands each listed handle to whoever waits
//! for it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::{Mutex, MutexGuard};
use std::task::{Context, Poll, Wake, Waker};

use quark_ffi::{QuarkError, call};
use tokio::task::JoinHandle;

/// `QUARK_ERROR_AGAIN` as the calls return it.
pub(crate) const AGAIN: i64 = QuarkError::Again as i64;

/// A negative return code as an error.
pub(crate) fn check(what: &str, code: i64) -> anyhow::Result<i64> {
    if code < 0 {
        anyhow::bail!("{what}: {} ({code})", call::strerror(code));
    }
    Ok(code)
}

#[derive(Default)]
struct Slot {
    /// The handle this slot is for (0: free).
    handle: i64,
    /// Listed while nobody waited: the next wait returns at once.
    ready: bool,
    /// Listings that woke waiters: a waiter returns once it changed.
    epoch: u64,
    /// Who waits: one task, nearly always (no allocation per handle).
    waiter: Option<Waker>,
    others: Vec<Waker>,
}

/// The handles of one libquark endpoint that this process waits on. Only
/// registered handles get a slot (the ones this side opened and has not
/// closed), so the slots are bounded by the open handles.
#[derive(Default)]
pub(crate) struct Ready {
    slots: Mutex<Slots>,
}

/// Per-handle state in an array indexed by the handle's table slot, as a C
/// loop indexes its per-descriptor state by fd: no hashing per lookup. The
/// array is as long as the highest slot registered (libquark bounds them).
#[derive(Default)]
struct Slots(Vec<Slot>);

impl Slots {
    fn get_mut(&mut self, handle: i64) -> Option<&mut Slot> {
        self.0
            .get_mut(call::handle_index(handle))
            .filter(|s| s.handle == handle)
    }

    fn insert(&mut self, handle: i64) {
        let i = call::handle_index(handle);
        if self.0.len() <= i {
            self.0.resize_with(i + 1, Slot::default);
        }
        let s = &mut self.0[i];
        // A free slot is at its defaults: only the handle changes (no
        // waker or Vec to drop and rebuild).
        if s.handle != 0 {
            *s = Slot::default();
        }
        s.handle = handle;
    }

    fn remove(&mut self, handle: i64) {
        if let Some(s) = self.get_mut(handle) {
            s.handle = 0;
            s.ready = false;
            s.waiter = None;
            s.others.clear();
        }
    }
}

impl Ready {
    fn lock(&self) -> MutexGuard<'_, Slots> {
        // parking_lot's: no poisoning to check at each of the several
        // locks a request takes.
        self.slots.lock()
    }

    /// Gives `handle` (non-blocking from the start: the endpoints'
    /// `QUARK_FLAG_NONBLOCKING`) a slot, before its first call (a listing
    /// for a handle without a slot is dropped).
    pub(crate) fn register(&self, handle: i64) {
        self.lock().insert(handle);
    }

    pub(crate) fn unregister(&self, handle: i64) {
        self.lock().remove(handle);
    }

    /// Wakes whoever waits for each of `handles` (the listed ones), under
    /// one lock.
    fn notify(&self, handles: &[i64]) {
        let mut slots = self.lock();
        for &handle in handles {
            let Some(slot) = slots.get_mut(handle) else {
                continue;
            };
            match slot.waiter.take() {
                None => slot.ready = true,
                Some(w) => {
                    slot.epoch += 1;
                    // Under the lock: a tokio waker only schedules its task.
                    w.wake();
                    for w in slot.others.drain(..) {
                        w.wake();
                    }
                }
            }
        }
    }

    /// `seen`: the epoch when this wait started (`None` before its first poll).
    fn poll_wait(&self, handle: i64, seen: &mut Option<u64>, cx: &mut Context<'_>) -> Poll<()> {
        let mut slots = self.lock();
        let Some(slot) = slots.get_mut(handle) else {
            // Closed meanwhile: the retried call reports it.
            return Poll::Ready(());
        };
        match *seen {
            None if std::mem::take(&mut slot.ready) => return Poll::Ready(()),
            None => *seen = Some(slot.epoch),
            Some(e) if e != slot.epoch => return Poll::Ready(()),
            Some(_) => {}
        }
        match &slot.waiter {
            None => slot.waiter = Some(cx.waker().clone()),
            Some(w) if w.will_wake(cx.waker()) => {}
            Some(_) => {
                if !slot.others.iter().any(|w| w.will_wake(cx.waker())) {
                    slot.others.push(cx.waker().clone());
                }
            }
        }
        Poll::Pending
    }

    /// Runs `call` until it gives something else than `QUARK_ERROR_AGAIN`,
    /// waiting for `handle` to be listed ready between tries (edge-triggered:
    /// a call always comes first, so nothing listed before is missed).
    pub(crate) async fn retry(&self, handle: i64, mut call: impl FnMut() -> i64) -> i64 {
        loop {
            let r = call();
            if r != AGAIN {
                return r;
            }
            let mut seen = None;
            std::future::poll_fn(|cx| self.poll_wait(handle, &mut seen, cx)).await;
        }
    }
}

/// Runs `handle`'s caller-driven endpoint on this runtime and hands the
/// listed handles to `ready`, until the endpoint's handles are gone or it is
/// stopped. It sleeps on `quark_on_work`, which says when a call gave the
/// endpoint work or, the endpoint being made inside this runtime, when its
/// reactor saw the endpoint's socket or timer ready; then it calls
/// `quark_process_ready` (`quark_process` and the first of `quark_ready` in
/// one call) and drains the rest of the ready list, until the endpoint is idle,
/// letting the woken tasks make their calls in between. `quark_ready_fd`
/// (what a C loop polls) is not watched as well: it reports the same
/// readiness a second time, through a second registration per wake-up.
pub(crate) fn watch(handle: i64, ready: Arc<Ready>) -> anyhow::Result<JoinHandle<()>> {
    let work = Arc::new(WorkFlag::default());
    call::on_work(handle, Waker::from(work.clone()))
        .map_err(|e| check("quark_on_work", e).unwrap_err())?;
    Ok(tokio::spawn(async move {
        let mut listed = [0i64; 64];
        loop {
            // Work given before this round, the round does.
            work.pending.store(false, Ordering::SeqCst);
            // The round and the first of the ready list in one call.
            let Ok((mut n, more)) = call::process_ready(handle, 0, &mut listed) else {
                return;
            };
            loop {
                // A round that listed nothing (one that only took
                // acknowledgments, say) wakes nobody: no lock.
                if n > 0 {
                    ready.notify(&listed[..n]);
                }
                if n < listed.len() {
                    break;
                }
                match usize::try_from(call::ready(handle, &mut listed)) {
                    Ok(m) => n = m,
                    Err(_) => return,
                }
            }
            if !more {
                std::future::poll_fn(|cx| work.poll_wait(cx)).await;
                if work.from_task.swap(false, Ordering::Relaxed) {
                    // A task's call woke this one, which tokio then runs
                    // next (its LIFO slot), ahead of the tasks woken with
                    // it: processing now would send their connections'
                    // acknowledgments alone, and their requests or
                    // answers in packets of their own right after. Let
                    // them make their calls first (at 144 connections
                    // this was ~0.25 more packets per request than quic).
                    behind_woken().await;
                }
            } else {
                // The endpoint holds its answer for the tasks just woken:
                // let them make their calls first.
                behind_woken().await;
            }
        }
    }))
}

/// Runs again once the tasks already woken have run: rescheduled at the
/// back of the run queue. Not `tokio::task::yield_now`, which waits for the
/// reactor too: one more `epoll_wait` per request.
async fn behind_woken() {
    let mut again = false;
    std::future::poll_fn(|cx| {
        if std::mem::replace(&mut again, true) {
            return Poll::Ready(());
        }
        cx.waker().wake_by_ref();
        Poll::Pending
    })
    .await;
}

/// The waker `quark_on_work` calls: the endpoint has work for the watcher.
#[derive(Default)]
struct WorkFlag {
    pending: AtomicBool,
    /// The last wake came from a running task (not the reactor).
    from_task: AtomicBool,
    waiter: Mutex<Option<Waker>>,
}

impl WorkFlag {
    fn poll_wait(&self, cx: &mut Context<'_>) -> Poll<()> {
        if self.pending.swap(false, Ordering::SeqCst) {
            return Poll::Ready(());
        }
        *self.waiter.lock() = Some(cx.waker().clone());
        // Set between the check and the registration: not lost.
        if self.pending.swap(false, Ordering::SeqCst) {
            return Poll::Ready(());
        }
        Poll::Pending
    }
}

impl Wake for WorkFlag {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if !self.pending.swap(true, Ordering::SeqCst) {
            let waiter = self.waiter.lock().take();
            if let Some(w) = waiter {
                self.from_task
                    .store(tokio::task::try_id().is_some(), Ordering::Relaxed);
                w.wake();
            }
        }
    }
}

/// Stops a [`watch`] task before its handle is closed.
pub(crate) async fn stop(task: JoinHandle<()>) {
    task.abort();
    let _ = task.await;
}
