//! A small deterministic simulation: a sender behind a fixed-RTT link that drops
//! packets on a fixed pattern, acknowledged by a receiver that builds ACK ranges with
//! [`RangeSet`]. Checks the window's shape, not timings.

use super::*;
use crate::range_set::RangeSet;
use crate::recovery::test_epoch;
use std::collections::{BTreeMap, HashSet};
use std::ops::RangeInclusive;

const MTU: u16 = 1200;
const RTT: Duration = Duration::from_millis(50);

#[derive(Debug, Default)]
struct Trace {
    /// (time, window before, window after) for every reduction.
    reductions: Vec<(Instant, u64, u64)>,
    max_window: u64,
    sent: u64,
    resolved: u64,
}

/// Run `duration` of bulk sending, losing the packets `drop` picks.
fn simulate(cc: CcAlgorithm, drop: impl Fn(u64) -> bool, duration: Duration) -> Trace {
    let t0 = test_epoch();
    let config = RecoveryConfig {
        cc,
        pacing: false,
        ..RecoveryConfig::default()
    };
    let mut r: Recovery<()> = Recovery::new(&config);
    let path = PathState {
        handshake_confirmed: true,
        peer_completed_address_validation: true,
        has_handshake_keys: true,
        max_ack_delay: Duration::ZERO,
        ..PathState::default()
    };
    let mut received = RangeSet::new();
    // ACK arrival time → the ranges it carries, highest first (the receiver
    // acknowledges every packet at once; the link adds one RTT in total).
    let mut acks: BTreeMap<Instant, Vec<RangeInclusive<u64>>> = BTreeMap::new();
    let (mut acked, mut lost) = (Vec::new(), Vec::new());
    let mut seen = HashSet::new();
    let mut trace = Trace::default();
    let mut now = t0;
    let mut pn = 0u64;
    let end = t0 + duration;

    while now < end {
        // Send what the window allows.
        while r.send_allowance() >= u64::from(MTU) {
            r.on_packet_sent(now, SpaceId::Data, pn, MTU, true, true, (), &path);
            trace.sent += 1;
            if !drop(pn) {
                received.insert_one(pn);
                received.truncate_low(32);
                let ranges = received.iter().rev().map(|r| r.start..=r.end - 1).collect();
                // Distinct times keep the map's keys unique.
                let at = now + RTT + Duration::from_nanos(pn);
                acks.insert(at, ranges);
            }
            pn += 1;
        }
        // Next event: an ACK arriving or the loss-detection timer.
        let next_ack = acks.keys().next().copied();
        let timer = r.loss_detection_timer();
        let next = match (next_ack, timer) {
            (Some(a), Some(t)) => a.min(t),
            (Some(a), None) => a,
            (None, Some(t)) => t,
            (None, None) => break,
        };
        now = next;
        let before = r.congestion_window();
        acked.clear();
        lost.clear();
        if next_ack == Some(now) {
            let ranges = acks.remove(&now).unwrap_or_default();
            r.on_ack_received(
                now,
                SpaceId::Data,
                ranges.into_iter(),
                Duration::ZERO,
                None,
                &path,
                &mut acked,
                &mut lost,
            )
            .expect("valid ACK");
        } else {
            r.on_timeout(now, &path, &mut lost);
        }
        for (p, _) in acked.iter().chain(&lost) {
            assert!(seen.insert(*p), "packet {p} resolved twice");
            trace.resolved += 1;
        }
        let after = r.congestion_window();
        if after < before {
            trace.reductions.push((now, before, after));
        }
        trace.max_window = trace.max_window.max(after);
    }
    assert_eq!(r.stats().persistent_congestion, 0);
    assert!(trace.resolved + r.in_flight(SpaceId::Data).count() as u64 == trace.sent);
    trace
}

fn check_shape(trace: &Trace, factor: f64) {
    assert!(trace.reductions.len() >= 5, "{trace:?}");
    // Slow start took the window well past the initial one before the first loss.
    assert!(trace.reductions[0].1 > 2 * 12_000, "{trace:?}");
    for &(_, before, after) in &trace.reductions {
        // One multiplicative decrease per event (never below the minimum window).
        let expect = ((before as f64 * factor) as u64).max(2400);
        assert!(
            after.abs_diff(expect) <= 1,
            "{before} -> {after}, expected {expect}"
        );
    }
    for pair in trace.reductions.windows(2) {
        // At most one reduction per round trip (the recovery period).
        assert!(
            pair[1].0 - pair[0].0 >= RTT,
            "reductions closer than an RTT: {pair:?}"
        );
        // Between reductions the window grew back.
        assert!(
            pair[1].1 > pair[0].2,
            "no growth between reductions: {pair:?}"
        );
    }
}

#[test]
fn new_reno_halves_once_per_loss_episode() {
    let trace = simulate(
        CcAlgorithm::NewReno,
        |pn| pn % 100 == 99,
        Duration::from_secs(20),
    );
    check_shape(&trace, 0.5);
}

#[test]
fn cubic_reduces_by_0_7_once_per_loss_episode() {
    let trace = simulate(
        CcAlgorithm::Cubic,
        |pn| pn % 100 == 99,
        Duration::from_secs(20),
    );
    check_shape(&trace, 0.7);
}

#[test]
fn burst_losses_cause_a_single_reduction() {
    // Three packets in a row lost every 150: one cut per burst, not three.
    for (cc, factor) in [(CcAlgorithm::NewReno, 0.5), (CcAlgorithm::Cubic, 0.7)] {
        let trace = simulate(cc, |pn| pn % 150 >= 147, Duration::from_secs(20));
        check_shape(&trace, factor);
        let bursts = trace.sent / 150;
        assert!(trace.reductions.len() as u64 <= bursts, "{trace:?}");
    }
}
