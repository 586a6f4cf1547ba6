//! The driver's alarm clock: wake the driver task at the protocol's next
//! deadline, on a `timerfd` (tokio's timer wheel only if the kernel refuses
//! one).
//!
//! Not the wheel, for two reasons measured here. It rounds every deadline up
//! to a whole millisecond, which turned pacing gaps of microseconds into
//! milliseconds (a 128 KiB reply on a fresh connection: 1.45 ms instead of
//! 0.4). And a wheel timer sets how long every sleep of the runtime may last:
//! as a deadline nears (and before each 64 ms boundary the wheel crosses on
//! its way to one further out), the runtime sleeps in `epoll_wait` with
//! timeouts of a few milliseconds, shorter than the scheduler's tick, and the
//! kernel reprograms the CPU's timer for each such sleep — on a VM an exit to
//! the host, ≈ 15 µs per sleep. On a `timerfd` the runtime sleeps without a
//! timeout and the kernel's timer for the deadline is set once per arming.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use quark_udp::PreciseTimer;

/// Deadlines closer than this are kept exactly.
const FINE: Duration = Duration::from_millis(2);

/// How late a further deadline may fire (at most an eighth of its wait),
/// rather than re-arming (a system call) for every deadline that moves a
/// little earlier: the wheel's own rounding.
const SLACK: Duration = Duration::from_millis(1);

/// An armed instant this close, before a deadline that has since moved
/// later, is moved to the deadline while the driver is awake anyway: one
/// system call instead of a wake-up for nothing (a timer interrupt, a wake-up
/// and a round: ≈ 40-50 µs of CPU on the lab's VM). On a busy connection the
/// PTO moves with every packet, and its early expiry came once per PTO (≈ 27
/// ms on loopback), landing on whichever request was in flight. A paced
/// sender that sends again before its pacing deadline moves that deadline a
/// little later, and a receiver's delayed-ACK deadline, cleared by an ACK sent
/// on the packet count, comes back later with the next packet: the expiries
/// before them found nothing to do (a fifth of a receiver's and a tenth of a
/// sender's wake-ups at 20 Mbit/s over 30 ms).
const REARM_WITHIN: Duration = Duration::from_millis(5);

pub(crate) struct Wakeup {
    /// None if the kernel refused a timerfd: then the wheel takes everything.
    precise: Option<PreciseTimer>,
    /// The deadline the precise timer was armed for (it fires up to the
    /// slack after it).
    precise_for: Option<Instant>,
    coarse: Option<Pin<Box<tokio::time::Sleep>>>,
    coarse_at: Option<Instant>,
}

impl Wakeup {
    /// Must be called inside the runtime that polls the driver.
    pub(crate) fn new() -> Self {
        Wakeup {
            precise: PreciseTimer::new()
                .inspect_err(|e| tracing::debug!(error = %e, "no precise timer"))
                .ok(),
            precise_for: None,
            coarse: None,
            coarse_at: None,
        }
    }

    /// Wake the task of `cx` at `at` (`None`: no deadline); `now` is the
    /// driver round's clock. An earlier deadline already armed stays armed:
    /// re-arming for every deadline that moves later (each packet sent moves
    /// the PTO) costs more than the odd early wake-up, after which the driver
    /// asks again. So does one armed for the same deadline: its slack was
    /// taken from the whole wait, and asking again with the slack of what is
    /// left re-armed the timer on every round (an ACK-delay deadline 9 ms out
    /// was re-armed ~35 times, once per packet received).
    pub(crate) fn wake_at(&mut self, cx: &mut Context<'_>, now: Instant, at: Option<Instant>) {
        let Some(at) = at else {
            self.coarse_at = None;
            return;
        };
        if let Some(precise) = self.precise.as_mut() {
            let left = at.saturating_duration_since(now);
            let slack = if left < FINE {
                Duration::ZERO
            } else {
                SLACK.min(left / 8)
            };
            // A later instant within the slack lets one wake-up serve the
            // deadlines close behind (the wheel did the same by rounding up).
            // If arming fails, the wheel takes it.
            let served = precise.armed().is_some_and(|a| {
                let early = a < at && a.saturating_duration_since(now) < REARM_WITHIN;
                !early && (a <= at + slack || self.precise_for.is_some_and(|f| f <= at))
            });
            if served || precise.arm(at + slack).is_ok() {
                if !served {
                    self.precise_for = Some(at);
                }
                if precise.poll_expired(cx).is_ready() {
                    cx.waker().wake_by_ref();
                }
                return;
            }
        }
        self.wheel(cx, at);
    }

    /// The timerfd's descriptor (`None` when the wheel takes everything).
    pub(crate) fn timer_fd(&self) -> Option<std::os::fd::RawFd> {
        use std::os::fd::AsRawFd;
        self.precise.as_ref().map(AsRawFd::as_raw_fd)
    }

    fn wheel(&mut self, cx: &mut Context<'_>, at: Instant) {
        let coarse = self
            .coarse
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(at.into())));
        if coarse.is_elapsed() || self.coarse_at.is_none_or(|armed| at < armed) {
            coarse.as_mut().reset(at.into());
            self.coarse_at = Some(at);
        }
        if coarse.as_mut().poll(cx) == Poll::Ready(()) {
            self.coarse_at = None;
            cx.waker().wake_by_ref();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::future::poll_fn;

    use super::*;

    /// Calls `wake_at` from a task with the round's clock at `now`; returns
    /// the instant the timerfd is armed for.
    async fn ask(w: &mut Wakeup, now: Instant, at: Instant) -> Option<Instant> {
        poll_fn(|cx| {
            w.wake_at(cx, now, Some(at));
            Poll::Ready(w.precise.as_ref().unwrap().armed())
        })
        .await
    }

    /// Calls `wake_at` from a task.
    async fn arm(w: &mut Wakeup, at: Instant) {
        poll_fn(|cx| {
            w.wake_at(cx, Instant::now(), Some(at));
            Poll::Ready(())
        })
        .await;
    }

    #[tokio::test]
    async fn deadlines_go_to_the_timerfd_late_by_at_most_the_slack() {
        let mut w = Wakeup::new();
        let armed = |w: &Wakeup| w.precise.as_ref().unwrap().armed();
        let t = Instant::now() + Duration::from_millis(25);
        arm(&mut w, t).await;
        // A far deadline may be served up to a millisecond late, so deadlines
        // close behind it share its wake-up.
        assert_eq!(armed(&w), Some(t + SLACK));
        // The runtime's wheel holds nothing of ours: its sleeps stay unbounded.
        assert!(w.coarse.is_none());
        // Later deadlines (a PTO moved by each packet) keep the armed one.
        arm(&mut w, t + Duration::from_millis(3)).await;
        assert_eq!(armed(&w), Some(t + SLACK));
        // An earlier one that the armed instant would serve too late: re-armed.
        let earlier = t - Duration::from_millis(5);
        arm(&mut w, earlier).await;
        assert_eq!(armed(&w), Some(earlier + SLACK));
        // A nearer deadline's slack is an eighth of its wait.
        let soon = Instant::now() + Duration::from_millis(4);
        arm(&mut w, soon).await;
        let a = armed(&w).unwrap();
        assert!(
            a > soon && a <= soon + Duration::from_millis(4) / 8,
            "{a:?}"
        );
        // Near deadlines are kept exactly.
        let near = Instant::now() + Duration::from_micros(1500);
        arm(&mut w, near).await;
        assert_eq!(armed(&w), Some(near));
        arm(&mut w, near - Duration::from_micros(10)).await;
        assert_eq!(armed(&w), Some(near - Duration::from_micros(10)));
        assert!(w.coarse.is_none());
    }

    /// An armed instant about to expire for a deadline that has moved later is
    /// moved along while the driver is awake, not left to wake it for nothing;
    /// one further out stays armed.
    #[tokio::test]
    async fn an_expiry_that_would_come_too_early_is_moved_when_near() {
        let mut w = Wakeup::new();
        let t0 = Instant::now();
        let pto = t0 + Duration::from_millis(25);
        assert_eq!(ask(&mut w, t0, pto).await, Some(pto + SLACK));
        // Far from the armed instant, a later deadline keeps it.
        let moved = pto + Duration::from_millis(10);
        let now = t0 + Duration::from_millis(10);
        assert_eq!(ask(&mut w, now, moved).await, Some(pto + SLACK));
        // Near it, the timer moves to the later deadline.
        let now = pto - Duration::from_micros(500);
        assert_eq!(ask(&mut w, now, moved).await, Some(moved + SLACK));
        // A deadline within the slack of the armed instant keeps it.
        let now = moved - Duration::from_micros(500);
        let close = moved + Duration::from_micros(800);
        assert_eq!(ask(&mut w, now, close).await, Some(moved + SLACK));
        // A near deadline (a pacer's) kept exactly, then moved a little later
        // by another send: the timer follows, rather than fire before it.
        let now = Instant::now();
        let pace = now + Duration::from_micros(1500);
        assert_eq!(ask(&mut w, now, pace).await, Some(pace));
        let later = pace + Duration::from_micros(150);
        assert_eq!(ask(&mut w, now, later).await, Some(later));
    }

    #[tokio::test]
    async fn the_same_deadline_is_armed_once_as_it_nears() {
        let mut w = Wakeup::new();
        let t0 = Instant::now();
        let at = t0 + Duration::from_millis(9);
        let first = ask(&mut w, t0, at).await;
        assert_eq!(first, Some(at + SLACK));
        // Rounds before it fires ask for the same deadline with less left to
        // wait (so a smaller slack): the armed instant serves them all.
        for ms in [1, 4, 7, 8] {
            let now = t0 + Duration::from_millis(ms);
            assert_eq!(ask(&mut w, now, at).await, first, "{ms} ms");
        }
    }

    #[tokio::test]
    async fn the_task_wakes_at_the_deadline() {
        let mut w = Wakeup::new();
        for wait in [Duration::from_micros(300), Duration::from_millis(12)] {
            let at = Instant::now() + wait;
            let fired = tokio::time::timeout(
                Duration::from_secs(5),
                poll_fn(|cx| {
                    if Instant::now() >= at {
                        return Poll::Ready(());
                    }
                    w.wake_at(cx, Instant::now(), Some(at));
                    Poll::Pending
                }),
            )
            .await;
            assert!(fired.is_ok(), "not woken for a deadline {wait:?} out");
        }
    }
}
