//! A paced sender behind a fixed-bandwidth bottleneck with a deep drop-tail buffer:
//! BBR must converge to the bottleneck rate while keeping the queue short, where
//! CUBIC fills the buffer. The bottleneck is BBR's simulator (`cc::bbr::sim`).

use super::*;
use crate::cc::bbr::sim::{FlowStats, Link, run};

/// 20 Mbit/s: 2.5 MB/s, one 1200-byte packet every 480 µs.
const RATE: u64 = 2_500_000;
const ONE_WAY: Duration = Duration::from_millis(10);
/// 250 packets: six times the 50 kB bandwidth-delay product.
const BUFFER: u64 = 250;

/// Bulk transfer until `end`, measured from `warmup` on.
fn bottleneck(cc: CcAlgorithm, warmup: Duration, end: Duration) -> FlowStats {
    let link = Link::new(RATE, ONE_WAY, BUFFER, 0);
    let mut flows = run(&[(cc, Duration::ZERO)], link, warmup, end);
    flows.pop().expect("one flow")
}

#[test]
fn bbr_converges_to_the_bottleneck_rate_with_a_short_queue() {
    let warmup = Duration::from_secs(3);
    // Long enough for a ProbeRTT (after 10 s).
    let end = Duration::from_secs(14);
    let bbr = bottleneck(CcAlgorithm::Bbr, warmup, end);
    let cubic = bottleneck(CcAlgorithm::Cubic, warmup, end);
    let bdp_time = 2 * ONE_WAY;
    // BBR: the model matches the path...
    let Some(bw) = bbr.pacing_rate else {
        panic!("BBR paces");
    };
    assert!(bw > RATE / 2 && bw < RATE * 2, "pacing at {bw} B/s");
    // ... it delivers (nearly) the whole bottleneck...
    assert!(bbr.goodput >= RATE * 9 / 10, "BBR {bbr:?}");
    assert!(bbr.goodput <= RATE, "BBR {bbr:?}");
    // ... with a queue well under one BDP, and never overflowing the buffer.
    assert!(bbr.mean_queue < bdp_time / 2, "BBR {bbr:?}");
    assert_eq!(bbr.dropped, 0, "BBR {bbr:?}");
    // CUBIC gets the bandwidth too, but by filling the deep buffer.
    assert!(cubic.goodput >= RATE * 9 / 10, "CUBIC {cubic:?}");
    assert!(cubic.dropped > 0, "CUBIC {cubic:?}");
    assert!(
        bbr.mean_queue * 4 < cubic.mean_queue,
        "BBR {bbr:?} vs CUBIC {cubic:?}"
    );
}
