//! A paced sender behind a fixed-bandwidth bottleneck with a deep drop-tail buffer:
//! BBR must converge to the bottleneck rate while keeping the queue short, where
//! CUBIC fills the buffer.

use super::*;
use std::collections::BTreeMap;

const MTU: u16 = 1200;
/// 20 Mbit/s: 2.5 MB/s, one 1200-byte packet every 480 µs.
const RATE: u64 = 2_500_000;
const TX: Duration = Duration::from_micros(480);
const ONE_WAY: Duration = Duration::from_millis(10);
/// 250 packets: six times the 50 kB bandwidth-delay product.
const BUFFER: u64 = 250;

#[derive(Debug)]
struct Outcome {
    /// Bytes per second delivered to the receiver over the measured window.
    goodput: u64,
    /// Mean time packets sent in the window waited in the bottleneck queue.
    mean_queue: Duration,
    drops: u64,
}

/// Bulk transfer for `duration`, measured from `warmup` on.
fn bottleneck(cc: CcAlgorithm, warmup: Duration, duration: Duration) -> (Outcome, Recovery<()>) {
    let config = RecoveryConfig {
        cc,
        pacing: true,
        ..RecoveryConfig::default()
    };
    let mut r: Recovery<()> = Recovery::new(&config);
    let path = PathState {
        max_ack_delay: Duration::ZERO,
        ..confirmed()
    };
    let t0 = test_epoch();
    let (start, end) = (t0 + warmup, t0 + duration);
    // ACK arrival (time, pn) at the sender; the receiver acknowledges every packet
    // at once, so one range up to the largest received covers all but the holes,
    // which the last 32 ranges describe.
    let mut acks: BTreeMap<(Instant, u64), ()> = BTreeMap::new();
    let mut received = crate::range_set::RangeSet::new();
    let (mut acked, mut lost) = (Vec::new(), Vec::new());
    let (mut now, mut link_free, mut pn) = (t0, t0, 0u64);
    let (mut delivered, mut queued, mut queued_packets, mut drops) =
        (0u64, Duration::ZERO, 0u32, 0u64);
    while now < end {
        let mut paced = None;
        while r.send_allowance() >= u64::from(MTU) {
            if let Some(at) = r.pacing_delay(now, u64::from(MTU)) {
                paced = Some(at);
                break;
            }
            r.on_packet_sent(now, SpaceId::Data, pn, MTU, true, true, (), &path);
            let wait = link_free.saturating_duration_since(now);
            if wait.as_nanos() / TX.as_nanos() >= u128::from(BUFFER) {
                drops += 1;
            } else {
                link_free = now.max(link_free) + TX;
                if now >= start {
                    queued += wait;
                    queued_packets += 1;
                }
                // Arrives at the receiver one way later, acknowledged at once.
                let arrive = link_free + ONE_WAY;
                if arrive >= start && arrive < end {
                    delivered += u64::from(MTU);
                }
                acks.insert((arrive + ONE_WAY, pn), ());
            }
            pn += 1;
        }
        let events = [
            acks.keys().next().map(|k| k.0),
            r.loss_detection_timer(),
            paced,
        ];
        let Some(t) = events.into_iter().flatten().min() else {
            break;
        };
        now = t;
        if let Some(&key) = acks.keys().next().filter(|k| k.0 == now) {
            acks.remove(&key);
            received.insert_one(key.1);
            received.truncate_low(32);
            acked.clear();
            lost.clear();
            let ranges = received.iter().rev().map(|r| r.start..=r.end - 1);
            r.on_ack_received(
                now,
                SpaceId::Data,
                ranges,
                Duration::ZERO,
                None,
                &path,
                &mut acked,
                &mut lost,
            )
            .expect("valid ACK");
        } else if r.loss_detection_timer().is_some_and(|t| t <= now) {
            lost.clear();
            r.on_timeout(now, &path, &mut lost);
        }
    }
    let window = (end - start).as_secs_f64();
    let outcome = Outcome {
        goodput: (delivered as f64 / window) as u64,
        mean_queue: queued / queued_packets.max(1),
        drops,
    };
    (outcome, r)
}

#[test]
fn bbr_converges_to_the_bottleneck_rate_with_a_short_queue() {
    let warmup = Duration::from_secs(3);
    // Long enough for a ProbeRTT (after 10 s).
    let duration = Duration::from_secs(14);
    let (bbr, r) = bottleneck(CcAlgorithm::Bbr, warmup, duration);
    let (cubic, _) = bottleneck(CcAlgorithm::Cubic, warmup, duration);
    let bdp_time = 2 * ONE_WAY;
    // BBR: the model matches the path...
    let Some(bw) = r.controller().pacing_rate() else {
        panic!("BBR paces");
    };
    assert!(bw > RATE / 2 && bw < RATE * 2, "pacing at {bw} B/s");
    // ... it delivers (nearly) the whole bottleneck...
    assert!(bbr.goodput >= RATE * 9 / 10, "BBR {bbr:?}");
    assert!(bbr.goodput <= RATE, "BBR {bbr:?}");
    // ... with a queue well under one BDP, and never overflowing the buffer.
    assert!(bbr.mean_queue < bdp_time / 2, "BBR {bbr:?}");
    assert_eq!(bbr.drops, 0, "BBR {bbr:?}");
    // CUBIC gets the bandwidth too, but by filling the deep buffer.
    assert!(cubic.goodput >= RATE * 9 / 10, "CUBIC {cubic:?}");
    assert!(cubic.drops > 0, "CUBIC {cubic:?}");
    assert!(
        bbr.mean_queue * 4 < cubic.mean_queue,
        "BBR {bbr:?} vs CUBIC {cubic:?}"
    );
}
