//! Congestion signals: persistent congestion (§7.6), ECN (§7.1), app-limited (§7.8).

use super::*;

/// RTT sample of 100 ms in the Data space, then packets 1..=10 sent 110 ms apart
/// from t = 310 ms (spanning 990 ms), then packet 11 at 1400 ms.
fn lose_a_long_run(h: &mut H) {
    h.send(0, SpaceId::Data, 0);
    h.ack(100, SpaceId::Data, &[0..=0]).unwrap();
    for pn in 1..=10 {
        h.send(200 + pn * 110, SpaceId::Data, pn);
    }
    h.send(1400, SpaceId::Data, 11);
}

#[test]
fn persistent_congestion_collapses_the_window() {
    let mut h = H::new(CcAlgorithm::NewReno, confirmed());
    lose_a_long_run(&mut h);
    //= https://www.rfc-editor.org/rfc/rfc9002#section-7.6.1
    //# (smoothed_rtt + max(4*rttvar, kGranularity) + max_ack_delay) *
    //# kPersistentCongestionThreshold
    // With this ACK's sample: (100 + 4 * 37.5 + 25) * 3 = 825 ms < 990 ms.
    h.ack(1500, SpaceId::Data, &[11..=11]).unwrap();
    assert_eq!(h.lost_pns(), (1..=10).collect::<Vec<_>>());
    //= https://www.rfc-editor.org/rfc/rfc9002#section-7.6.2
    //# When persistent congestion is declared, the sender's congestion
    //# window MUST be reduced to the minimum congestion window
    //# (kMinimumWindow), similar to a TCP sender's response on an RTO
    //# [RFC5681].
    // B.8 also ends the recovery period, so the ACK of packet 11 (processed after
    // the losses, as in A.7) is counted in slow start from the minimum window.
    assert_eq!(h.r.congestion_window(), 2 * 1200 + 1200);
    // Half of 13 200 (the initial window plus packet 0's slow-start growth).
    assert_eq!(h.r.controller().ssthresh(), 6600);
    assert_eq!(h.r.stats().persistent_congestion, 1);
    assert_eq!(h.r.stats().congestion_events, 1);
}

#[test]
fn an_acknowledgment_inside_the_period_prevents_persistent_congestion() {
    let mut h = H::new(CcAlgorithm::NewReno, confirmed());
    lose_a_long_run(&mut h);
    //= https://www.rfc-editor.org/rfc/rfc9002#section-7.6.2
    //# across all packet number spaces, none of the packets sent between
    //# the send times of these two packets are acknowledged;
    h.ack(1500, SpaceId::Data, &[11..=11, 5..=5]).unwrap();
    assert_eq!(h.lost.len(), 9);
    assert_eq!(h.r.stats().persistent_congestion, 0);
    assert_eq!(
        h.r.congestion_window(),
        6600,
        "an ordinary halving of 13 200"
    );
}

#[test]
fn an_acknowledgment_in_another_space_prevents_persistent_congestion() {
    let mut h = H::new(CcAlgorithm::NewReno, confirmed());
    lose_a_long_run(&mut h);
    // A Handshake packet sent in the middle of the run was acknowledged.
    h.send(700, SpaceId::Handshake, 0);
    h.ack(800, SpaceId::Handshake, &[0..=0]).unwrap();
    h.ack(1500, SpaceId::Data, &[11..=11]).unwrap();
    assert_eq!(h.lost.len(), 10);
    assert_eq!(h.r.stats().persistent_congestion, 0);
}

#[test]
fn no_persistent_congestion_before_an_rtt_sample() {
    let mut h = H::new(CcAlgorithm::NewReno, confirmed());
    // 0..=9 spread over 3.6 s, more than (333 + 666 + 25) * 3 ms, without a sample.
    for pn in 0..10 {
        h.send(pn * 400, SpaceId::Data, pn);
    }
    h.send(3700, SpaceId::Data, 10);
    //= https://www.rfc-editor.org/rfc/rfc9002#section-7.6.2
    //# The persistent congestion period SHOULD NOT start until there is at
    //# least one RTT sample.
    h.ack(3800, SpaceId::Data, &[10..=10]).unwrap();
    assert_eq!(h.lost.len(), 10);
    assert_eq!(h.r.stats().persistent_congestion, 0);
    assert_eq!(h.r.congestion_window(), 6000);
}

#[test]
fn ecn_ce_increase_is_a_congestion_event() {
    let mut h = H::new(CcAlgorithm::Cubic, confirmed());
    let marked = SendFlags {
        ack_eliciting: true,
        in_flight: true,
        ecn: Some(EcnCodepoint::Ect0),
        mtu_probe: false,
    };
    for pn in 0..10 {
        h.send_with(pn, SpaceId::Data, pn, marked);
    }
    let ce = |ect0, ce| Some(EcnCounts { ect0, ect1: 0, ce });
    //= https://www.rfc-editor.org/rfc/rfc9002#section-7.3.2
    //# The sender MUST exit slow start and enter a recovery period when a
    //# packet is lost or when the ECN-CE count reported by its peer
    //# increases.
    let s = h.ack_ecn(100, SpaceId::Data, &[0..=4], ce(4, 1)).unwrap();
    assert!(s.ecn_ce);
    assert_eq!(h.r.congestion_window(), 8400);
    // The same CE count again is no new signal; packets sent before the recovery
    // period do not grow the window either.
    let s = h.ack_ecn(101, SpaceId::Data, &[0..=9], ce(9, 1)).unwrap();
    assert!(!s.ecn_ce);
    assert_eq!(h.r.congestion_window(), 8400);
    // A CE increase for a packet sent after the recovery began reduces again.
    h.send_with(150, SpaceId::Data, 10, marked);
    h.ack_ecn(250, SpaceId::Data, &[0..=10], ce(9, 2)).unwrap();
    assert_eq!(h.r.congestion_window(), 5880);
    assert_eq!(h.r.stats().congestion_events, 2);
    assert_eq!(h.r.stats().lost_packets, 0);
}

/// The window stays while the application leaves it unused, and while the
/// transport does (writes held back by the peer's credit or the send budget).
#[test]
fn app_limited_window_does_not_grow() {
    for transport in [false, true] {
        let mut h = H::new(CcAlgorithm::NewReno, confirmed());
        if transport {
            h.r.on_transport_limited();
        } else {
            h.r.on_app_limited();
        }
        h.send(0, SpaceId::Data, 0);
        h.send(0, SpaceId::Data, 1);
        h.ack(100, SpaceId::Data, &[0..=1]).unwrap();
        //= https://www.rfc-editor.org/rfc/rfc9002#section-7.8
        //# When this occurs, the congestion window SHOULD NOT be increased in
        //# either slow start or congestion avoidance.
        assert_eq!(h.r.congestion_window(), 12_000);
        // Filling the window ends the limited period.
        for pn in 2..12 {
            h.send(100, SpaceId::Data, pn);
        }
        assert_eq!(h.r.send_allowance(), 0);
        h.ack(200, SpaceId::Data, &[0..=11]).unwrap();
        assert_eq!(h.r.congestion_window(), 24_000);
    }
}

/// Slow start is paced at 2 × cwnd / srtt, congestion avoidance at 5/4 ×
/// (Linux paces TCP at 200 % and 120 %).
#[test]
fn slow_start_is_paced_faster_than_congestion_avoidance() {
    let config = RecoveryConfig {
        cc: CcAlgorithm::NewReno,
        pacing: true,
        ..RecoveryConfig::default()
    };
    let mut h = H::with_config(&config, confirmed());
    let n = |h: &mut H, ms: u64| {
        h.r.pacing_delay(h.at(ms), 1200);
        let window_per_rtt = h.r.congestion_window() as f64 / h.r.rtt.smoothed().as_secs_f64();
        h.r.pacer.rate_per_second() / window_per_rtt
    };
    h.send(0, SpaceId::Data, 0);
    h.ack(100, SpaceId::Data, &[0..=0]).unwrap();
    assert!(h.r.congestion_window() < h.r.controller().ssthresh());
    assert!((n(&mut h, 100) - 2.0).abs() < 1e-9);
    // A loss (packet 1, three below the largest acknowledged) ends slow start.
    for pn in 1..=4 {
        h.send(110, SpaceId::Data, pn);
    }
    h.ack(220, SpaceId::Data, &[2..=4]).unwrap();
    assert_eq!(h.lost_pns(), [1]);
    assert!(h.r.congestion_window() >= h.r.controller().ssthresh());
    assert!((n(&mut h, 220) - 1.25).abs() < 1e-9);
}
