//! Adaptive reordering thresholds, RACK-style (RFC 8985 ideas applied to RFC 9002).
//!
//! Both thresholds start at the RFC 9002 values. A spurious loss — a packet declared
//! lost and acknowledged afterwards — shows that the path reorders. Packet counting
//! then stops and the time threshold alone declares losses, as RACK does: a
//! reordering delay is a fixed time while its depth in packets grows with the
//! sending rate, so a packet threshold raised to the depth seen falls behind again
//! every time slow start doubles the rate. If the late packet also came later than
//! the time threshold allowed, the time threshold rises to its age in RTTs + 1/8
//! (at most [`MAX_TIME_THRESHOLD`]). Every [`DECAY_ROUNDS`] round trips without a
//! spurious loss, the thresholds move back toward what the reordering seen in
//! those rounds needs: counting resumes at the initial threshold once no packet
//! came that far behind, and the time threshold moves halfway toward the larger
//! of its initial value and the delays seen. A path that stops reordering gets
//! its fast loss detection back; one that keeps reordering keeps time-only
//! detection.
//!
//! While both thresholds sit at their initial values (every in-order path) none of
//! this bookkeeping runs: [`Reordering::raised`] is false and the ACK path does no
//! extra per-packet work.
//
//= https://www.rfc-editor.org/rfc/rfc9002#section-6.1.1
//# Algorithms that increase the reordering threshold after spuriously
//# detecting losses, such as RACK [RFC8985], have proven to be useful in
//# TCP and are expected to be at least as useful in QUIC.
//
//= https://www.rfc-editor.org/rfc/rfc9002#section-6.1.2
//# Implementations MAY experiment with absolute thresholds, thresholds
//# from previous connections, adaptive thresholds, or the including of
//# RTT variation.

/// The packet threshold once the path was seen to reorder: packet counting is
/// off and the time threshold alone declares losses.
//= https://www.rfc-editor.org/rfc/rfc8985#section-6.2
//# RACK ... uses a time-based reordering window instead of a packet count
pub(super) const PACKET_THRESHOLD_OFF: u64 = u64::MAX;

/// Time threshold ceiling, in RTTs.
pub(super) const MAX_TIME_THRESHOLD: f64 = 2.0;

/// Round trips without a spurious loss before the thresholds decay one step.
//= https://www.rfc-editor.org/rfc/rfc8985#section-6.2
//# /* Grow the reordering window per round that sees DSACK.
//# Reset the window after 16 DSACK-free recoveries */
pub(super) const DECAY_ROUNDS: u32 = 16;

/// Margin added to an observed reordering delay, in RTTs (kTimeThreshold's 1/8).
const TIME_MARGIN: f64 = 1.0 / 8.0;

/// The packet and time reordering thresholds and what adapts them.
#[derive(Debug)]
pub(super) struct Reordering {
    adaptive: bool,
    base_packet: u64,
    base_time: f64,
    /// Current packet threshold (kPacketThreshold while not raised).
    packet: u64,
    /// Current time threshold in RTTs (kTimeThreshold while not raised).
    time: f64,
    /// The current round ends when a Data packet above this is acknowledged.
    round_end: Option<u64>,
    /// Rounds completed in the current decay epoch.
    rounds: u32,
    /// A spurious loss happened in this epoch: no decay at its end.
    epoch_spurious: bool,
    /// Largest reordering distance and delay (RTTs) seen in this epoch.
    epoch_distance: u64,
    epoch_time: f64,
}

impl Reordering {
    pub(super) fn new(packet: u64, time: f64, adaptive: bool) -> Self {
        Reordering {
            adaptive,
            base_packet: packet,
            base_time: time,
            packet,
            time,
            round_end: None,
            rounds: 0,
            epoch_spurious: false,
            epoch_distance: 0,
            epoch_time: 0.0,
        }
    }

    /// Current packet threshold.
    pub(super) fn packet(&self) -> u64 {
        self.packet
    }

    /// Current time threshold, in RTTs.
    pub(super) fn time(&self) -> f64 {
        self.time
    }

    /// Either threshold is above its initial value (and there is something to decay).
    pub(super) fn raised(&self) -> bool {
        self.packet > self.base_packet || self.time > self.base_time
    }

    /// A packet declared lost was acknowledged after all: it arrived `distance`
    /// packet numbers behind the largest acknowledged before it, `age` RTTs after
    /// it was sent.
    pub(super) fn on_spurious(&mut self, distance: u64, age: f64) {
        if !self.adaptive {
            return;
        }
        if !self.raised() {
            // Start counting rounds for the decay from here.
            self.round_end = None;
            self.rounds = 0;
        }
        self.epoch_spurious = true;
        self.on_reordered(distance, age);
        self.packet = PACKET_THRESHOLD_OFF;
        // Only when the late packet came later than the time threshold allows:
        // one declared lost by the packet threshold is about one RTT old.
        if age.is_finite() && age > self.time {
            self.time = (age + TIME_MARGIN).min(MAX_TIME_THRESHOLD);
        }
    }

    /// A packet was acknowledged `distance` packet numbers below the largest
    /// acknowledged before it, `age` RTTs after it was sent, without having been
    /// declared lost. Only matters while raised (it holds the decay back).
    pub(super) fn on_reordered(&mut self, distance: u64, age: f64) {
        self.epoch_distance = self.epoch_distance.max(distance);
        if age.is_finite() && age > self.epoch_time {
            self.epoch_time = age;
        }
    }

    /// A Data-space ACK advanced the largest acknowledged to `largest_acked`; the
    /// largest packet number sent so far is `largest_sent`. Call only while raised.
    pub(super) fn on_data_ack(&mut self, largest_acked: u64, largest_sent: u64) {
        match self.round_end {
            Some(end) if largest_acked <= end => return,
            Some(_) => self.rounds += 1,
            None => {}
        }
        self.round_end = Some(largest_sent);
        if self.rounds < DECAY_ROUNDS {
            return;
        }
        if !self.epoch_spurious {
            self.decay();
        }
        self.rounds = 0;
        self.epoch_spurious = false;
        self.epoch_distance = 0;
        self.epoch_time = 0.0;
    }

    /// Move the thresholds back toward what the epoch's reordering needs.
    fn decay(&mut self) {
        // Counting at the initial threshold would have declared a packet this
        // far behind lost: stay with the time threshold alone.
        if self.epoch_distance < self.base_packet {
            self.packet = self.base_packet;
        }
        let needed = if self.epoch_time > self.base_time {
            (self.epoch_time + TIME_MARGIN).min(MAX_TIME_THRESHOLD)
        } else {
            self.base_time
        };
        let floor = self.base_time.max(needed);
        if self.time > floor {
            let half = (self.time - floor) / 2.0;
            // Snap the last sliver so the cheap path comes back.
            self.time = if half < 1.0 / 64.0 {
                floor
            } else {
                floor + half
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE_TIME: f64 = 9.0 / 8.0;

    fn rounds(r: &mut Reordering, n: u32, next: &mut u64) {
        for _ in 0..n {
            r.on_data_ack(*next, *next + 10);
            *next += 11;
        }
    }

    #[test]
    fn a_spurious_loss_turns_packet_counting_off() {
        let mut r = Reordering::new(3, BASE_TIME, true);
        assert!(!r.raised());
        r.on_spurious(5, 1.0);
        assert_eq!((r.packet(), r.time()), (PACKET_THRESHOLD_OFF, BASE_TIME));
        assert!(r.raised());
        r.on_spurious(1000, 1.5);
        assert_eq!((r.packet(), r.time()), (PACKET_THRESHOLD_OFF, 1.625));
        r.on_spurious(1, 30.0);
        assert_eq!(r.time(), MAX_TIME_THRESHOLD);
    }

    #[test]
    fn counting_resumes_after_an_epoch_without_reordering() {
        let mut r = Reordering::new(3, BASE_TIME, true);
        r.on_spurious(200, 1.1);
        let mut next = 0;
        rounds(&mut r, DECAY_ROUNDS + 1, &mut next);
        assert_eq!(
            r.packet(),
            PACKET_THRESHOLD_OFF,
            "no decay in the epoch of the loss"
        );
        rounds(&mut r, DECAY_ROUNDS, &mut next);
        assert_eq!(r.packet(), 3);
    }

    #[test]
    fn fixed_thresholds_never_move() {
        let mut r = Reordering::new(3, BASE_TIME, false);
        r.on_spurious(20, 1.9);
        assert_eq!((r.packet(), r.time()), (3, BASE_TIME));
        assert!(!r.raised());
    }

    #[test]
    fn decays_slowly_back_to_the_initial_values() {
        let mut r = Reordering::new(3, BASE_TIME, true);
        r.on_spurious(40, 2.0);
        let mut next = 0;
        // The epoch with the spurious loss does not decay.
        rounds(&mut r, DECAY_ROUNDS + 1, &mut next);
        assert_eq!((r.packet(), r.time()), (PACKET_THRESHOLD_OFF, 2.0));
        rounds(&mut r, DECAY_ROUNDS, &mut next);
        assert_eq!(r.packet(), 3);
        let halfway = (2.0 + BASE_TIME) / 2.0;
        assert!((r.time() - halfway).abs() < 1e-9, "{}", r.time());
        for _ in 0..10 {
            rounds(&mut r, DECAY_ROUNDS, &mut next);
        }
        assert_eq!((r.packet(), r.time()), (3, BASE_TIME));
        assert!(!r.raised());
    }

    #[test]
    fn ongoing_reordering_keeps_counting_off() {
        let mut r = Reordering::new(3, BASE_TIME, true);
        r.on_spurious(9, 1.0);
        let mut next = 0;
        for _ in 0..20 {
            // Reordering by 3 keeps happening: counting at 3 would misfire.
            r.on_reordered(3, 1.0);
            rounds(&mut r, DECAY_ROUNDS, &mut next);
        }
        assert_eq!(r.packet(), PACKET_THRESHOLD_OFF);
        // By 2 it would not.
        for _ in 0..2 {
            r.on_reordered(2, 1.0);
            rounds(&mut r, DECAY_ROUNDS, &mut next);
        }
        assert_eq!(r.packet(), 3);
    }

    #[test]
    fn a_round_needs_a_packet_sent_after_it_began() {
        let mut r = Reordering::new(3, BASE_TIME, true);
        r.on_spurious(9, 1.0);
        // ACKs that don't pass the round's end don't count as rounds.
        for _ in 0..1000 {
            r.on_data_ack(5, 100);
        }
        r.on_data_ack(101, 200);
        assert_eq!(r.rounds, 1);
    }
}
