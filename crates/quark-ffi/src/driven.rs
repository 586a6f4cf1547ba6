//! Caller-driven endpoints (`QUARK_FLAG_CALLER_DRIVEN`): the caller's own
//! thread runs the endpoint's I/O, timers and protocol work inside
//! `quark_process` (and inside blocking calls while they wait), so no call
//! crosses to the library's runtime thread and back.
//!
//! The endpoint's driver ([`quark::Drive`]) is polled here with a waker that
//! only sets a flag: a call that gives the driver work (a write, a read that
//! frees flow-control credit) costs no system call. The descriptor the caller
//! polls is an epoll set holding the endpoint's UDP socket and the driver's
//! timerfd, both level-triggered. Socket and timer readiness still reach the
//! driver through a tokio reactor: a private current-thread runtime that
//! `quark_process` turns once per call (one `epoll_wait` with no timeout),
//! or, for an endpoint made inside a tokio runtime (a Rust caller such as the
//! lab), that runtime's own reactor.

use std::future::Future;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use quark::Drive;
use tokio::runtime::{Handle as RtHandle, Runtime};

use crate::error::QuarkError;
use crate::nowait::Lingering;
use crate::object::lock;

/// The longest a blocking call sleeps between checks when the reactor is
/// another runtime's (its wake-ups reach us through the flag, this is only
/// a backstop).
const FOREIGN_NAP: Duration = Duration::from_millis(50);

/// A waker that sets a flag and unparks the thread blocked on it, if any;
/// the driver's also calls the caller's hook (`quark_on_work`).
#[derive(Default)]
pub(crate) struct Flag {
    set: AtomicBool,
    sleeper: Mutex<Option<Thread>>,
    has_sleeper: AtomicBool,
    hook: Mutex<Option<Hook>>,
    has_hook: AtomicBool,
}

/// Who else to tell that the endpoint has work.
pub(crate) enum Hook {
    /// A C callback and its argument (an address, passed back unchanged).
    C(extern "C" fn(*mut std::ffi::c_void), usize),
    /// A Rust task (`call::on_work`).
    Waker(Waker),
}

impl Flag {
    fn take(&self) -> bool {
        self.set.swap(false, Ordering::AcqRel)
    }

    fn is_set(&self) -> bool {
        self.set.load(Ordering::SeqCst)
    }
}

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        // Already set: whoever sleeps or hooks was told when it was set, and
        // nobody took it since (most calls of a request find it so).
        if self.set.swap(true, Ordering::SeqCst) {
            return;
        }
        if self.has_sleeper.load(Ordering::SeqCst) {
            if let Some(t) = lock(&self.sleeper).as_ref() {
                t.unpark();
            }
        }
        if self.has_hook.load(Ordering::Acquire) {
            self.call_hook();
        }
    }
}

impl Flag {
    fn call_hook(&self) {
        match lock(&self.hook).as_ref() {
            Some(Hook::C(cb, arg)) => cb(*arg as *mut std::ffi::c_void),
            Some(Hook::Waker(w)) => w.wake_by_ref(),
            None => {}
        }
    }
}

/// The caller-driven part of one endpoint. Fields drop in order: the driver
/// before the runtime whose reactor it is registered with.
pub(crate) struct Driven {
    /// `None` once the driver ended (the endpoint and its connections gone).
    drive: Mutex<Option<Drive>>,
    /// The driver's waker: set when it has work.
    flag: Arc<Flag>,
    waker: Waker,
    /// The last `process` turned the reactor.
    turned: AtomicBool,
    epoll: OwnedFd,
    handle: RtHandle,
    /// `handle`'s runtime, to tell whether the caller already runs inside it.
    rt_id: tokio::runtime::Id,
    /// The private runtime, when the endpoint was not made inside one.
    rt: Option<Runtime>,
    /// Connections closed by `quark_close_nowait` that wait for their
    /// acknowledgments.
    lingering: Lingering,
}

/// A private runtime, or the caller's when it runs inside one.
pub(crate) fn reactor() -> Result<(Option<Runtime>, RtHandle), QuarkError> {
    if let Ok(h) = RtHandle::try_current() {
        return Ok((None, h));
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|_| QuarkError::Io)?;
    let h = rt.handle().clone();
    Ok((Some(rt), h))
}

fn epoll_add(epoll: &OwnedFd, fd: RawFd, flags: u32) -> Result<(), QuarkError> {
    let mut ev = libc::epoll_event {
        events: libc::EPOLLIN as u32 | flags,
        u64: fd as u64,
    };
    // SAFETY: both descriptors are open; `ev` is a valid event for the call.
    let r = unsafe { libc::epoll_ctl(epoll.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) };
    if r < 0 {
        return Err(QuarkError::Io);
    }
    Ok(())
}

impl Driven {
    /// Wrap `drive`, whose endpoint's UDP socket is `socket_fd`.
    pub(crate) fn new(
        drive: Drive,
        socket_fd: RawFd,
        rt: Option<Runtime>,
        handle: RtHandle,
    ) -> Result<Self, QuarkError> {
        // Without a timerfd the driver's deadlines live in the runtime's
        // timer wheel, which no descriptor shows: refuse rather than stall.
        let timer_fd = drive.timer_fd().ok_or(QuarkError::Io)?;
        // SAFETY: plain system call; the result is checked.
        let raw = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if raw < 0 {
            return Err(QuarkError::Io);
        }
        // SAFETY: a descriptor just created and owned by no one else.
        let epoll = unsafe { OwnedFd::from_raw_fd(raw) };
        // The socket level-triggered: the driver reads it until empty before
        // it waits. The timer edge-triggered: the driver reads an expiry only
        // when it next sets a deadline, so level-triggered it could keep
        // reporting one already handled.
        epoll_add(&epoll, socket_fd, 0)?;
        epoll_add(&epoll, timer_fd, libc::EPOLLET as u32)?;
        let flag = Arc::new(Flag::default());
        // The driver has not run yet: its first round registers its wakers.
        flag.set.store(true, Ordering::Release);
        Ok(Driven {
            drive: Mutex::new(Some(drive)),
            waker: Waker::from(flag.clone()),
            flag,
            turned: AtomicBool::new(false),
            epoll,
            rt_id: handle.id(),
            handle,
            rt,
            lingering: Lingering::default(),
        })
    }

    /// Call `hook` whenever the endpoint gets work for `quark_process`.
    pub(crate) fn set_hook(&self, hook: Option<Hook>) {
        self.flag.has_hook.store(hook.is_some(), Ordering::Release);
        *lock(&self.flag.hook) = hook;
        // Work already flagged (the hook hears only of new work): say so now.
        if self.flag.is_set() {
            self.flag.call_hook();
        }
    }

    /// The descriptor the caller polls (`quark_ready_fd`).
    pub(crate) fn fd(&self) -> RawFd {
        self.epoll.as_raw_fd()
    }

    pub(crate) fn enter(&self) -> tokio::runtime::EnterGuard<'_> {
        self.handle.enter()
    }

    /// Wait up to `timeout_ms` (-1: no limit) for the socket or the timer.
    fn wait(&self, timeout_ms: i32) {
        let mut events = [libc::epoll_event { events: 0, u64: 0 }; 2];
        // SAFETY: `events` has room for the 2 events asked for. The timer is
        // left unread: the driver reads it through the reactor (reading it
        // here hid the expiry from the reactor, and a deadline armed once
        // never woke the driver again).
        unsafe { libc::epoll_wait(self.epoll.as_raw_fd(), events.as_mut_ptr(), 2, timeout_ms) };
    }

    /// `quark_process`: run the work calls gave the driver since its last
    /// round; then, unless that left more to do, `woke()` says the caller
    /// has something to handle, or `timeout_ms` is 0, wait up to
    /// `timeout_ms` (-1: no limit) for the socket or the timer and run
    /// another round. Returns whether the driver wants another round soon.
    ///
    /// Waiting even after a round with work matters: a write retried while
    /// the peer's window is closed gives the driver work (it may owe a
    /// *_BLOCKED frame) every time, and a loop that retries its handles
    /// before each wait would never sleep.
    pub(crate) fn process(
        &self,
        timeout_ms: i32,
        woke: impl Fn() -> bool,
    ) -> Result<bool, QuarkError> {
        let mut drive = lock(&self.drive);
        if self.flag.is_set() {
            // A round with work right after one that turned the reactor
            // needs no new readiness: skip that system call then, but only
            // then, or calls that keep giving the driver work would hide the
            // socket from it (a window update never read).
            if !self.turned.swap(false, Ordering::Relaxed) {
                self.turn();
            }
            let more = self.round(&mut drive);
            if more || timeout_ms == 0 || woke() {
                return Ok(more);
            }
        }
        if timeout_ms != 0 {
            match &self.rt {
                Some(_) => self.wait(timeout_ms),
                None => {
                    // Another runtime's reactor wakes the driver's flag.
                    let nap = u64::try_from(timeout_ms).map_or(FOREIGN_NAP, Duration::from_millis);
                    self.sleep_foreign(nap.min(FOREIGN_NAP), None);
                }
            }
        }
        self.turn();
        Ok(self.round(&mut drive))
    }

    /// Turn the private runtime's reactor once, without waiting: socket and
    /// timer readiness reach the driver's wakers.
    fn turn(&self) {
        if let Some(rt) = &self.rt {
            rt.block_on(tokio::task::yield_now());
            self.turned.store(true, Ordering::Relaxed);
        }
    }

    /// One poll of the driver; whether it wants another soon.
    fn round(&self, drive: &mut Option<Drive>) -> bool {
        let Some(d) = drive.as_mut() else {
            return false;
        };
        // A caller already inside the endpoint's runtime (a Rust task, as the
        // lab's) needs no entering: that costs ~100 instructions a round,
        // the check ~30.
        let inside =
            self.rt.is_none() && RtHandle::try_current().is_ok_and(|h| h.id() == self.rt_id);
        let _guard = (!inside).then(|| self.enter());
        self.flag.take();
        let polled = d.poll(&mut Context::from_waker(&self.waker));
        // A close queued here sets the flag: the caller runs another round.
        self.lingering.sweep();
        match polled {
            Poll::Ready(()) => {
                *drive = None;
                false
            }
            Poll::Pending => self.flag.is_set(),
        }
    }

    /// `quark_close_nowait` of a connection with data not yet acknowledged:
    /// a later round closes it (`Lingering::sweep`).
    pub(crate) fn linger_later(&self, conn: quark::Connection) {
        self.lingering.push(conn);
    }

    /// Drive the endpoint on this thread until `fut` completes, or until
    /// `deadline` (then `None`).
    pub(crate) fn block_on<F: Future>(
        &self,
        fut: F,
        deadline: Option<Instant>,
    ) -> Option<F::Output> {
        let mut fut = std::pin::pin!(fut);
        let me = Arc::new(Flag::default());
        let waker = Waker::from(me.clone());
        let mut more = true;
        loop {
            {
                let _guard = self.enter();
                if let Poll::Ready(v) = fut.as_mut().poll(&mut Context::from_waker(&waker)) {
                    return Some(v);
                }
            }
            let left = match deadline {
                Some(d) => match d.checked_duration_since(Instant::now()) {
                    Some(left) => Some(left),
                    None => return None,
                },
                None => None,
            };
            if me.take() {
                continue;
            }
            let timeout_ms = match (more, left) {
                (true, _) => 0,
                (false, None) => -1,
                (false, Some(l)) => i32::try_from(l.as_millis() + 1).unwrap_or(i32::MAX),
            };
            if self.rt.is_none() && !more {
                // Another runtime's reactor wakes the driver's flag: sleep on it.
                self.sleep_foreign(left.unwrap_or(FOREIGN_NAP).min(FOREIGN_NAP), Some(&me));
                more = self.process(0, || false).ok()?;
                continue;
            }
            more = self.process(timeout_ms, || me.is_set()).ok()?;
        }
    }

    /// Park until the driver's flag or `me` is set, or `nap` passes.
    fn sleep_foreign(&self, nap: Duration, me: Option<&Arc<Flag>>) {
        let flags: Vec<&Arc<Flag>> = std::iter::once(&self.flag).chain(me).collect();
        for f in &flags {
            *lock(&f.sleeper) = Some(std::thread::current());
            f.has_sleeper.store(true, Ordering::SeqCst);
        }
        if !flags.iter().any(|f| f.is_set()) {
            std::thread::park_timeout(nap);
        }
        for f in &flags {
            f.has_sleeper.store(false, Ordering::SeqCst);
            *lock(&f.sleeper) = None;
        }
    }
}
