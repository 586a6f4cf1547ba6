//! BBR against its model on the simulated bottleneck ([`super::sim`]): the state
//! machine, pacing at the bottleneck rate, a window of about two BDPs, random
//! loss, and sharing with a second flow.

use std::time::Duration;

use super::sim::{FlowStats, Link, jain, run};
use crate::cc::CcAlgorithm;

const SEC: Duration = Duration::from_secs(1);
const BBR: CcAlgorithm = CcAlgorithm::Bbr;
const CUBIC: CcAlgorithm = CcAlgorithm::Cubic;
/// 20 Mbit/s.
const RATE: u64 = 2_500_000;

/// 20 Mbit/s, 40 ms RTT (a 100 kB BDP), a buffer of two BDPs.
fn link(loss_ppm: u64) -> Link {
    Link::new(RATE, Duration::from_millis(20), 166, loss_ppm)
}

fn one(cc: CcAlgorithm, link: Link) -> FlowStats {
    // 14 s: long enough for a ProbeRTT (after 10 s); measured after 3 s.
    let mut s = run(&[(cc, Duration::ZERO)], link, 3 * SEC, 14 * SEC);
    s.pop().expect("one flow")
}

#[test]
fn walks_startup_drain_probe_bw_then_probe_rtt() {
    let f = one(BBR, link(0));
    assert_eq!(
        f.phases,
        ["startup", "drain", "probe_bw", "probe_rtt", "probe_bw"],
        "goodput {} sent {} dropped {}",
        f.goodput,
        f.sent,
        f.dropped
    );
}

#[test]
fn paces_at_the_bottleneck_rate_with_a_window_of_two_bdp() {
    let l = link(0);
    let f = one(BBR, l);
    let n = f.probe_bw.len() as u64;
    assert!(n > 1000, "{n} ACKs in ProbeBW");
    let pacing = f.probe_bw.iter().map(|s| s.0).sum::<u64>() / n;
    let cwnd = f.probe_bw.iter().map(|s| s.1).sum::<u64>() / n;
    // The gain cycle averages to 1 (5/4, 3/4, then 1 × 6).
    assert!(pacing.abs_diff(RATE) < RATE / 20, "pacing {pacing} B/s");
    // cwnd_gain 2 × BDP, plus three send quanta (one ProbeRTT pulls it down).
    let bdp = l.bdp();
    assert!(
        cwnd > bdp * 18 / 10 && cwnd < bdp * 22 / 10,
        "cwnd {cwnd}, BDP {bdp}"
    );
    assert!(f.goodput >= RATE * 95 / 100, "goodput {}", f.goodput);
    assert!(
        f.dropped <= 30,
        "only Startup overflows the buffer: {}",
        f.dropped
    );
}

#[test]
fn keeps_ninety_percent_of_the_link_under_random_loss() {
    for loss_ppm in [1_000, 10_000, 20_000] {
        let bbr = one(BBR, link(loss_ppm));
        let cubic = one(CUBIC, link(loss_ppm));
        assert!(
            bbr.goodput >= RATE * 9 / 10,
            "{loss_ppm} ppm: BBR {}",
            bbr.goodput
        );
        // Where a loss-based controller collapses at 1 % and more.
        assert!(
            bbr.goodput > cubic.goodput,
            "{loss_ppm} ppm: CUBIC {}",
            cubic.goodput
        );
        if loss_ppm >= 10_000 {
            assert!(
                cubic.goodput < RATE / 4,
                "{loss_ppm} ppm: CUBIC {}",
                cubic.goodput
            );
        }
    }
}

#[test]
fn keeps_ninety_percent_of_a_long_lossy_path_where_v1_does_not() {
    // 100 Mbit/s, 100 ms RTT, 2 % loss: v1's per-recovery-period cut held
    // the window at what was in flight, every round.
    let l = Link::new(12_500_000, Duration::from_millis(50), 1041, 20_000);
    let v3 = one(BBR, l);
    let v1 = one(CcAlgorithm::Bbr1, l);
    assert!(v3.goodput >= l.rate * 9 / 10, "bbr {}", v3.goodput);
    assert!(v1.goodput < v3.goodput * 9 / 10, "bbr1 {}", v1.goodput);
}

#[test]
fn two_flows_converge_to_fair_shares() {
    // Buffers of one and two BDPs (the lab's emulated link has one).
    for buffer in [83, 166] {
        let l = Link { buffer, ..link(0) };
        let s = run(
            &[(BBR, Duration::ZERO), (BBR, Duration::ZERO)],
            l,
            5 * SEC,
            20 * SEC,
        );
        let g = [s[0].goodput, s[1].goodput];
        let index = jain(&g);
        assert!(index >= 0.95, "buffer {buffer}: Jain {index}: {g:?}");
        assert!(g[0] + g[1] >= RATE * 9 / 10, "buffer {buffer}: {g:?}");
    }
}

#[test]
fn shares_with_cubic_without_starving_it_or_being_starved() {
    let s = run(
        &[(BBR, Duration::ZERO), (CUBIC, Duration::ZERO)],
        link(0),
        5 * SEC,
        20 * SEC,
    );
    let g = [s[0].goodput, s[1].goodput];
    assert!(g.iter().all(|&x| x > RATE * 3 / 10), "BBR, CUBIC: {g:?}");
    assert!(g[0] + g[1] >= RATE * 9 / 10, "{g:?}");
}

#[test]
fn jain_index() {
    assert_eq!(jain(&[5, 5]), 1.0);
    assert_eq!(jain(&[1, 0]), 0.5);
}

#[test]
fn keeps_the_link_when_the_pacer_wakes_late_and_acks_come_in_batches() {
    // The lab's 100 Mbit/s cell: 30 ms RTT, one BDP of buffer, 1 % loss
    // both ways, an ACK per 64 packets (ACK frequency) or after 7 ms, and a
    // loaded machine that wakes the paced sender 1 ms late. The pacer once
    // dropped what a late wake-up had earned: the sender fell below its
    // rate, BBR's estimate followed what it delivered, and the flow spiralled
    // down to a third of the link (the emulated grid's 73-76 %).
    let l = Link {
        ack_every: 64,
        ack_delay: Duration::from_millis(7),
        ack_loss: true,
        wake_late: Duration::from_millis(1),
        ..Link::new(12_500_000, Duration::from_millis(15), 312, 10_000)
    };
    let f = one(BBR, l);
    assert!(f.goodput >= l.rate * 9 / 10, "goodput {}", f.goodput);
}

/// The lab's link at `rate` bytes a second with one BDP of buffer and
/// `loss_ppm` random loss both ways, RTT `rtt_ms`.
fn lab_link(rate: u64, rtt_ms: u64, loss_ppm: u64) -> Link {
    let bdp_packets = rate * rtt_ms / 1000 / 1200;
    Link {
        ack_loss: true,
        ..Link::new(
            rate,
            Duration::from_millis(rtt_ms / 2),
            bdp_packets,
            loss_ppm,
        )
    }
}

#[test]
fn keeps_the_link_at_two_percent_loss_when_acks_come_in_batches() {
    // 2 % loss at 20 ms, an ACK per 64 packets or after 10 ms, wake-ups 2 ms
    // late: the bounds hold the window near one BDP, and a window of one
    // BDP idles the link between batched ACKs. v3's extra_acked, in the
    // least the bounds leave, covers those gaps (91.9 % without, 97.1 %).
    let l = Link {
        ack_every: 64,
        ack_delay: Duration::from_millis(10),
        wake_late: Duration::from_millis(2),
        ..lab_link(12_500_000, 20, 20_000)
    };
    let f = one(BBR, l);
    assert!(f.goodput >= l.rate * 95 / 100, "goodput {}", f.goodput);
}

#[test]
fn random_loss_at_the_threshold_leaves_the_window_at_two_bdp() {
    // 2 % random loss at 30 ms: with the draft's fixed 2 % a round in two
    // was "too lossy", probes ended and the window sat at the bounds' floor
    // (1.1 BDP). Judged above the path's own loss it stays at cwnd_gain 2.
    let l = lab_link(12_500_000, 30, 20_000);
    let f = one(BBR, l);
    let n = f.probe_bw.len().max(1) as u64;
    let cwnd = f.probe_bw.iter().map(|s| s.1).sum::<u64>() / n;
    assert!(cwnd >= l.bdp() * 17 / 10, "cwnd {cwnd}, BDP {}", l.bdp());
    assert!(f.goodput >= l.rate * 95 / 100, "goodput {}", f.goodput);
}

/// The first 700 ms of a 1 Gbit/s, 10 ms path with one BDP of buffer,
/// ACKs every 10 packets (or 2 ms) lost as often as data, and a sender
/// that wakes 200 µs late: the lab's 50 MB download at that rate.
fn fast_start(loss_ppm: u64) -> u64 {
    let l = Link {
        ack_every: 10,
        ack_delay: Duration::from_millis(2),
        wake_late: Duration::from_micros(200),
        ..lab_link(125_000_000, 10, loss_ppm)
    };
    let mut s = run(&[(BBR, Duration::ZERO)], l, Duration::ZERO, 7 * SEC / 10);
    let f = s.pop().expect("one flow");
    assert_eq!(f.phases, ["startup", "drain", "probe_bw"], "{loss_ppm} ppm");
    f.goodput * 1000 / l.rate
}

#[test]
fn random_loss_costs_a_fast_start_little() {
    // Startup must not leave early on random loss, nor ProbeBW cut for it:
    // at 1-2 % the first 700 ms keep nearly what a clean path gives (the
    // lab's link loses 12-19 % there against Linux TCP BBR, so this says
    // where that is not). The v1 model's cut on loss fails it (834 against
    // 903 per mille at 1 %).
    let clean = fast_start(0);
    assert!(clean >= 850, "clean: {clean} per mille of the link");
    for loss_ppm in [10_000, 20_000] {
        let lossy = fast_start(loss_ppm);
        assert!(
            lossy * 100 >= clean * 95,
            "{loss_ppm} ppm: {lossy} per mille, clean {clean}"
        );
    }
}
