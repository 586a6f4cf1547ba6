//! Timers put off while received datagrams wait unread (issue #33).
//!
//! A due PTO (RFC 9002 §6.2) means "no acknowledgment came". When the socket
//! still holds datagrams this side has not read, the acknowledgment may be
//! among them: it came, and only our own backlog hides it. 5 000 connections
//! bursting at once queued a few hundred milliseconds of datagrams at the
//! server; every connection's PTO (~26 ms, from an idle-path RTT) fired from
//! behind that queue, and the probes and their ACKs lengthened it. So while
//! the last read left datagrams in the socket, a due timer waits; it fires
//! once the socket is read empty (by then an ACK read meanwhile has re-armed
//! the PTO, and the protocol's `handle_timeout` checks again), or `MAX_DEFER`
//! after its deadline, so that under sustained overload every timer (idle,
//! ACK delay, keep-alive too) still fires, that much late.

use std::time::{Duration, Instant};

/// Longest a due timer waits for the socket to be read empty: Linux TCP's
/// least retransmission timeout (200 ms), a delay TCP's peers already live
/// with, and far below any idle timeout.
pub(crate) const MAX_DEFER: Duration = Duration::from_millis(200);

/// Timers due at or before the returned instant fire now. `unread`: the
/// last read left datagrams in the socket (or the group inbox).
pub(crate) fn fire_due_before(unread: bool, now: Instant) -> Instant {
    if unread {
        now.checked_sub(MAX_DEFER).unwrap_or(now)
    } else {
        now
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_timers_wait_for_unread_datagrams_within_the_bound() {
        let now = Instant::now() + MAX_DEFER;
        assert_eq!(fire_due_before(false, now), now);
        assert_eq!(fire_due_before(true, now), now - MAX_DEFER);
    }
}
