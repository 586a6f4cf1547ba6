//! The probe timeout (§6.2) and the handshake rules around it, and discarding keys.

use super::*;

#[test]
fn pto_is_computed_and_backs_off() {
    let mut h = H::new(CcAlgorithm::NewReno, confirmed());
    h.send(0, SpaceId::Handshake, 0);
    h.ack(100, SpaceId::Handshake, &[0..=0]).unwrap();
    // smoothed 100 ms, rttvar 50 ms.
    h.send(100, SpaceId::Handshake, 1);
    //= https://www.rfc-editor.org/rfc/rfc9002#section-6.2.1
    //# PTO = smoothed_rtt + max(4*rttvar, kGranularity) + max_ack_delay
    // ... with max_ack_delay = 0 in the Handshake space: 100 + 200 = 300 ms.
    assert_eq!(h.timer_us(), Some(400_000));
    assert_eq!(h.timeout(399), TimeoutAction::None);
    let probe = TimeoutAction::Probe {
        space: SpaceId::Handshake,
        count: 2,
    };
    assert_eq!(h.timeout(400), probe);
    assert_eq!(h.r.pto_count(), 1);
    //= https://www.rfc-editor.org/rfc/rfc9002#section-6.2.1
    //# When a PTO timer expires, the PTO backoff MUST be increased,
    //# resulting in the PTO period being set to twice its current value.
    assert_eq!(h.timer_us(), Some(700_000));
    assert_eq!(h.timeout(700), probe);
    assert_eq!(h.timer_us(), Some(1_300_000));
    assert_eq!(h.r.stats().ptos, 2);

    // In the Data space max_ack_delay is added, and backed off too.
    let mut h = H::new(CcAlgorithm::NewReno, confirmed());
    h.send(0, SpaceId::Data, 0);
    h.ack(100, SpaceId::Data, &[0..=0]).unwrap();
    assert_eq!(h.r.pto_base(SpaceId::Data, &h.path), 325 * MS);
    assert_eq!(h.r.pto_base(SpaceId::Initial, &h.path), 300 * MS);
    h.send(100, SpaceId::Data, 1);
    assert_eq!(h.timer_us(), Some(425_000));
    let probe = TimeoutAction::Probe {
        space: SpaceId::Data,
        count: 2,
    };
    assert_eq!(h.timeout(425), probe);
    assert_eq!(h.timer_us(), Some(100_000 + 2 * 325_000));
    // An acknowledgment resets the backoff.
    h.ack(760, SpaceId::Data, &[1..=1]).unwrap();
    assert_eq!(h.r.pto_count(), 0);
}

#[test]
fn pto_takes_the_earliest_space_and_skips_data_until_confirmed() {
    let mut path = confirmed();
    path.handshake_confirmed = false;
    let mut h = H::new(CcAlgorithm::NewReno, path);
    h.send(0, SpaceId::Initial, 0);
    h.send(5, SpaceId::Data, 0);
    h.send(10, SpaceId::Handshake, 0);
    // No RTT sample: PTO = 333 + 4 * 166.5 = 999 ms.
    assert_eq!(h.timer_us(), Some(999_000));
    let mut dropped = Vec::new();
    h.r.discard_space(SpaceId::Initial, h.at(20), &h.path, &mut dropped);
    assert_eq!(h.timer_us(), Some(1_009_000));
    h.r.discard_space(SpaceId::Handshake, h.at(30), &h.path, &mut dropped);
    //= https://www.rfc-editor.org/rfc/rfc9002#section-6.2.1
    //# An endpoint MUST NOT set its PTO timer for the Application Data
    //# packet number space until the handshake is confirmed.
    assert_eq!(h.timer_us(), None);
    assert!(h.r.has_ack_eliciting_in_flight(SpaceId::Data));
    h.path.handshake_confirmed = true;
    h.r.update_timer(h.at(40), &h.path);
    assert_eq!(h.timer_us(), Some(1_029_000));
    assert_eq!(
        h.timeout(1029),
        TimeoutAction::Probe {
            space: SpaceId::Data,
            count: 2
        }
    );
}

#[test]
fn client_arms_anti_deadlock_pto_without_packets_in_flight() {
    let mut h = H::new(CcAlgorithm::NewReno, early_client());
    h.send(0, SpaceId::Initial, 0);
    h.ack(100, SpaceId::Initial, &[0..=0]).unwrap();
    assert_eq!(h.r.bytes_in_flight(), 0);
    //= https://www.rfc-editor.org/rfc/rfc9002#section-6.2.2.1
    //# That is, the client MUST set the PTO timer if the client has not
    //# received an acknowledgment for any of its Handshake packets and the
    //# handshake is not confirmed (see Section 4.1.2 of [QUIC-TLS]), even if
    //# there are no packets in flight.
    // From now: 100 + (100 + 200) ms.
    assert_eq!(h.timer_us(), Some(400_000));
    //= https://www.rfc-editor.org/rfc/rfc9002#section-6.2.2.1
    //# When the PTO fires, the client MUST send a Handshake packet if it
    //# has Handshake keys, otherwise it MUST send an Initial packet in a
    //# UDP datagram with a payload of at least 1200 bytes.
    assert_eq!(
        h.timeout(400),
        TimeoutAction::Probe {
            space: SpaceId::Initial,
            count: 1
        }
    );
    assert_eq!(h.timer_us(), Some(1_000_000), "backed off, from now");
    h.path.has_handshake_keys = true;
    assert_eq!(
        h.timeout(1000),
        TimeoutAction::Probe {
            space: SpaceId::Handshake,
            count: 1
        }
    );
    // Once the server has validated the address, nothing in flight means no timer.
    h.path.peer_completed_address_validation = true;
    h.r.update_timer(h.at(1100), &h.path);
    assert_eq!(h.timer_us(), None);
}

#[test]
fn client_keeps_pto_backoff_until_address_validated() {
    let mut h = H::new(CcAlgorithm::NewReno, early_client());
    h.send(0, SpaceId::Initial, 0);
    assert!(matches!(h.timeout(999), TimeoutAction::Probe { .. }));
    h.send(999, SpaceId::Initial, 1);
    assert_eq!(h.r.pto_count(), 1);
    //= https://www.rfc-editor.org/rfc/rfc9002#section-6.2.1
    //# That is, a client does not reset the PTO backoff factor on receiving
    //# acknowledgments in Initial packets.
    h.ack(1050, SpaceId::Initial, &[0..=1]).unwrap();
    assert_eq!(h.r.pto_count(), 1);
    // A Handshake ACK validates the client's address; now the ACK resets it.
    h.path.peer_completed_address_validation = true;
    h.path.has_handshake_keys = true;
    h.send(1060, SpaceId::Handshake, 0);
    h.ack(1100, SpaceId::Handshake, &[0..=0]).unwrap();
    assert_eq!(h.r.pto_count(), 0);
}

#[test]
fn server_blocked_by_amplification_arms_no_timer() {
    let mut path = confirmed();
    path.handshake_confirmed = false;
    path.amplification_blocked = true;
    let mut h = H::new(CcAlgorithm::NewReno, path);
    h.send(0, SpaceId::Initial, 0);
    //= https://www.rfc-editor.org/rfc/rfc9002#appendix-A.8
    //# if (server is at anti-amplification limit):
    //#   // The server's timer is not set if nothing can be sent.
    //#   loss_detection_timer.cancel()
    assert_eq!(h.timer_us(), None);
    // A datagram from the client unblocks it (A.6): re-arm, and fire if overdue.
    h.path.amplification_blocked = false;
    h.r.update_timer(h.at(1500), &h.path);
    assert_eq!(h.timer_us(), Some(999_000));
    assert!(matches!(
        h.timeout(1500),
        TimeoutAction::Probe {
            space: SpaceId::Initial,
            ..
        }
    ));
    // Blocked again before the next timer: firing does nothing.
    h.path.amplification_blocked = true;
    assert_eq!(h.timeout(10_000), TimeoutAction::None);
    assert_eq!(h.r.pto_count(), 1);
}

#[test]
fn discarding_a_space_removes_its_bytes_in_flight() {
    let mut h = H::new(CcAlgorithm::NewReno, early_client());
    h.send(0, SpaceId::Initial, 0);
    h.send(1, SpaceId::Initial, 1);
    h.path.has_handshake_keys = true;
    h.send(2, SpaceId::Handshake, 0);
    assert_eq!(h.r.bytes_in_flight(), 3600);
    // PTO from the last ack-eliciting Initial packet, sent at 1 ms.
    assert!(matches!(h.timeout(1000), TimeoutAction::Probe { .. }));
    assert_eq!(h.r.pto_count(), 1);
    let mut dropped = Vec::new();
    //= https://www.rfc-editor.org/rfc/rfc9002#section-6.4
    //# The sender MUST discard all recovery state associated with those
    //# packets and MUST remove them from the count of bytes in flight.
    h.r.discard_space(SpaceId::Initial, h.at(1000), &h.path, &mut dropped);
    assert_eq!(dropped.iter().map(|d| d.0).collect::<Vec<_>>(), vec![0, 1]);
    assert_eq!(h.r.bytes_in_flight(), 1200);
    //= https://www.rfc-editor.org/rfc/rfc9002#appendix-A.11
    //# pto_count = 0
    assert_eq!(h.r.pto_count(), 0);
    assert_eq!(h.timer_us(), Some(1_001_000));
    assert_eq!(h.r.congestion_window(), 12_000, "not a congestion event");
    assert_eq!(h.r.stats().lost_packets, 0);
    assert_eq!(h.r.in_flight(SpaceId::Initial).count(), 0);
    // A late ACK for the discarded packets finds nothing.
    let s = h.ack(1100, SpaceId::Initial, &[0..=1]).unwrap();
    assert_eq!(s.largest_newly_acked, None);
    assert!(h.acked.is_empty());
}
