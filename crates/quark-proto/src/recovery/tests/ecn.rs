//! ECN validation through [`Recovery`] (RFC 9000 §13.4.2): what the connection
//! sees through `ecn_codepoint`, and which CE counts reach the controller.

use super::*;

const MARKED: SendFlags = SendFlags {
    ack_eliciting: true,
    in_flight: true,
    ecn: Some(EcnCodepoint::Ect0),
    mtu_probe: false,
};

fn counts(ect0: u64, ce: u64) -> Option<EcnCounts> {
    Some(EcnCounts { ect0, ect1: 0, ce })
}

/// Send marked packets while `ecn_codepoint` says so, unmarked ones otherwise.
fn send_as_told(h: &mut H, ms: u64, pn: u64) {
    let flags = SendFlags {
        ecn: h.r.ecn_codepoint(),
        ..MARKED
    };
    h.send_with(ms, SpaceId::Data, pn, flags);
}

#[test]
fn a_path_that_carries_marks_is_validated_and_ce_reduces_the_window() {
    let mut h = H::new(CcAlgorithm::NewReno, confirmed());
    assert_eq!(h.r.ecn_state(), EcnState::Testing);
    for pn in 0..12 {
        send_as_told(&mut h, pn, pn);
    }
    // Ten marked, then unmarked while the outcome is unknown.
    assert_eq!(
        (h.r.ecn_state(), h.r.ecn_codepoint()),
        (EcnState::Unknown, None)
    );
    let s = h
        .ack_ecn(100, SpaceId::Data, &[0..=11], counts(10, 0))
        .unwrap();
    assert!(!s.ecn_ce);
    assert_eq!(h.r.ecn_state(), EcnState::Capable);
    assert_eq!(h.r.ecn_codepoint(), Some(EcnCodepoint::Ect0));
    assert_eq!(h.r.congestion_window(), 12_000 + 12 * 1200);
    send_as_told(&mut h, 110, 12);
    let s = h
        .ack_ecn(200, SpaceId::Data, &[0..=12], counts(10, 1))
        .unwrap();
    assert!(s.ecn_ce);
    assert_eq!(h.r.congestion_window(), (12_000 + 12 * 1200) / 2);
    assert_eq!(h.r.stats().congestion_events, 1);
}

#[test]
fn a_path_that_bleaches_marks_fails_validation_and_stops_marking() {
    let mut h = H::new(CcAlgorithm::NewReno, confirmed());
    for pn in 0..10 {
        send_as_told(&mut h, pn, pn);
    }
    //= https://www.rfc-editor.org/rfc/rfc9000#section-13.4.2.1
    //# If an ACK frame newly acknowledges a packet that the endpoint sent
    //# with either the ECT(0) or ECT(1) codepoint set, ECN validation fails
    //# if the corresponding ECN counts are not present in the ACK frame.
    h.ack_ecn(100, SpaceId::Data, &[0..=4], None).unwrap();
    assert_eq!(
        (h.r.ecn_state(), h.r.ecn_codepoint()),
        (EcnState::Failed, None)
    );
    // Counts that show up later, CE included, are not believed.
    let s = h
        .ack_ecn(200, SpaceId::Data, &[0..=9], counts(5, 5))
        .unwrap();
    assert!(!s.ecn_ce);
    assert_eq!(h.r.stats().congestion_events, 0);
    // Validation can be started again (a new path).
    h.r.restart_ecn_validation();
    assert_eq!(h.r.ecn_codepoint(), Some(EcnCodepoint::Ect0));
}

#[test]
fn ce_counts_for_unmarked_packets_are_not_believed() {
    let mut h = H::new(CcAlgorithm::NewReno, confirmed());
    // The connection does not mark (e.g. its socket cannot): a peer reporting CE
    // for packets we never marked fails validation instead of cutting the window.
    for pn in 0..5 {
        h.send(pn, SpaceId::Data, pn);
    }
    let s = h
        .ack_ecn(100, SpaceId::Data, &[0..=4], counts(0, 3))
        .unwrap();
    assert!(!s.ecn_ce);
    assert_eq!(h.r.ecn_state(), EcnState::Failed);
    assert_eq!(h.r.congestion_window(), 12_000 + 5 * 1200);
}

#[test]
fn ecn_off_never_marks() {
    let config = RecoveryConfig {
        ecn: false,
        pacing: false,
        ..RecoveryConfig::default()
    };
    let h = H::with_config(&config, confirmed());
    assert_eq!(
        (h.r.ecn_state(), h.r.ecn_codepoint()),
        (EcnState::Failed, None)
    );
}
