//! The driver's alarm clock: wake the driver task at the protocol's next
//! deadline. Deadlines further than [`FINE`] away go to tokio's timer wheel (no
//! system call to arm); nearer ones to a `timerfd`, since the wheel rounds up
//! to whole milliseconds, which turned pacing gaps of microseconds into
//! milliseconds (a 128 KiB reply on a fresh connection: 1.45 ms instead of
//! 0.4).

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use quark_udp::PreciseTimer;

/// Deadlines closer than this go to the precise timer.
const FINE: Duration = Duration::from_millis(2);

pub(crate) struct Wakeup {
    coarse: Pin<Box<tokio::time::Sleep>>,
    coarse_at: Option<Instant>,
    /// None if the kernel refused a timerfd: then the wheel takes everything.
    precise: Option<PreciseTimer>,
}

impl Wakeup {
    /// Must be called inside the runtime that polls the driver.
    pub(crate) fn new() -> Self {
        Wakeup {
            coarse: Box::pin(tokio::time::sleep_until(tokio::time::Instant::now())),
            coarse_at: None,
            precise: PreciseTimer::new()
                .inspect_err(|e| tracing::debug!(error = %e, "no precise timer"))
                .ok(),
        }
    }

    /// Wake the task of `cx` at `at` (`None`: no deadline). An earlier deadline
    /// already armed stays armed: re-arming costs more than the odd early
    /// wake-up, after which the driver asks again.
    pub(crate) fn wake_at(&mut self, cx: &mut Context<'_>, at: Option<Instant>) {
        let Some(at) = at else {
            self.coarse_at = None;
            return;
        };
        if let Some(precise) = self.precise.as_mut()
            && at.saturating_duration_since(Instant::now()) < FINE
            // If arming fails, the wheel takes it.
            && (precise.armed().is_some_and(|a| a <= at) || precise.arm(at).is_ok())
        {
            if precise.poll_expired(cx).is_ready() {
                cx.waker().wake_by_ref();
            }
            return;
        }
        let stale = self.coarse.is_elapsed();
        if stale || self.coarse_at.is_none_or(|armed| at < armed) {
            self.coarse.as_mut().reset(at.into());
            self.coarse_at = Some(at);
        }
        if self.coarse.as_mut().poll(cx) == Poll::Ready(()) {
            self.coarse_at = None;
            cx.waker().wake_by_ref();
        }
    }
}
