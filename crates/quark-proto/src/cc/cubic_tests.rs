//! CUBIC tests: each RFC 9438 rule, and the window curve against the RFC's formulas
//! computed here independently of the implementation.

use super::*;
use crate::cc::Controller;
use crate::recovery::test_epoch;
use std::time::Duration;

const MTU: u64 = 1200;
const MSS: f64 = MTU as f64;
const MS: Duration = Duration::from_millis(1);

/// A CUBIC sender grown to `segments` × MTU in slow start, then hit by a loss at
/// `t_loss`. Returns the controller (cwnd = 0.7 × segments).
fn after_loss_at(segments: u64, t_loss: Instant) -> Cubic {
    let mut cc = Cubic::new(MTU);
    let rtt = RttEstimator::new(100 * MS);
    let start = cc.window();
    cc.on_ack(t_loss - MS, t_loss - 2 * MS, segments * MTU - start, &rtt);
    assert_eq!(cc.window(), segments * MTU);
    cc.on_congestion_event(t_loss, t_loss - MS, false, MTU);
    cc
}

/// Acknowledge full windows of MTU-sized packets, spread evenly over each RTT, from
/// `from` until `until`. Every packet was sent one RTT before its ACK.
fn drive(cc: &mut Cubic, from: Instant, until: Instant, rtt: Duration) {
    let est = RttEstimator::new(rtt);
    let mut round = from;
    while round < until {
        let n = (cc.window() / MTU).max(1) as u32;
        for i in 0..n {
            let now = round + rtt * i / n;
            cc.on_ack(now, now - rtt, MTU, &est);
        }
        round += rtt;
    }
}

/// RFC 9438 Figure 1 in segments, written out independently.
fn w_cubic_segments(w_max: f64, k: f64, t: f64) -> f64 {
    0.4 * (t - k).powi(3) + w_max
}

#[test]
fn slow_start_until_first_loss() {
    let t0 = test_epoch();
    let mut cc = Cubic::new(MTU);
    let rtt = RttEstimator::new(100 * MS);
    assert_eq!((cc.window(), cc.ssthresh()), (12_000, u64::MAX));
    for i in 0..100 {
        cc.on_ack(t0 + i * MS, t0, MTU, &rtt);
    }
    assert_eq!(cc.window(), 12_000 + 100 * MTU);
    assert!(
        cc.epoch.is_none(),
        "no congestion avoidance before the first loss"
    );
}

#[test]
fn loss_reduces_by_beta_and_remembers_w_max() {
    let t0 = test_epoch() + Duration::from_secs(1);
    let cc = after_loss_at(100, t0);
    //= https://www.rfc-editor.org/rfc/rfc9438#section-4.6
    //# Parameter β_cubic SHOULD be set to 0.7
    assert_eq!(cc.window(), 70 * MTU);
    assert_eq!(cc.ssthresh(), 70 * MTU);
    assert_eq!(cc.w_max, 100.0 * MSS);
    assert_eq!(cc.cwnd_prior, 100.0 * MSS);
}

#[test]
fn k_is_the_time_to_return_to_w_max() {
    let t_loss = test_epoch() + Duration::from_secs(1);
    let mut cc = after_loss_at(100, t_loss);
    let start = t_loss + 200 * MS;
    cc.on_ack(start, start - 100 * MS, MTU, &RttEstimator::new(100 * MS));
    let epoch = cc.epoch.expect("congestion avoidance started");
    // K = cbrt(W_max (1 - β) / C) = cbrt(100 × 0.3 / 0.4) = cbrt(75) s.
    let k = (100.0f64 * (1.0 - 0.7) / 0.4).cbrt();
    assert!((epoch.k - k).abs() < 1e-9, "K = {} vs {k}", epoch.k);
    assert!((k - 4.2172).abs() < 1e-4);
    assert_eq!(epoch.start, start);
    // The private curve matches the RFC's at a few points (bytes vs segments).
    for t in [0.0, 1.0, 2.5, k, 6.0] {
        let expect = w_cubic_segments(100.0, k, t) * MSS;
        assert!((cc.w_cubic(epoch.k, t) - expect).abs() < 1e-6);
    }
    assert!((cc.w_cubic(epoch.k, 0.0) - 70.0 * MSS).abs() < 1e-6);
}

#[test]
fn window_follows_the_cubic_curve_at_long_rtt() {
    // RTT 100 ms: the Reno-friendly estimate grows by ~0.53 MSS per RTT, far slower
    // than the cubic curve, so the window tracks W_cubic.
    let rtt = 100 * MS;
    let t_loss = test_epoch() + Duration::from_secs(1);
    let mut cc = after_loss_at(100, t_loss);
    let start = t_loss + 2 * rtt;
    let k = 75f64.cbrt();
    let mut now = start;
    for t in [1.0, 2.0, 3.0, k, k + 1.0] {
        let until = start + Duration::from_secs_f64(t);
        drive(&mut cc, now, until, rtt);
        now = until;
        let expect = w_cubic_segments(100.0, k, t);
        let got = cc.window() as f64 / MSS;
        // Per-ACK steps toward W_cubic(t + RTT) track the curve closely.
        assert!(
            (got - expect).abs() / expect < 0.01,
            "t = {t:.3}: window {got:.2} MSS, W_cubic {expect:.2} MSS"
        );
    }
    // Past K the curve is convex: above W_max. By K + 2 s (~62 RTTs) the
    // Reno-friendly estimate has passed cwnd_prior and grows by a full MSS per RTT,
    // so the window may be above the cubic curve, never below it.
    let t = k + 2.0;
    drive(&mut cc, now, start + Duration::from_secs_f64(t), rtt);
    let got = cc.window() as f64 / MSS;
    assert!(got > 100.0);
    assert!(got >= w_cubic_segments(100.0, k, t) * 0.99);
}

#[test]
fn reno_friendly_region_dominates_at_short_rtt() {
    // RTT 1 ms: 0.53 MSS per RTT adds up far faster than the cubic curve climbs.
    let rtt = MS;
    let t_loss = test_epoch() + Duration::from_secs(1);
    let mut cc = after_loss_at(100, t_loss);
    let start = t_loss + 2 * rtt;
    let until = start + 200 * MS;
    drive(&mut cc, start, until, rtt);

    // W_est computed independently: per ACK of one segment,
    // W_est += α × 1 / cwnd (segments), α switching to 1 once W_est ≥ cwnd_prior,
    // and cwnd = W_est while in the Reno-friendly region.
    let alpha = 3.0 * (1.0 - 0.7) / (1.0 + 0.7);
    let mut w_est = 70.0f64;
    let mut cwnd = 70.0f64;
    for _ in 0..200 {
        let n = cwnd.floor() as u32;
        for _ in 0..n {
            let a = if w_est >= 100.0 { 1.0 } else { alpha };
            w_est += a / cwnd;
            cwnd = cwnd.max(w_est);
        }
    }
    let got = cc.window() as f64 / MSS;
    assert!(
        (got - w_est).abs() < 0.5,
        "window {got:.2} vs W_est {w_est:.2}"
    );
    let t = (until - start).as_secs_f64();
    let cubic = w_cubic_segments(100.0, 75f64.cbrt(), t);
    assert!(
        got > cubic + 30.0,
        "W_est {got:.1} should dominate W_cubic {cubic:.1}"
    );
    assert!(got > 100.0, "α = 1 after W_est reached cwnd_prior");
}

#[test]
fn fast_convergence_lowers_w_max() {
    let t_loss = test_epoch() + Duration::from_secs(1);
    let mut cc = after_loss_at(100, t_loss);
    // Another loss before the window got back to W_max.
    let second = t_loss + 500 * MS;
    cc.on_congestion_event(second, t_loss + MS, false, MTU);
    //= https://www.rfc-editor.org/rfc/rfc9438#section-4.7
    //# W_max = cwnd * (1 + β_cubic) / 2
    assert!((cc.w_max - 70.0 * MSS * 0.85).abs() < 1e-6);
    assert_eq!(cc.window(), (70.0 * MSS * 0.7) as u64);
}

#[test]
fn recovery_period_applies() {
    let t_loss = test_epoch() + Duration::from_secs(1);
    let mut cc = after_loss_at(100, t_loss);
    let rtt = RttEstimator::new(100 * MS);
    cc.on_congestion_event(t_loss + 50 * MS, t_loss - 10 * MS, false, MTU);
    assert_eq!(cc.window(), 70 * MTU, "one reduction per recovery period");
    cc.on_ack(t_loss + 60 * MS, t_loss, 10 * MTU, &rtt);
    assert_eq!(
        cc.window(),
        70 * MTU,
        "no growth for packets sent before it"
    );
    assert!(cc.epoch.is_none());
}

#[test]
fn persistent_congestion_restarts_with_k_zero() {
    let t_loss = test_epoch() + Duration::from_secs(1);
    let mut cc = after_loss_at(100, t_loss);
    let rtt = RttEstimator::new(100 * MS);
    let pc = t_loss + Duration::from_secs(2);
    cc.on_congestion_event(pc, t_loss + 100 * MS, true, 10 * MTU);
    assert_eq!(cc.window(), 2 * MTU);
    assert_eq!(cc.ssthresh(), (70.0 * MSS * 0.7) as u64);
    // Slow start back to ssthresh, then congestion avoidance with K = 0.
    let ack = pc + 100 * MS;
    cc.on_ack(ack, pc - MS, 60 * MTU, &rtt);
    assert!(cc.window() >= cc.ssthresh());
    cc.on_ack(ack, pc - MS, MTU, &rtt);
    let epoch = cc.epoch.expect("congestion avoidance");
    assert_eq!(epoch.k, 0.0);
    assert_eq!(cc.w_max, 62.0 * MSS);
}

#[test]
fn spurious_congestion_restores_state() {
    let t_loss = test_epoch() + Duration::from_secs(1);
    let mut cc = after_loss_at(100, t_loss);
    let start = t_loss + 200 * MS;
    drive(&mut cc, start, start + Duration::from_secs(1), 100 * MS);
    let (window, w_max, epoch) = (cc.window(), cc.w_max, cc.epoch.map(|e| e.start));
    cc.on_congestion_event(start + Duration::from_secs(2), start + MS, false, MTU);
    assert!(cc.window() < window);
    cc.on_spurious_congestion();
    assert_eq!(cc.window(), window);
    assert_eq!(cc.ssthresh(), 70 * MTU);
    assert_eq!(cc.w_max, w_max);
    assert_eq!(cc.epoch.map(|e| e.start), epoch);
    assert_eq!(
        cc.recovery.start,
        Some(t_loss),
        "back in the earlier period"
    );
}

/// A loss in slow start declared by the ACK of a burst, then undone: the window
/// gets the burst's growth too (the recovery period had withheld it), and no
/// more than it.
#[test]
fn undo_in_slow_start_credits_the_withheld_growth() {
    let t0 = test_epoch();
    let rtt = RttEstimator::new(100 * MS);
    let mut cc = Cubic::new(MTU);
    cc.on_ack(t0 + 100 * MS, t0, 10 * MTU, &rtt);
    let before = cc.window();
    assert_eq!(before, 20 * MTU);
    let loss = t0 + 200 * MS;
    cc.on_congestion_event(loss, t0 + 110 * MS, false, MTU);
    // The same ACK acknowledges 8 packets sent before the loss, then 3 more come.
    cc.on_ack(loss, t0 + 120 * MS, 8 * MTU, &rtt);
    cc.on_ack(loss + MS, t0 + 121 * MS, 3 * MTU, &rtt);
    assert_eq!(cc.window(), 14 * MTU, "no growth in recovery");
    cc.on_spurious_congestion();
    assert_eq!(cc.window(), before + 11 * MTU);
    assert_eq!(cc.ssthresh(), u64::MAX);
}

/// In congestion avoidance the undo restores the window as it was: CUBIC's
/// growth there follows time, and the restored epoch accounts for it.
#[test]
fn undo_in_congestion_avoidance_credits_nothing() {
    let t_loss = test_epoch() + Duration::from_secs(1);
    let mut cc = after_loss_at(100, t_loss);
    let rtt = RttEstimator::new(100 * MS);
    let start = t_loss + 200 * MS;
    drive(&mut cc, start, start + Duration::from_secs(1), 100 * MS);
    let window = cc.window();
    let loss = start + Duration::from_secs(2);
    cc.on_congestion_event(loss, start + MS, false, MTU);
    cc.on_ack(loss, loss - 50 * MS, 20 * MTU, &rtt);
    cc.on_spurious_congestion();
    assert_eq!(cc.window(), window);
}

#[test]
fn window_never_below_minimum() {
    let t0 = test_epoch();
    let mut cc = Cubic::new(MTU);
    for i in 1..20u32 {
        cc.on_congestion_event(t0 + i * 100 * MS, t0 + (i * 100 - 1) * MS, false, MTU);
    }
    assert_eq!(cc.window(), 2 * MTU);
}
