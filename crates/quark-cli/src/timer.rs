//! A precise async timer. tokio's timers tick in whole milliseconds, too coarse
//! for an emulated 0.1 ms link, so a helper thread sleeps until the deadline
//! (futex timeouts: tens of microseconds late at most) and wakes the task.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::Instant;

use tokio::sync::Notify;

struct Shared {
    deadline: Mutex<Option<Instant>>,
    fired: Notify,
    stop: AtomicBool,
}

/// One-shot timer; the latest `sleep_until` sets the deadline.
pub(crate) struct Timer {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Timer {
    pub(crate) fn new() -> std::io::Result<Timer> {
        let shared = Arc::new(Shared {
            deadline: Mutex::new(None),
            fired: Notify::new(),
            stop: AtomicBool::new(false),
        });
        let s = shared.clone();
        let thread = thread::Builder::new()
            .name("quark-timer".into())
            .spawn(move || run(&s))?;
        Ok(Timer {
            shared,
            thread: Some(thread),
        })
    }

    /// Returns at `at` or a little after (at once if it has passed, possibly
    /// early after an earlier deadline fired unobserved: callers re-check the
    /// time); never for `None`.
    pub(crate) async fn sleep_until(&self, at: Option<Instant>) {
        let Some(at) = at else {
            return std::future::pending().await;
        };
        if at <= Instant::now() {
            return;
        }
        let fired = self.shared.fired.notified();
        if let Ok(mut d) = self.shared.deadline.lock() {
            *d = Some(at);
        }
        if let Some(t) = &self.thread {
            t.thread().unpark();
        }
        fired.await;
    }
}

fn run(s: &Shared) {
    while !s.stop.load(Ordering::Relaxed) {
        let deadline = s.deadline.lock().map(|d| *d).unwrap_or(None);
        match deadline {
            None => thread::park(),
            Some(at) => {
                let now = Instant::now();
                if now >= at {
                    if let Ok(mut d) = s.deadline.lock()
                        && *d == Some(at)
                    {
                        *d = None;
                    }
                    s.fired.notify_one();
                } else {
                    thread::park_timeout(at - now);
                }
            }
        }
    }
}

impl Drop for Timer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}
