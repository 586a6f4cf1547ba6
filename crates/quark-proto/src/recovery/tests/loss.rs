//! Loss detection (§6.1), ACK processing (§5.1, A.7) and its error cases.

use super::*;

#[test]
fn packet_threshold_declares_loss() {
    let mut h = H::new(CcAlgorithm::NewReno, confirmed());
    for pn in 0..5 {
        h.send(pn, SpaceId::Data, pn);
    }
    //= https://www.rfc-editor.org/rfc/rfc9002#section-6.1.1
    //# The RECOMMENDED initial value for the packet reordering threshold
    //# (kPacketThreshold) is 3, based on best practices for TCP loss
    //# detection [RFC5681] [RFC6675].
    h.ack(100, SpaceId::Data, &[3..=3]).unwrap();
    assert_eq!(h.acked_pns(), vec![3]);
    assert_eq!(
        h.lost_pns(),
        vec![0],
        "3 >= 0 + 3; 1 and 2 are within the threshold"
    );
    h.ack(101, SpaceId::Data, &[3..=4]).unwrap();
    assert_eq!((h.acked_pns(), h.lost_pns()), (vec![4], vec![1]));
    assert_eq!(h.r.stats().lost_packets, 2);
    // Packet 2 waits for the time threshold.
    assert!(h.r.spaces.get(2).unwrap().loss_time.is_some());
}

#[test]
fn time_threshold_declares_loss_when_its_timer_fires() {
    let mut h = H::new(CcAlgorithm::NewReno, confirmed());
    h.send(0, SpaceId::Data, 0);
    h.send(10, SpaceId::Data, 1);
    h.ack(110, SpaceId::Data, &[1..=1]).unwrap();
    assert!(h.lost.is_empty());
    //= https://www.rfc-editor.org/rfc/rfc9002#section-6.1.2
    //# max(kTimeThreshold * max(smoothed_rtt, latest_rtt), kGranularity)
    // RTT 100 ms: packet 0 is lost 112.5 ms after it was sent.
    //= https://www.rfc-editor.org/rfc/rfc9002#section-6.1.2
    //# If packets sent prior to the largest acknowledged packet cannot yet
    //# be declared lost, then a timer SHOULD be set for the remaining time.
    assert_eq!(h.timer_us(), Some(112_500));
    assert_eq!(h.timeout(112), TimeoutAction::None);
    let due = h.t0 + Duration::from_micros(112_500);
    h.lost.clear();
    assert_eq!(
        h.r.on_timeout(due, &h.path, &mut h.lost),
        TimeoutAction::Lost
    );
    assert_eq!(h.lost_pns(), vec![0]);
    assert_eq!(h.r.bytes_in_flight(), 0);
    // Nothing in flight on a validated path: no timer.
    assert_eq!(h.timer_us(), None);
}

#[test]
fn acknowledging_an_unsent_packet_is_a_protocol_violation() {
    let mut h = H::new(CcAlgorithm::NewReno, confirmed());
    let err = h.ack(0, SpaceId::Data, &[0..=0]).unwrap_err();
    assert_eq!(err.code, TransportErrorCode::PROTOCOL_VIOLATION);
    for pn in [0, 1, 3] {
        h.send(pn, SpaceId::Data, pn); // 2 is skipped
    }
    let err = h.ack(10, SpaceId::Data, &[4..=4]).unwrap_err();
    assert_eq!(err.code, TransportErrorCode::PROTOCOL_VIOLATION);
    let err = h.ack(10, SpaceId::Data, &[0..=(1 << 62)]).unwrap_err();
    assert_eq!(err.code, TransportErrorCode::PROTOCOL_VIOLATION);
    let err = h.ack(10, SpaceId::Data, &[3..=3, 2..=2]).unwrap_err();
    assert_eq!(err.code, TransportErrorCode::PROTOCOL_VIOLATION);
    #[allow(clippy::reversed_empty_ranges)]
    let backwards = 3..=1;
    let err = h.ack(10, SpaceId::Data, &[backwards]).unwrap_err();
    assert_eq!(err.code, TransportErrorCode::FRAME_ENCODING_ERROR);
}

#[test]
fn acked_and_lost_packets_come_back_exactly_once() {
    let mut h = H::new(CcAlgorithm::Cubic, confirmed());
    let mut seen = std::collections::HashSet::new();
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut sent = 0u64;
    for round in 0..200u64 {
        let now = round * 10;
        for _ in 0..5 {
            h.send(now, SpaceId::Data, sent);
            sent += 1;
        }
        // ACK a random window of what was sent, sometimes repeating old ranges,
        // sometimes leaving holes.
        let hi = sent - 1 - next() % 4;
        let mid = hi.saturating_sub(next() % 8);
        let lo = mid.saturating_sub(2 + next() % 20);
        let ranges = [mid..=hi, lo..=mid.saturating_sub(2)];
        h.ack(now + 5, SpaceId::Data, &ranges).unwrap();
        for (pn, p) in h.acked.iter().chain(&h.lost) {
            assert_eq!(*pn, p.data);
            assert!(seen.insert(*pn), "packet {pn} handed back twice");
        }
        if round % 17 == 0 {
            h.timeout(now + 9);
            for (pn, _) in &h.lost {
                assert!(seen.insert(*pn), "packet {pn} handed back twice");
            }
        }
    }
    // Acknowledge everything: the rest comes back, once.
    h.ack(5000, SpaceId::Data, &[0..=sent - 1]).unwrap();
    for (pn, _) in h.acked.iter().chain(&h.lost) {
        assert!(seen.insert(*pn), "packet {pn} handed back twice");
    }
    assert_eq!(seen.len() as u64, sent);
    assert_eq!(h.r.bytes_in_flight(), 0);
    assert!(!h.r.has_ack_eliciting_in_flight(SpaceId::Data));
    assert_eq!(
        h.r.spaces.get(2).unwrap().sent.tracked(),
        0,
        "store compacted"
    );
}

#[test]
fn ack_work_is_bounded_by_new_information() {
    let mut h = H::new(CcAlgorithm::Cubic, confirmed());
    for pn in 0..10_000 {
        h.send(pn / 100, SpaceId::Data, pn);
    }
    // One hole at 4000: after this ACK everything below 9998 is resolved and the
    // store holds only the tail; repeating the same ranges acknowledges nothing.
    h.ack(200, SpaceId::Data, &[4001..=9999, 0..=3999]).unwrap();
    assert_eq!(h.acked.len(), 9999);
    assert_eq!(h.lost_pns(), vec![4000]);
    assert_eq!(h.r.spaces.get(2).unwrap().sent.tracked(), 0);
    h.ack(201, SpaceId::Data, &[4001..=9999, 0..=3999]).unwrap();
    assert!(h.acked.is_empty() && h.lost.is_empty());
}

#[test]
fn overlapping_or_misordered_ranges_never_double_count() {
    let mut h = H::new(CcAlgorithm::NewReno, confirmed());
    for pn in 0..10 {
        h.send(pn, SpaceId::Data, pn);
    }
    h.ack(50, SpaceId::Data, &[6..=9, 0..=7, 8..=9]).unwrap();
    assert_eq!(h.acked_pns(), (0..10).collect::<Vec<_>>());
    assert_eq!(h.r.bytes_in_flight(), 0);
}

#[test]
fn rtt_samples_follow_section_5_1() {
    let mut h = H::new(CcAlgorithm::NewReno, confirmed());
    h.send(0, SpaceId::Data, 0);
    h.send(10, SpaceId::Data, 1);
    let now = h.at(20);
    h.r.on_packet_sent(now, SpaceId::Data, 2, 50, false, false, 2, &h.path);
    // Largest acknowledged (1) newly acked and ack-eliciting: a sample.
    let s = h.ack(110, SpaceId::Data, &[1..=1]).unwrap();
    assert!(s.rtt_sample);
    assert_eq!(h.r.rtt().latest(), 100 * MS);
    // Largest (1) not newly acknowledged: no sample even though 0 is new.
    let s = h.ack(200, SpaceId::Data, &[0..=1]).unwrap();
    assert!(!s.rtt_sample);
    assert_eq!(s.largest_newly_acked, Some(0));
    // Only a non-ack-eliciting packet newly acknowledged: no sample.
    let s = h.ack(300, SpaceId::Data, &[0..=2]).unwrap();
    assert!(!s.rtt_sample);
    assert_eq!(h.r.rtt().latest(), 100 * MS);
}

#[test]
fn initial_ack_delay_is_ignored() {
    let mut h = H::new(CcAlgorithm::NewReno, confirmed());
    for space in [SpaceId::Initial, SpaceId::Handshake] {
        h.send(0, space, 0);
        h.send(100, space, 1);
    }
    let mut acked = Vec::new();
    let mut lost = Vec::new();
    let (t, path) = (h.at(100), h.path);
    h.r.on_ack_received(
        t,
        SpaceId::Initial,
        [0..=0].into_iter(),
        40 * MS,
        None,
        &path,
        &mut acked,
        &mut lost,
    )
    .unwrap();
    assert_eq!(h.r.rtt().smoothed(), 100 * MS);
    // 2nd sample 200 ms: ignored delay in Initial keeps it 200.
    let t = h.at(300);
    h.r.on_ack_received(
        t,
        SpaceId::Initial,
        [1..=1].into_iter(),
        40 * MS,
        None,
        &path,
        &mut acked,
        &mut lost,
    )
    .unwrap();
    assert_eq!(h.r.rtt().smoothed(), Duration::from_micros(112_500));
    // In the Handshake space the (capped) delay is subtracted: 200 - 25.
    let t = h.at(300);
    h.r.on_ack_received(
        t,
        SpaceId::Handshake,
        [1..=1].into_iter(),
        40 * MS,
        None,
        &path,
        &mut acked,
        &mut lost,
    )
    .unwrap();
    let expect = (Duration::from_micros(112_500) * 7 + 175 * MS) / 8;
    assert_eq!(h.r.rtt().smoothed(), expect);
}

#[test]
fn in_flight_lists_outstanding_packets() {
    let mut h = H::new(CcAlgorithm::NewReno, confirmed());
    for pn in 0..4 {
        h.send(pn, SpaceId::Data, pn);
    }
    let now = h.at(5);
    h.r.on_packet_sent(now, SpaceId::Data, 4, 40, false, false, 4, &h.path);
    h.ack(50, SpaceId::Data, &[1..=1]).unwrap();
    let left: Vec<u64> = h.r.in_flight(SpaceId::Data).map(|p| p.0).collect();
    assert_eq!(left, vec![0, 2, 3]);
    assert_eq!(h.r.largest_acked(SpaceId::Data), Some(1));
    assert_eq!(h.r.largest_acked(SpaceId::Handshake), None);
}
