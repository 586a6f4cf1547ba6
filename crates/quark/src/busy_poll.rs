//! Busy polling: after a round of work, the driver keeps polling the socket
//! for a short window instead of sleeping in `epoll_wait`.
//!
//! On this kind of machine the round trip of a small request is dominated by
//! waking a sleeping thread (and, in a VM, an idle vCPU): a blocking UDP
//! ping-pong on loopback takes 20–45 µs, a spinning one 5 µs. The kernel offers
//! the same trade for NAPI devices (`net.core.busy_poll`), which loopback is
//! not, so the stack does it itself: latency for CPU, only while traffic flows
//! (an idle endpoint sleeps once the window has passed). Off by default.
//!
//! The window must cover the peer's whole turn (its processing plus the round
//! trip), with room to spare: once one gap outlasts it, this side sleeps, its
//! wake-up makes the peer's next gap longer than the peer's window, and the
//! two keep waking each other up for many exchanges. With 32 KiB requests on
//! loopback (≈ 37 µs each) a 50 µs window fell into that for runs of dozens of
//! requests (p99 120 µs); 200 µs did not (p99 62 µs).

use std::time::{Duration, Instant};

/// The driver's busy-poll state. The window itself is the endpoint's setting
/// (`Endpoint::set_busy_poll`), passed in, so a change takes effect at once.
#[derive(Debug, Default)]
pub(crate) struct BusyPoll {
    /// Poll until then (set by work, cleared when it passes).
    until: Option<Instant>,
}

impl BusyPoll {
    /// Whether this round polls the socket without waiting for readiness.
    pub(crate) fn active(&self) -> bool {
        self.until.is_some()
    }

    /// The driver has nothing more to do now; `worked` says whether this poll
    /// did anything, `window` how long to keep polling after work (zero: off).
    /// Returns true to poll again at once instead of sleeping.
    pub(crate) fn keep_polling(&mut self, now: Instant, worked: bool, window: Duration) -> bool {
        if worked && !window.is_zero() {
            self.until = Some(now + window);
        }
        match self.until {
            Some(until) if now < until && !window.is_zero() => true,
            _ => {
                self.until = None;
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_by_default_and_when_zero() {
        let now = Instant::now();
        let (off, on) = (Duration::ZERO, Duration::from_micros(50));
        let mut b = BusyPoll::default();
        assert!(!b.keep_polling(now, true, off));
        assert!(b.keep_polling(now, true, on));
        // Switched off while polling: sleeps at the next chance.
        assert!(!b.keep_polling(now, false, off));
        assert!(!b.active());
        assert!(!b.keep_polling(now, true, off));
    }

    #[test]
    fn polls_for_the_window_after_the_last_work_then_sleeps() {
        let t0 = Instant::now();
        let us = Duration::from_micros;
        let w = us(50);
        let mut b = BusyPoll::default();
        // Nothing happened yet: sleep.
        assert!(!b.keep_polling(t0, false, w));
        assert!(b.keep_polling(t0, true, w));
        assert!(b.active());
        assert!(b.keep_polling(t0 + us(49), false, w));
        // Work extends the window.
        assert!(b.keep_polling(t0 + us(40), true, w));
        assert!(b.keep_polling(t0 + us(89), false, w));
        assert!(!b.keep_polling(t0 + us(90), false, w));
        assert!(!b.active());
        assert!(!b.keep_polling(t0 + us(91), false, w));
    }
}
