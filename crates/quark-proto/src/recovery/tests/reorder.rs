//! Reordering: spurious-loss detection and undo, adaptive thresholds, and a
//! deterministic simulation of a reordering path.

use super::*;
use crate::range_set::RangeSet;
use std::collections::BTreeMap;

#[test]
fn a_spurious_loss_is_undone_and_turns_packet_counting_off() {
    let mut h = H::new(CcAlgorithm::NewReno, confirmed());
    for pn in 0..10 {
        h.send(pn, SpaceId::Data, pn);
    }
    h.ack(100, SpaceId::Data, &[1..=9]).unwrap();
    assert_eq!(h.lost_pns(), vec![0]);
    assert_eq!(h.r.congestion_window(), 6000);
    // Packet 0 was only late.
    let s = h.ack(101, SpaceId::Data, &[0..=9]).unwrap();
    assert_eq!(s.spurious_losses, 1);
    assert!(h.acked.is_empty(), "handed back once, as lost");
    // The window as it was, with the growth of packets 1-9 that the false
    // recovery withheld from slow start (0 itself is not acknowledged twice).
    assert_eq!(h.r.congestion_window(), 12_000 + 9 * 1200);
    assert_eq!(h.r.controller().ssthresh(), u64::MAX);
    // The path reorders: from now on only the time threshold declares losses.
    assert_eq!(h.r.packet_threshold(), u64::MAX);
    let st = h.r.stats();
    assert_eq!(
        (
            st.congestion_events,
            st.spurious_losses,
            st.spurious_congestion_events
        ),
        (1, 1, 1)
    );
    // The undone episode is gone: a new loss cuts the window again. 10 is
    // not lost by counting, 19 behind, but 9/8 RTT after it was sent.
    for pn in 10..30 {
        h.send(110, SpaceId::Data, pn);
    }
    h.ack(200, SpaceId::Data, &[11..=29]).unwrap();
    assert!(h.lost_pns().is_empty());
    let grown = h.r.congestion_window();
    assert_eq!(h.timeout(223), TimeoutAction::Lost);
    assert_eq!(h.lost_pns(), vec![10]);
    assert!(h.r.congestion_window() < grown);
}

#[test]
fn undo_needs_every_loss_of_the_episode_to_be_spurious() {
    let mut h = H::new(CcAlgorithm::Cubic, confirmed());
    for pn in 0..10 {
        h.send(pn, SpaceId::Data, pn);
    }
    h.ack(100, SpaceId::Data, &[2..=9]).unwrap();
    assert_eq!(h.lost_pns(), vec![0, 1]);
    let cut = h.r.congestion_window();
    // 0 arrives late, 1 never does: the cut stands.
    h.ack(101, SpaceId::Data, &[2..=9, 0..=0]).unwrap();
    assert_eq!(h.r.congestion_window(), cut);
    let st = h.r.stats();
    assert_eq!((st.spurious_losses, st.spurious_congestion_events), (1, 0));
}

#[test]
fn a_late_packet_raises_the_time_threshold() {
    let mut h = H::new(CcAlgorithm::NewReno, confirmed());
    h.send(0, SpaceId::Data, 0);
    h.send(10, SpaceId::Data, 1);
    h.ack(110, SpaceId::Data, &[1..=1]).unwrap();
    // RTT 100 ms: 0 is lost by the time threshold at 112.5 ms.
    assert_eq!(h.timeout(113), TimeoutAction::Lost);
    assert_eq!(h.lost_pns(), vec![0]);
    // It arrives 150 ms after it was sent: 1.5 RTT, so the threshold becomes 13/8.
    h.ack(150, SpaceId::Data, &[0..=1]).unwrap();
    assert_eq!(h.r.stats().spurious_congestion_events, 1);
    assert!((h.r.time_threshold() - 1.625).abs() < 1e-9);
    assert_eq!(h.r.packet_threshold(), u64::MAX, "time alone from now on");
    h.send(200, SpaceId::Data, 2);
    h.send(210, SpaceId::Data, 3);
    h.ack(310, SpaceId::Data, &[3..=3]).unwrap();
    let timer = h.timer_us().unwrap();
    assert!(
        timer.abs_diff(362_500) <= 1,
        "2 now waits 1.625 RTT: {timer}"
    );
}

#[test]
fn fixed_thresholds_when_adaptation_is_off() {
    let config = RecoveryConfig {
        adaptive_reordering: false,
        pacing: false,
        ..RecoveryConfig::default()
    };
    let mut h = H::with_config(&config, confirmed());
    for pn in 0..10 {
        h.send(pn, SpaceId::Data, pn);
    }
    h.ack(100, SpaceId::Data, &[1..=9]).unwrap();
    h.ack(101, SpaceId::Data, &[0..=9]).unwrap();
    // Still detected and undone, but the threshold stays.
    assert_eq!(h.r.stats().spurious_congestion_events, 1);
    assert_eq!(h.r.packet_threshold(), 3);
}

#[test]
fn losing_a_pmtu_probe_is_no_congestion_signal() {
    let mut h = H::new(CcAlgorithm::NewReno, confirmed());
    let probe = SendFlags {
        ack_eliciting: true,
        in_flight: true,
        ecn: None,
        mtu_probe: true,
    };
    h.send_with(0, SpaceId::Data, 0, probe);
    for pn in 1..5 {
        h.send(pn, SpaceId::Data, pn);
    }
    h.ack(100, SpaceId::Data, &[1..=4]).unwrap();
    assert_eq!(h.lost_pns(), vec![0]);
    assert_eq!(h.r.stats().congestion_events, 0);
    assert_eq!(h.r.congestion_window(), 12_000 + 4 * 1200);
    assert_eq!(h.r.bytes_in_flight(), 0);
}

/// Outcome of [`reordering_path`].
#[derive(Debug)]
struct Run {
    /// Stats when half the packets had been sent, and at the end.
    half: RecoveryStats,
    end: RecoveryStats,
    packet_threshold: u64,
    time_threshold: f64,
}

/// `packets` bulk packets over a 20 ms path serialising one packet per 100 µs,
/// flow-control limited to 150 in flight (no queue, no loss). `percent` of those
/// among the first `reordered` are delivered late, behind 1 to 5 of the packets
/// sent after them; the receiver acknowledges every packet at once.
fn reordering_path(percent: u64, reordered: u64, adaptive: bool, packets: u64) -> Run {
    const MTU: u16 = 1200;
    const TX: Duration = Duration::from_micros(100);
    const ONE_WAY: Duration = Duration::from_millis(10);
    const MAX_IN_FLIGHT: u64 = 150 * MTU as u64;
    let config = RecoveryConfig {
        adaptive_reordering: adaptive,
        pacing: false,
        ..RecoveryConfig::default()
    };
    let mut r: Recovery<()> = Recovery::new(&config);
    let path = PathState {
        max_ack_delay: Duration::ZERO,
        ..confirmed()
    };
    let t0 = test_epoch();
    let mut rng = 0x853c_49e6_748f_ea9bu64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    // (arrival time, pn) at the receiver; (arrival time, seq) → ranges at the sender.
    let mut to_receiver: BTreeMap<(Instant, u64), ()> = BTreeMap::new();
    let mut to_sender: BTreeMap<(Instant, u64), Vec<RangeInclusive<u64>>> = BTreeMap::new();
    let mut received = RangeSet::new();
    let (mut acked, mut lost) = (Vec::new(), Vec::new());
    let (mut now, mut link_free, mut pn, mut seq) = (t0, t0, 0u64, 0u64);
    let mut half = None;
    loop {
        while pn < packets
            && r.send_allowance() >= u64::from(MTU)
            && r.bytes_in_flight() + u64::from(MTU) <= MAX_IN_FLIGHT
        {
            r.on_packet_sent(now, SpaceId::Data, pn, MTU, true, true, (), &path);
            let depart = now.max(link_free) + TX;
            link_free = depart;
            let mut arrive = depart + ONE_WAY;
            if pn < reordered && next() % 100 < percent {
                // Late by k packets (and half a slot, so there is no tie).
                arrive += TX * (1 + (next() % 5) as u32) + TX / 2;
            }
            to_receiver.insert((arrive, pn), ());
            pn += 1;
            if pn == packets / 2 {
                half = Some(r.stats());
            }
        }
        let events = [
            to_receiver.keys().next().map(|k| k.0),
            to_sender.keys().next().map(|k| k.0),
            r.loss_detection_timer(),
        ];
        let Some(t) = events.into_iter().flatten().min() else {
            break;
        };
        now = t;
        if let Some(&(at, p)) = to_receiver.keys().next().filter(|k| k.0 == now) {
            to_receiver.remove(&(at, p));
            received.insert_one(p);
            received.truncate_low(32);
            let ranges = received.iter().rev().map(|r| r.start..=r.end - 1).collect();
            to_sender.insert((now + ONE_WAY, seq), ranges);
            seq += 1;
        } else if let Some(&key) = to_sender.keys().next().filter(|k| k.0 == now) {
            let ranges = to_sender.remove(&key).unwrap_or_default();
            acked.clear();
            lost.clear();
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
            lost.clear();
            r.on_timeout(now, &path, &mut lost);
        }
    }
    assert_eq!(r.bytes_in_flight(), 0, "everything resolved");
    Run {
        half: half.expect("sent half"),
        end: r.stats(),
        packet_threshold: r.packet_threshold(),
        time_threshold: r.time_threshold(),
    }
}

#[test]
fn in_order_delivery_costs_nothing() {
    let run = reordering_path(0, 0, true, 20_000);
    assert_eq!(run.end, RecoveryStats::default(), "{run:?}");
    assert_eq!((run.packet_threshold, run.time_threshold), (3, 9.0 / 8.0));
}

#[test]
fn adaptive_thresholds_stop_spurious_congestion_events_under_reordering() {
    for percent in [1, 25] {
        let run = reordering_path(percent, u64::MAX, true, 20_000);
        let second_half = run.end.congestion_events - run.half.congestion_events;
        // A spurious loss or two until counting is off, the cuts undone...
        assert!(run.end.spurious_losses > 0, "{percent}%: {run:?}");
        assert_eq!(
            run.end.lost_packets, run.end.spurious_losses,
            "no real loss"
        );
        assert!(
            run.end.spurious_congestion_events > 0,
            "{percent}%: {run:?}"
        );
        // ... then (nearly) none at all.
        assert!(second_half <= 1, "{percent}%: {run:?}");
        assert_eq!(run.packet_threshold, u64::MAX, "{percent}%: time alone");
        assert_eq!(run.time_threshold, 9.0 / 8.0, "{percent}%");
    }
}

#[test]
fn fixed_thresholds_keep_cutting_under_reordering() {
    // The same path without adaptation: spurious losses (and cuts, undone each
    // time) all the way through.
    let run = reordering_path(25, u64::MAX, false, 20_000);
    let second_half = run.end.congestion_events - run.half.congestion_events;
    assert!(second_half > 20, "{run:?}");
    assert_eq!(run.packet_threshold, 3);
}

#[test]
fn thresholds_decay_once_reordering_stops() {
    // Reordering for the first 5 000 packets, then none for 40 000 (about 260
    // round trips): the fast, in-order loss detection comes back.
    let run = reordering_path(25, 5_000, true, 45_000);
    assert!(run.end.spurious_losses > 0, "{run:?}");
    assert_eq!((run.packet_threshold, run.time_threshold), (3, 9.0 / 8.0));
}
