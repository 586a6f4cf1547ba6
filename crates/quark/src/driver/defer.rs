//! The loss-detection timer put off while received datagrams wait unread
//! (issue #33).
//!
//! A due PTO (RFC 9002 §6.2) means "no acknowledgment came". When the socket
//! still holds datagrams this side has not read, the acknowledgment may be
//! among them: it came, and only our own backlog hides it. 5 000 connections
//! bursting at once queued a few hundred milliseconds of datagrams at the
//! server; every connection's PTO (~26 ms, from an idle-path RTT) fired from
//! behind that queue, and the probes and their ACKs lengthened it. So while
//! the last read left datagrams in the socket, a due loss-detection timer
//! waits; it fires once the socket is read empty (by then an ACK read
//! meanwhile has re-armed it, and the protocol's `handle_timeout` checks
//! again), or `MAX_DEFER` after its deadline. Only that timer: the idle,
//! ACK-delay, pacing and keep-alive timers do not depend on what the socket
//! holds, and holding them (as the first version did) delayed our own ACKs
//! and paced packets on busy connections.

use std::time::{Duration, Instant};

/// Longest a due loss-detection timer waits for the socket to be read empty:
/// Linux TCP's least retransmission timeout (200 ms), a delay TCP's peers
/// already live with.
pub(crate) const MAX_DEFER: Duration = Duration::from_millis(200);

/// Whether a connection's due timers may wait, given its
/// `Connection::poll_timeouts()` (others, loss detection) and that the last
/// read left datagrams unread: only when the loss-detection timer alone is
/// due, and for less than `MAX_DEFER`. Returns when to look again: the
/// earlier of its next other timer and the bound.
pub(crate) fn hold_until(
    (others, loss): (Option<Instant>, Option<Instant>),
    now: Instant,
) -> Option<Instant> {
    let loss = loss.filter(|&t| t <= now)?;
    let bound = loss + MAX_DEFER;
    if bound <= now || others.is_some_and(|t| t <= now) {
        return None;
    }
    Some(others.map_or(bound, |t| t.min(bound)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_due_loss_timer_waits_within_the_bound() {
        let t0 = Instant::now();
        let ms = |n: u64| t0 + Duration::from_millis(n);
        let now = ms(1_000);
        // Loss timer due 10 ms ago, nothing else due: look again at the
        // bound, or at the next other timer if sooner.
        assert_eq!(hold_until((None, Some(ms(990))), now), Some(ms(1_190)));
        assert_eq!(
            hold_until((Some(ms(1_020)), Some(ms(990))), now),
            Some(ms(1_020))
        );
        // Another timer (an ACK delay, the idle timeout) due: fire now.
        assert_eq!(hold_until((Some(ms(1_000)), Some(ms(990))), now), None);
        // Past the bound, or no loss timer due: fire now.
        assert_eq!(hold_until((None, Some(ms(800))), now), None);
        assert_eq!(hold_until((Some(ms(999)), Some(ms(1_001))), now), None);
        assert_eq!(hold_until((Some(ms(999)), None), now), None);
    }
}
