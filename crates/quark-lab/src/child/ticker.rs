//! The client's progress reports, from a thread of their own.
//!
//! Not a task on the measured runtime: a timer there sets how long every
//! sleep of that runtime may last, and sleeps with a timeout shorter than the
//! scheduler's tick cost the kernel a timer reprogramming each (a VM exit
//! here, ≈ 15 µs per sleep). A tokio timer 100 ms out is parked in the
//! wheel's 64 ms level and moved down as its slot comes, so for part of every
//! period the runtime slept with such short timeouts, on every protocol's
//! client.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::{ClientEvent, emit};

/// Emits `Progress` every `every` until dropped.
pub(super) struct Ticker {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Ticker {
    /// `timed`: report milliseconds elapsed instead of requests done.
    pub(super) fn start(progress: Arc<AtomicU64>, timed: bool, every: Duration) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("progress".into())
            .spawn(move || {
                let t = Instant::now();
                let mut next = t + every;
                loop {
                    // Unparked early by `drop`; a spurious wake-up just waits again.
                    std::thread::park_timeout(next.saturating_duration_since(Instant::now()));
                    if flag.load(Relaxed) {
                        return;
                    }
                    if Instant::now() < next {
                        continue;
                    }
                    next += every;
                    let done = if timed {
                        t.elapsed().as_millis() as u64
                    } else {
                        progress.load(Relaxed)
                    };
                    emit(&ClientEvent::Progress { done });
                }
            })
            .ok();
        Ticker { stop, thread }
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, Relaxed);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}
