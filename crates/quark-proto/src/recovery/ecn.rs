//! ECN validation (RFC 9000 §13.4.2, the algorithm of Appendix A.4).
//!
//! The path starts in `Testing`: the first [`TEST_PACKETS`] packets (or those sent
//! within three PTOs) are marked ECT(0). Then marking pauses (`Unknown`) until an
//! ACK whose counts validate shows marked packets arriving marked (`Capable`), and
//! marking resumes. Counts that fail validation at any time, or all marked packets
//! lost, turn ECN off for the path (`Failed`).
//
//= https://www.rfc-editor.org/rfc/rfc9000#section-13.4.2
//# If an endpoint has cause to expect that IP packets with an ECT
//# codepoint might be dropped by a faulty network element, the endpoint
//# could set an ECT codepoint for only the first ten outgoing packets on
//# a path, or for a period of three PTOs (see Section 6.2 of
//# [QUIC-RECOVERY]).  If all packets marked with non-zero ECN codepoints
//# are subsequently lost, it can disable marking on the assumption that
//# the marking caused the loss.

use std::time::{Duration, Instant};

use crate::frame::EcnCounts;
use crate::types::EcnCodepoint;

/// Marked packets sent while testing.
pub(super) const TEST_PACKETS: u64 = 10;

/// Where ECN validation of the path stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EcnState {
    /// Marking a first few packets to see what the path does with them.
    Testing,
    /// Testing is over; waiting for an ACK that shows marks arriving.
    Unknown,
    /// Validated: packets are marked ECT(0).
    Capable,
    /// Validation failed (or ECN is off): packets are not marked.
    Failed,
}

/// Per-path ECN validation state, with counts per packet number space.
#[derive(Debug)]
pub(super) struct EcnValidator {
    state: EcnState,
    /// When the first marked packet of the testing period was sent.
    test_start: Option<Instant>,
    test_sent: u64,
    /// Marked packets sent / acknowledged / declared lost since testing began.
    marked_sent: u64,
    marked_acked: u64,
    marked_lost: u64,
    /// Per space: ECT(0) and ECT(1) packets ever sent.
    sent: [[u64; 2]; 3],
    /// Per space: the counts of the last ACK that passed validation.
    counts: [EcnCounts; 3],
}

/// What one ACK's ECN counts say.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct EcnOutcome {
    /// The CE count rose, in counts that validated.
    pub(super) ce_increase: bool,
    /// This ACK made validation fail.
    pub(super) failed: bool,
}

impl EcnValidator {
    pub(super) fn new(enabled: bool) -> Self {
        EcnValidator {
            state: if enabled {
                EcnState::Testing
            } else {
                EcnState::Failed
            },
            test_start: None,
            test_sent: 0,
            marked_sent: 0,
            marked_acked: 0,
            marked_lost: 0,
            sent: [[0; 2]; 3],
            counts: [EcnCounts::default(); 3],
        }
    }

    pub(super) fn state(&self) -> EcnState {
        self.state
    }

    /// The codepoint to mark packets with now.
    pub(super) fn codepoint(&self) -> Option<EcnCodepoint> {
        //= https://www.rfc-editor.org/rfc/rfc9000#appendix-A.4
        //# On paths with a "testing" or "capable" state, the endpoint sends
        //# packets with an ECT marking -- ECT(0) by default; otherwise, the
        //# endpoint sends unmarked packets.
        match self.state {
            EcnState::Testing | EcnState::Capable => Some(EcnCodepoint::Ect0),
            EcnState::Unknown | EcnState::Failed => None,
        }
    }

    /// Start validating again (a new path, or a retry after failure).
    pub(super) fn restart(&mut self) {
        //= https://www.rfc-editor.org/rfc/rfc9000#section-13.4.2.2
        //# Even if validation fails, an endpoint MAY revalidate ECN for the same
        //# path at any later time in the connection.
        self.state = EcnState::Testing;
        self.test_start = None;
        self.test_sent = 0;
        self.marked_sent = 0;
        self.marked_acked = 0;
        self.marked_lost = 0;
    }

    /// A packet was sent in `space` with `ecn`; `pto` is the current PTO period.
    pub(super) fn on_sent(
        &mut self,
        now: Instant,
        space: usize,
        ecn: Option<EcnCodepoint>,
        pto: Duration,
    ) {
        let index = match ecn {
            Some(EcnCodepoint::Ect0) => 0,
            Some(EcnCodepoint::Ect1) => 1,
            // CE is never sent; unmarked packets validate nothing.
            Some(EcnCodepoint::Ce) | None => return,
        };
        self.sent[space][index] += 1;
        self.marked_sent += 1;
        if self.state != EcnState::Testing {
            return;
        }
        let start = *self.test_start.get_or_insert(now);
        self.test_sent += 1;
        let expired = start
            .checked_add(pto.saturating_mul(3))
            .is_some_and(|end| now >= end);
        if self.test_sent >= TEST_PACKETS || expired {
            //= https://www.rfc-editor.org/rfc/rfc9000#appendix-A.4
            //# After the testing period ends, the ECN state for the path becomes
            //# "unknown".
            self.state = EcnState::Unknown;
        }
    }

    /// Marked packets were declared lost.
    pub(super) fn on_lost(&mut self, marked: u64) {
        self.marked_lost += marked;
        //= https://www.rfc-editor.org/rfc/rfc9000#appendix-A.4
        //# An endpoint can also mark the ECN state for a path as "failed" if
        //# marked packets are all declared lost or if they are all ECN-CE marked.
        if matches!(self.state, EcnState::Testing | EcnState::Unknown)
            && self.marked_acked == 0
            && self.marked_sent > 0
            && self.marked_lost >= self.marked_sent
        {
            self.state = EcnState::Failed;
        }
    }

    /// Validate an ACK frame in `space` that newly acknowledged `acked` packets
    /// marked ECT(0) and ECT(1). `largest_increased`: it raised the largest
    /// acknowledged packet number.
    pub(super) fn on_ack(
        &mut self,
        space: usize,
        ecn: Option<EcnCounts>,
        acked: [u64; 2],
        largest_increased: bool,
    ) -> EcnOutcome {
        let mut outcome = EcnOutcome::default();
        self.marked_acked += acked[0] + acked[1];
        //= https://www.rfc-editor.org/rfc/rfc9000#section-13.4.2.1
        //# An endpoint MUST NOT fail ECN validation as a result of
        //# processing an ACK frame that does not increase the largest
        //# acknowledged packet number.
        //
        // Nor take its counts, which may be older than the last ones seen.
        if self.state == EcnState::Failed || !largest_increased {
            return outcome;
        }
        let valid = self.validate(space, ecn, acked);
        let Some(counts) = ecn.filter(|_| valid) else {
            if !valid {
                //= https://www.rfc-editor.org/rfc/rfc9000#section-13.4.2.2
                //# If validation fails, then the endpoint MUST disable ECN.
                self.state = EcnState::Failed;
                outcome.failed = true;
            }
            return outcome;
        };
        let prev = std::mem::replace(&mut self.counts[space], counts);
        outcome.ce_increase = counts.ce > prev.ce;
        //= https://www.rfc-editor.org/rfc/rfc9000#appendix-A.4
        //# From the "unknown" state, successful validation of the ECN counts in
        //# an ACK frame (see Section 13.4.2.1) causes the ECN state for the path
        //# to become "capable", unless no marked packet has been acknowledged.
        //
        // Marked packets acknowledged while testing count: a client sends
        // few packets, and its marked ones were often all acknowledged before
        // testing ended; waiting for an ACK of marked packets while marking
        // nothing (unknown) kept it unknown, and unmarked, for good.
        if self.state == EcnState::Unknown && self.marked_acked > 0 {
            self.state = EcnState::Capable;
        }
        outcome
    }

    /// RFC 9000 §13.4.2.1's checks of an ACK's counts against the previous ones.
    fn validate(&self, space: usize, ecn: Option<EcnCounts>, acked: [u64; 2]) -> bool {
        let Some(new) = ecn else {
            //= https://www.rfc-editor.org/rfc/rfc9000#section-13.4.2.1
            //# If an ACK frame newly acknowledges a packet that the endpoint sent
            //# with either the ECT(0) or ECT(1) codepoint set, ECN validation fails
            //# if the corresponding ECN counts are not present in the ACK frame.
            return acked == [0, 0];
        };
        let old = self.counts[space];
        // Counts are cumulative: one that went down is not a count.
        let (Some(d0), Some(d1), Some(dce)) = (
            new.ect0.checked_sub(old.ect0),
            new.ect1.checked_sub(old.ect1),
            new.ce.checked_sub(old.ce),
        ) else {
            return false;
        };
        //= https://www.rfc-editor.org/rfc/rfc9000#section-13.4.2.1
        //# ECN validation also fails if the sum of the increase in ECT(0) and
        //# ECN-CE counts is less than the number of newly acknowledged packets
        //# that were originally sent with an ECT(0) marking.  Similarly, ECN
        //# validation fails if the sum of the increases to ECT(1) and ECN-CE
        //# counts is less than the number of newly acknowledged packets sent
        //# with an ECT(1) marking.
        if d0.saturating_add(dce) < acked[0] || d1.saturating_add(dce) < acked[1] {
            return false;
        }
        //= https://www.rfc-editor.org/rfc/rfc9000#section-13.4.2.1
        //# ECN validation can fail if the received total count for either ECT(0)
        //# or ECT(1) exceeds the total number of packets sent with each
        //# corresponding ECT codepoint.
        let [sent0, sent1] = self.sent[space];
        new.ect0 <= sent0 && new.ect1 <= sent1 && new.ce <= sent0 + sent1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recovery::test_epoch;

    const PTO: Duration = Duration::from_millis(100);
    const DATA: usize = 2;
    const ECT0: Option<EcnCodepoint> = Some(EcnCodepoint::Ect0);

    fn counts(ect0: u64, ect1: u64, ce: u64) -> Option<EcnCounts> {
        Some(EcnCounts { ect0, ect1, ce })
    }

    fn tested(v: &mut EcnValidator) {
        let t = test_epoch();
        for _ in 0..TEST_PACKETS {
            assert_eq!(v.codepoint(), ECT0);
            v.on_sent(t, DATA, ECT0, PTO);
        }
    }

    #[test]
    fn testing_then_unknown_then_capable() {
        let mut v = EcnValidator::new(true);
        assert_eq!(v.state(), EcnState::Testing);
        tested(&mut v);
        assert_eq!((v.state(), v.codepoint()), (EcnState::Unknown, None));
        // Unmarked packets sent while unknown count for nothing.
        v.on_sent(test_epoch(), DATA, None, PTO);
        let out = v.on_ack(DATA, counts(4, 0, 0), [4, 0], true);
        assert_eq!(out, EcnOutcome::default());
        assert_eq!((v.state(), v.codepoint()), (EcnState::Capable, ECT0));
    }

    #[test]
    fn marks_acknowledged_while_testing_count_once_testing_ends() {
        let t = test_epoch();
        let mut v = EcnValidator::new(true);
        for _ in 0..3 {
            v.on_sent(t, DATA, ECT0, PTO);
        }
        // All three arrive marked and are acknowledged while still testing.
        v.on_ack(DATA, counts(3, 0, 0), [3, 0], true);
        assert_eq!(v.state(), EcnState::Testing);
        // Testing ends by time; nothing marked is in flight any more.
        v.on_sent(t + 3 * PTO, DATA, ECT0, PTO);
        assert_eq!(v.state(), EcnState::Unknown);
        v.on_ack(DATA, counts(4, 0, 0), [1, 0], true);
        assert_eq!((v.state(), v.codepoint()), (EcnState::Capable, ECT0));

        // Likewise when the next ACK acknowledges only unmarked packets.
        let mut v = EcnValidator::new(true);
        for _ in 0..2 {
            v.on_sent(t, DATA, ECT0, PTO);
        }
        v.on_ack(DATA, counts(2, 0, 0), [2, 0], true);
        v.on_sent(t + 3 * PTO, DATA, ECT0, PTO);
        v.on_ack(DATA, counts(3, 0, 0), [1, 0], true);
        assert_eq!(v.state(), EcnState::Capable);
    }

    #[test]
    fn testing_ends_after_three_ptos() {
        let t0 = test_epoch();
        let mut v = EcnValidator::new(true);
        v.on_sent(t0, DATA, ECT0, PTO);
        v.on_sent(t0 + 2 * PTO, DATA, ECT0, PTO);
        assert_eq!(v.state(), EcnState::Testing);
        v.on_sent(t0 + 3 * PTO, DATA, ECT0, PTO);
        assert_eq!(v.state(), EcnState::Unknown);
    }

    #[test]
    fn missing_counts_fail_validation() {
        let mut v = EcnValidator::new(true);
        tested(&mut v);
        // An ACK of unmarked packets needs no counts.
        assert!(!v.on_ack(DATA, None, [0, 0], true).failed);
        // A reordered ACK (largest not increased) never fails validation.
        assert!(!v.on_ack(DATA, None, [2, 0], false).failed);
        assert!(v.on_ack(DATA, None, [2, 0], true).failed);
        assert_eq!((v.state(), v.codepoint()), (EcnState::Failed, None));
        // Once failed, counts are ignored, CE included.
        assert_eq!(
            v.on_ack(DATA, counts(10, 0, 5), [1, 0], true),
            EcnOutcome::default()
        );
    }

    #[test]
    fn remarking_and_bleaching_fail_validation() {
        // ECT(0) remarked to not-ECT: counts rise less than marked packets acked.
        let mut v = EcnValidator::new(true);
        tested(&mut v);
        assert!(v.on_ack(DATA, counts(2, 0, 0), [3, 0], true).failed);
        // ECT(0) remarked to ECT(1), which we never sent.
        let mut v = EcnValidator::new(true);
        tested(&mut v);
        assert!(v.on_ack(DATA, counts(2, 1, 0), [2, 0], true).failed);
        // More ECT(0) reported than ever sent (not-ECT remarked to ECT(0)).
        let mut v = EcnValidator::new(true);
        tested(&mut v);
        assert!(v.on_ack(DATA, counts(11, 0, 0), [1, 0], true).failed);
        // Counts going down.
        let mut v = EcnValidator::new(true);
        tested(&mut v);
        assert!(!v.on_ack(DATA, counts(5, 0, 0), [5, 0], true).failed);
        assert!(v.on_ack(DATA, counts(4, 0, 0), [0, 0], true).failed);
    }

    #[test]
    fn ce_increase_is_reported_from_valid_counts() {
        let mut v = EcnValidator::new(true);
        tested(&mut v);
        // CE stands in for ECT(0) in the sum; acks may cover more than is new.
        let out = v.on_ack(DATA, counts(3, 0, 1), [2, 0], true);
        assert_eq!(
            out,
            EcnOutcome {
                ce_increase: true,
                failed: false
            }
        );
        assert_eq!(v.state(), EcnState::Capable);
        assert!(!v.on_ack(DATA, counts(4, 0, 1), [1, 0], true).ce_increase);
        // Spaces keep separate counts.
        let out = v.on_ack(0, counts(0, 0, 0), [0, 0], true);
        assert_eq!(out, EcnOutcome::default());
    }

    #[test]
    fn all_marked_packets_lost_fails_and_restart_revalidates() {
        let mut v = EcnValidator::new(true);
        tested(&mut v);
        v.on_lost(9);
        assert_eq!(v.state(), EcnState::Unknown);
        v.on_lost(1);
        assert_eq!(v.state(), EcnState::Failed);
        v.restart();
        assert_eq!((v.state(), v.codepoint()), (EcnState::Testing, ECT0));
        // Disabled by configuration: never marks.
        let v = EcnValidator::new(false);
        assert_eq!((v.state(), v.codepoint()), (EcnState::Failed, None));
    }
}
