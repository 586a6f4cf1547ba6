use std::time::{Duration, Instant};

use super::*;
use crate::config::{Blackhole, GilbertElliott, RateLimit};

const MS: Duration = Duration::from_millis(1);

/// A datagram of `len` bytes carrying its sequence number in the first 8.
fn datagram(seq: u64, len: usize) -> Vec<u8> {
    let mut d = vec![0xab; len.max(8)];
    d[..8].copy_from_slice(&seq.to_be_bytes());
    d
}

fn seq_of(d: &[u8]) -> u64 {
    u64::from_be_bytes(d[..8].try_into().unwrap())
}

/// Sends `n` datagrams of `len` bytes, one every `gap`, polling the link at every
/// deadline in between; returns (arrival offset from t0, datagram) in delivery order.
fn run(link: &mut Link, n: u64, gap: Duration, len: usize) -> Vec<(Duration, Vec<u8>)> {
    let t0 = Instant::now();
    let mut out = Vec::new();
    let drain = |link: &mut Link, until: Instant, out: &mut Vec<_>| {
        while let Some(t) = link.next_deadline().filter(|&t| t <= until) {
            while let Some(d) = link.poll(t) {
                out.push((t - t0, d));
            }
        }
    };
    for i in 0..n {
        let now = t0 + gap * i as u32;
        drain(link, now, &mut out);
        link.send(now, datagram(i, len));
    }
    drain(link, t0 + Duration::from_secs(1_000_000), &mut out);
    out
}

fn seqs(out: &[(Duration, Vec<u8>)]) -> Vec<u64> {
    out.iter().map(|(_, d)| seq_of(d)).collect()
}

/// Datagrams delivered after one with a higher sequence number.
fn overtaken(seqs: &[u64]) -> usize {
    let mut max = None;
    seqs.iter()
        .filter(|&&s| {
            let late = max.is_some_and(|m| s < m);
            max = Some(max.map_or(s, |m: u64| m.max(s)));
            late
        })
        .count()
}

fn within(value: f64, expected: f64, tolerance: f64) -> bool {
    (value - expected).abs() <= tolerance
}

#[test]
fn perfect_link_delays_exactly_and_keeps_order() {
    let mut link = Link::new(LinkConfig::with_delay(10 * MS), 1);
    let out = run(&mut link, 100, MS, 1200);
    assert_eq!(seqs(&out), (0..100).collect::<Vec<_>>());
    for (i, (at, _)) in out.iter().enumerate() {
        assert_eq!(*at, MS * i as u32 + 10 * MS);
    }
    let c = link.counters();
    assert_eq!((c.sent, c.delivered, c.dropped()), (100, 100, 0));
    assert_eq!(c.delivered_bytes, 120_000);
    assert_eq!(link.next_deadline(), None);
    assert_eq!(link.queued(), 0);
}

#[test]
fn random_loss_matches_the_rate_and_replays() {
    let cfg = LinkConfig {
        loss: 0.01,
        ..LinkConfig::with_delay(MS)
    };
    let n = 100_000;
    let mut a = Link::new(cfg.clone(), 42);
    let out_a = seqs(&run(&mut a, n, Duration::from_micros(10), 100));
    // Binomial: mean 1000, σ ≈ 31.5; 5σ.
    let lost = a.counters().lost as f64;
    assert!(within(lost, 1000.0, 160.0), "lost {lost}");
    assert_eq!(a.counters().delivered + a.counters().lost, n);
    let mut b = Link::new(cfg.clone(), 42);
    assert_eq!(seqs(&run(&mut b, n, Duration::from_micros(10), 100)), out_a);
    assert_eq!(a.counters(), b.counters());
    let mut c = Link::new(cfg, 43);
    assert_ne!(seqs(&run(&mut c, n, Duration::from_micros(10), 100)), out_a);
}

#[test]
fn duplication_and_corruption_rates() {
    let cfg = LinkConfig {
        duplicate: 0.05,
        corrupt: 0.02,
        ..LinkConfig::default()
    };
    let mut link = Link::new(cfg, 7);
    let n = 20_000;
    let out = run(&mut link, n, MS, 64);
    let c = *link.counters();
    // Binomial σ ≈ 31 (dup) and ≈ 20 (corrupt, over n + duplicates); 5σ.
    assert!(within(c.duplicated as f64, 1000.0, 155.0), "{c}");
    assert_eq!(c.delivered, n + c.duplicated);
    assert!(
        within(c.corrupted as f64, 0.02 * c.delivered as f64, 100.0),
        "{c}"
    );
    // A corrupted datagram differs from the original in exactly one byte.
    let mut differing = 0;
    for (_, d) in &out {
        let diff = d[8..].iter().filter(|&&b| b != 0xab).count();
        assert!(diff <= 1);
        differing += diff;
    }
    // Flips that hit the sequence number can't be seen here; most can.
    assert!(differing as u64 <= c.corrupted && differing as u64 * 10 >= c.corrupted * 8);
}

#[test]
fn rate_limit_serializes_and_tail_drops() {
    // 8 Mbit/s = 1 byte per µs: a 1000-byte datagram takes 1 ms.
    let cfg = LinkConfig {
        rate: Some(RateLimit {
            bits_per_second: 8_000_000,
            queue: QueueLimit::Packets(5),
            overhead: 0,
        }),
        ..LinkConfig::with_delay(10 * MS)
    };
    let mut link = Link::new(cfg, 1);
    let t0 = Instant::now();
    for i in 0..10 {
        link.send(t0, datagram(i, 1000));
    }
    // One on the wire, five waiting, four dropped.
    assert_eq!(link.counters().queue_dropped, 4);
    let mut arrivals = Vec::new();
    while let Some(t) = link.next_deadline() {
        while let Some(d) = link.poll(t) {
            arrivals.push((t - t0, seq_of(&d)));
        }
    }
    let expected: Vec<_> = (0..6).map(|i| (MS * (i + 1) + 10 * MS, i as u64)).collect();
    assert_eq!(arrivals, expected);
}

#[test]
fn rate_limit_throughput_and_byte_queue() {
    // Offer 20 Mbit/s to a 10 Mbit/s link with a 30 kB queue for 2 s.
    let cfg = LinkConfig {
        rate: Some(RateLimit {
            bits_per_second: 10_000_000,
            queue: QueueLimit::Bytes(30_000),
            overhead: 28,
        }),
        ..LinkConfig::with_delay(5 * MS)
    };
    let mut link = Link::new(cfg, 1);
    // 1222 + 28 bytes every 0.5 ms = 20 Mbit/s on the wire.
    let out = run(&mut link, 4000, Duration::from_micros(500), 1222);
    let c = *link.counters();
    let span = out.last().unwrap().0 - out.first().unwrap().0;
    let wire_bits = (out.len() - 1) as f64 * 1250.0 * 8.0;
    let rate = wire_bits / span.as_secs_f64();
    assert!(within(rate, 10e6, 0.01e6), "throughput {rate}");
    // Half the offered load can't get through.
    assert!(within(c.queue_dropped as f64, 2000.0, 60.0), "{c}");
    // Queueing delay never exceeds what the queue holds: 30 kB ≈ 24 datagrams
    // plus the one being sent, 1 ms each, plus the 5 ms delay.
    let sent_at = |s: u64| Duration::from_micros(500) * s as u32;
    let worst = out
        .iter()
        .map(|(at, d)| *at - sent_at(seq_of(d)))
        .max()
        .unwrap();
    assert!(
        worst <= 31 * MS && worst >= 28 * MS,
        "worst delay {worst:?}"
    );
}

#[test]
fn gilbert_elliott_mean_and_burst_length() {
    let ge = GilbertElliott {
        p_enter: 0.01,
        p_exit: 0.25,
        loss_bad: 1.0,
        loss_good: 0.0,
    };
    let cfg = LinkConfig {
        burst: Some(ge),
        ..LinkConfig::default()
    };
    let mut link = Link::new(cfg, 9);
    let n = 200_000;
    let got = seqs(&run(&mut link, n, Duration::from_micros(10), 16));
    let lost = link.counters().burst_lost as f64 / n as f64;
    assert!(within(lost, ge.mean_loss(), 0.004), "mean loss {lost}");
    // Runs of consecutive losses average 1 / p_exit = 4.
    let (mut runs, mut prev) = (0u64, None);
    for &s in &got {
        if prev.is_some_and(|p| s != p + 1) {
            runs += 1;
        }
        prev = Some(s);
    }
    let mean_run = link.counters().burst_lost as f64 / runs as f64;
    assert!(within(mean_run, 4.0, 0.4), "mean burst {mean_run}");
}

#[test]
fn blackhole_drops_exactly_the_dark_periods() {
    let cfg = LinkConfig {
        blackhole: Some(Blackhole {
            on: Duration::from_secs(5),
            off: Duration::from_secs(2),
            repeat: None,
        }),
        ..LinkConfig::with_delay(MS)
    };
    let mut link = Link::new(cfg, 3);
    // One datagram every 10 ms for 20 s.
    let got = seqs(&run(&mut link, 2000, 10 * MS, 100));
    let dark = |s: &u64| (500..700).contains(s) || (1200..1400).contains(s) || s >= &1900;
    let expected: Vec<u64> = (0..2000).filter(|s| !dark(s)).collect();
    assert_eq!(got, expected);
    assert_eq!(link.counters().blackholed, 200 + 200 + 100);
}

#[test]
fn reordering_by_delay_reorders_at_the_rate() {
    let cfg = LinkConfig {
        reorder: 0.01,
        reorder_depth: ReorderDepth::Delay(3 * MS),
        ..LinkConfig::with_delay(10 * MS)
    };
    let mut link = Link::new(cfg, 5);
    let n = 50_000;
    let got = seqs(&run(&mut link, n, Duration::from_micros(100), 100));
    assert_eq!(got.len() as u64, n, "nothing lost");
    let held = link.counters().reordered;
    assert!(within(held as f64, 500.0, 112.0), "held {held}");
    // Each held datagram is overtaken by the ~30 sent in the next 3 ms: exactly
    // the held ones arrive late.
    assert_eq!(overtaken(&got) as u64, held);
}

#[test]
fn reordering_by_packets_lets_exactly_n_overtake() {
    let cfg = LinkConfig {
        reorder: 0.02,
        reorder_depth: ReorderDepth::Packets(3),
        ..LinkConfig::with_delay(10 * MS)
    };
    let mut link = Link::new(cfg, 11);
    let got = seqs(&run(&mut link, 10_000, MS, 100));
    assert_eq!(got.len(), 10_000);
    let held = link.counters().reordered;
    assert!(held > 100, "held {held}");
    // A held datagram comes right after the third one sent after it (unless one
    // of those was held too, and fewer overtake it): count who overtook each.
    let (mut displaced, mut by_three) = (0, 0);
    for (pos, &s) in got.iter().enumerate() {
        let later_before = got[..pos].iter().filter(|&&x| x > s).count();
        if later_before > 0 {
            displaced += 1;
            by_three += usize::from(later_before == 3);
        }
    }
    assert_eq!(displaced as u64, held);
    assert!(by_three * 10 >= displaced * 9, "{by_three} of {displaced}");
}

#[test]
fn held_datagram_is_released_when_traffic_stops() {
    let cfg = LinkConfig {
        reorder: 1.0,
        reorder_depth: ReorderDepth::Packets(5),
        ..LinkConfig::with_delay(10 * MS)
    };
    let mut link = Link::new(cfg, 1);
    let t0 = Instant::now();
    link.send(t0, datagram(0, 10));
    // Deadline: normal arrival (10 ms) + one more one-way delay.
    assert_eq!(link.next_deadline(), Some(t0 + 20 * MS));
    assert_eq!(link.poll(t0 + 19 * MS), None);
    assert!(link.poll(t0 + 20 * MS).is_some());
}

#[test]
fn jitter_keeps_fifo_order_unless_asked() {
    let cfg = LinkConfig {
        jitter: 2 * MS,
        ..LinkConfig::with_delay(10 * MS)
    };
    let mut link = Link::new(cfg.clone(), 2);
    let out = run(&mut link, 5000, Duration::from_micros(200), 100);
    assert_eq!(overtaken(&seqs(&out)), 0);
    for (at, d) in &out {
        let sent = Duration::from_micros(200) * seq_of(d) as u32;
        // Raised to the previous datagram's time at most by one jitter span.
        assert!(*at >= sent + 8 * MS && *at <= sent + 12 * MS, "{at:?}");
    }
    let mut link = Link::new(
        LinkConfig {
            jitter_reorders: true,
            ..cfg
        },
        2,
    );
    assert!(
        overtaken(&seqs(&run(
            &mut link,
            5000,
            Duration::from_micros(200),
            100
        ))) > 100
    );
}

#[test]
fn queue_cap_bounds_memory() {
    let mut link = Link::new(LinkConfig::with_delay(Duration::from_secs(1)), 1);
    link.set_max_queued(100);
    let t0 = Instant::now();
    for i in 0..1000 {
        link.send(t0, datagram(i, 10));
    }
    assert_eq!(link.queued(), 100);
    assert_eq!(link.counters().queue_dropped, 900);
}

#[test]
fn changing_the_config_applies_to_later_datagrams() {
    let mut link = Link::new(LinkConfig::with_delay(10 * MS), 1);
    let t0 = Instant::now();
    link.send(t0, datagram(0, 10));
    link.config_mut().loss = 1.0;
    link.send(t0, datagram(1, 10));
    assert_eq!(link.counters().lost, 1);
    assert_eq!(link.poll(t0 + 10 * MS).map(|d| seq_of(&d)), Some(0));
}

#[test]
fn path_directions_draw_independently() {
    let cfg = LinkConfig {
        loss: 0.5,
        ..LinkConfig::default()
    };
    let mut p: crate::Path = crate::Path::symmetric(cfg, 1);
    let t0 = Instant::now();
    for i in 0..64 {
        p.up.send(t0, datagram(i, 10));
        p.down.send(t0, datagram(i, 10));
    }
    let up: Vec<u64> = std::iter::from_fn(|| p.up.poll(t0))
        .map(|d| seq_of(&d))
        .collect();
    let down: Vec<u64> = std::iter::from_fn(|| p.down.poll(t0))
        .map(|d| seq_of(&d))
        .collect();
    assert_ne!(up, down);
    assert_eq!(p.counters().sent, 128);
    assert_eq!(p.next_deadline(), None);
}
