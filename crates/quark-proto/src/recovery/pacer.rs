//! Pacing (RFC 9002 §7.7): spread a window's worth of packets over an RTT.
//!
//= https://www.rfc-editor.org/rfc/rfc9002#section-7.7
//# rate = N * congestion_window / smoothed_rtt
//
//= https://www.rfc-editor.org/rfc/rfc9002#section-7.7
//# Using a value for N that is small, but at least 1 (for example, 1.25)
//# ensures that variations in RTT do not result in underutilization of
//# the congestion window.

use std::time::{Duration, Instant};

/// N = 5/4, kept as a fraction so the arithmetic stays in integers.
const N_NUM: u128 = 5;
const N_DEN: u128 = 4;

/// Bursts may last this long at the pacing rate.
const BURST_INTERVAL: Duration = Duration::from_millis(2);

/// A sending rate as a fraction: `bytes` per `nanos` nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Rate {
    bytes: u128,
    nanos: u128,
}

impl Rate {
    /// N × cwnd / srtt.
    fn of_window(cwnd: u64, srtt: Duration) -> Self {
        Rate {
            bytes: u128::from(cwnd) * N_NUM,
            nanos: srtt.as_nanos() * N_DEN,
        }
    }

    /// A controller's own rate, in bytes per second.
    fn per_second(bytes_per_second: u64) -> Self {
        Rate {
            bytes: u128::from(bytes_per_second),
            nanos: 1_000_000_000,
        }
    }

    fn is_zero(self) -> bool {
        self.bytes == 0 || self.nanos == 0
    }

    /// Bytes earned in `nanos` nanoseconds, rounded down.
    fn bytes_in(self, nanos: u128) -> u128 {
        nanos * self.bytes / self.nanos
    }

    /// Time to earn `bytes`, rounded up.
    fn time_for(self, bytes: u128) -> Duration {
        let nanos = (bytes * self.nanos).div_ceil(self.bytes);
        Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }
}

/// A token-bucket pacer at N × cwnd / smoothed_rtt (N = 1.25), or at a rate the
/// congestion controller chooses, allowing a small burst.
#[derive(Clone, Debug)]
pub struct Pacer {
    /// Smallest burst (the configured packets × MTU).
    min_capacity: u64,
    /// Bucket size in bytes: see [`Pacer::update_capacity`].
    capacity: u64,
    /// Bytes that may be sent right now.
    tokens: u64,
    /// When the bucket was last refilled; `None` before first use (bucket full).
    last: Option<Instant>,
    /// The rate last asked about, used to refill when a packet is sent.
    rate: Rate,
}

impl Pacer {
    /// A pacer allowing bursts of up to `burst_packets` datagrams of `mtu` bytes.
    pub fn new(mtu: u64, burst_packets: u64) -> Self {
        let capacity = mtu.saturating_mul(burst_packets.max(1));
        Pacer {
            min_capacity: capacity,
            capacity,
            tokens: capacity,
            last: None,
            rate: Rate::default(),
        }
    }

    /// When a packet of `bytes` may be sent, given the window and RTT (None: now).
    pub fn delay(
        &mut self,
        now: Instant,
        bytes: u64,
        cwnd: u64,
        srtt: Duration,
    ) -> Option<Instant> {
        self.delay_with(now, bytes, Rate::of_window(cwnd, srtt), cwnd)
    }

    /// When a packet of `bytes` may be sent at `rate` bytes per second (a
    /// controller's pacing rate), bursts bounded by the window (None: now).
    pub fn delay_at_rate(
        &mut self,
        now: Instant,
        bytes: u64,
        rate: u64,
        cwnd: u64,
    ) -> Option<Instant> {
        self.delay_with(now, bytes, Rate::per_second(rate), cwnd)
    }

    fn delay_with(&mut self, now: Instant, bytes: u64, rate: Rate, cwnd: u64) -> Option<Instant> {
        self.rate = rate;
        if rate.is_zero() {
            return None;
        }
        self.update_capacity(cwnd);
        self.refill(now);
        // A packet larger than the bucket would wait forever; a full bucket suffices.
        let need = bytes.min(self.capacity);
        if self.tokens >= need {
            return None;
        }
        let wait = rate.time_for(u128::from(need - self.tokens));
        Some(now.checked_add(wait).unwrap_or(now))
    }

    /// Let the bucket hold about [`BURST_INTERVAL`] worth of sending at the pacing
    /// rate, between the configured minimum and one congestion window. Bursts that
    /// short are what the network sees anyway (timer and scheduling granularity),
    /// and they let a whole GSO batch go out in one system call.
    fn update_capacity(&mut self, cwnd: u64) {
        let per_interval = self.rate.bytes_in(BURST_INTERVAL.as_nanos());
        let per_interval = u64::try_from(per_interval).unwrap_or(u64::MAX);
        self.capacity = per_interval.min(cwnd).max(self.min_capacity);
        // Before first use the bucket is full, whatever its size turned out to be.
        self.tokens = if self.last.is_none() {
            self.capacity
        } else {
            self.tokens.min(self.capacity)
        };
    }

    /// Bursts of at least two datagrams of the new size (path MTU discovery).
    pub fn set_mtu(&mut self, mtu: u64) {
        self.min_capacity = self.min_capacity.max(2 * mtu);
    }

    /// Account for `bytes` sent at `now`.
    pub fn on_sent(&mut self, now: Instant, bytes: u64) {
        self.refill(now);
        self.tokens = self.tokens.saturating_sub(bytes);
    }

    /// Add the tokens earned since the last refill at the last known rate.
    fn refill(&mut self, now: Instant) {
        let Some(last) = self.last else {
            self.last = Some(now);
            return;
        };
        if self.tokens >= self.capacity || self.rate.is_zero() {
            self.last = Some(now);
            return;
        }
        let elapsed = now.saturating_duration_since(last).as_nanos();
        let earned = self.rate.bytes_in(elapsed);
        // Leave `last` alone while less than a byte was earned so fractions add up.
        if earned > 0 {
            let earned = u64::try_from(earned).unwrap_or(u64::MAX);
            self.tokens = self.tokens.saturating_add(earned).min(self.capacity);
            self.last = Some(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recovery::test_epoch;

    const MTU: u64 = 1200;

    #[test]
    fn burst_then_paced() {
        let t0 = test_epoch();
        let mut p = Pacer::new(MTU, 4);
        let (cwnd, srtt) = (12_000, Duration::from_millis(100));
        for _ in 0..4 {
            assert_eq!(p.delay(t0, MTU, cwnd, srtt), None);
            p.on_sent(t0, MTU);
        }
        // Rate 1.25 * 12000 B / 100 ms = 150 B/ms: 1200 B take 8 ms.
        assert_eq!(
            p.delay(t0, MTU, cwnd, srtt),
            Some(t0 + Duration::from_millis(8))
        );
        let t1 = t0 + Duration::from_millis(8);
        assert_eq!(p.delay(t1, MTU, cwnd, srtt), None);
    }

    #[test]
    fn burst_is_two_milliseconds_at_the_pacing_rate() {
        let t0 = test_epoch();
        let mut p = Pacer::new(MTU, 2);
        // 1.25 × 120 000 B / 10 ms × 2 ms = 30 000 B = 25 packets.
        let (cwnd, srtt) = (120_000, Duration::from_millis(10));
        p.delay(t0, MTU, cwnd, srtt);
        let t1 = t0 + Duration::from_secs(10);
        for _ in 0..25 {
            assert_eq!(p.delay(t1, MTU, cwnd, srtt), None);
            p.on_sent(t1, MTU);
        }
        assert!(p.delay(t1, MTU, cwnd, srtt).is_some());
    }

    #[test]
    fn burst_never_exceeds_the_window_nor_drops_below_the_minimum() {
        let t0 = test_epoch();
        // A tiny RTT makes 2 ms worth huge: the window bounds the burst.
        let mut p = Pacer::new(MTU, 2);
        let (cwnd, srtt) = (12_000, Duration::from_micros(50));
        p.delay(t0, MTU, cwnd, srtt);
        for _ in 0..10 {
            assert_eq!(p.delay(t0, MTU, cwnd, srtt), None);
            p.on_sent(t0, MTU);
        }
        assert!(p.delay(t0, MTU, cwnd, srtt).is_some());
        // A long RTT makes 2 ms worth tiny: the configured minimum holds.
        let mut p = Pacer::new(MTU, 4);
        let (cwnd, srtt) = (12_000, Duration::from_secs(1));
        for _ in 0..4 {
            assert_eq!(p.delay(t0, MTU, cwnd, srtt), None);
            p.on_sent(t0, MTU);
        }
        assert!(p.delay(t0, MTU, cwnd, srtt).is_some());
    }

    #[test]
    fn long_run_rate_is_five_quarters_of_cwnd_per_rtt() {
        let t0 = test_epoch();
        let mut p = Pacer::new(MTU, 10);
        let (cwnd, srtt) = (120_000, Duration::from_millis(50));
        let mut now = t0;
        let mut sent = 0u64;
        let end = t0 + Duration::from_secs(1);
        while now < end {
            match p.delay(now, MTU, cwnd, srtt) {
                None => {
                    p.on_sent(now, MTU);
                    sent += MTU;
                }
                Some(t) => {
                    assert!(t > now);
                    now = t;
                }
            }
        }
        // 1.25 * 120000 / 0.05 s = 3 MB/s, plus the initial burst of 12 000 B.
        let expected = 3_000_000 + 12_000;
        assert!(sent.abs_diff(expected) <= 2 * MTU, "sent {sent}");
    }

    #[test]
    fn no_rate_means_no_pacing() {
        let t0 = test_epoch();
        let mut p = Pacer::new(MTU, 1);
        p.on_sent(t0, MTU);
        assert_eq!(p.delay(t0, MTU, 12_000, Duration::ZERO), None);
        assert_eq!(p.delay(t0, MTU, 0, Duration::from_millis(10)), None);
    }

    #[test]
    fn oversized_packet_waits_for_a_full_bucket_only() {
        let t0 = test_epoch();
        let mut p = Pacer::new(MTU, 1);
        let (cwnd, srtt) = (12_000, Duration::from_millis(100));
        p.delay(t0, MTU, cwnd, srtt);
        p.on_sent(t0, MTU);
        let at = p.delay(t0, 10 * MTU, cwnd, srtt).expect("must wait");
        assert_eq!(at, t0 + Duration::from_millis(8));
    }

    #[test]
    fn controller_rate_paces_at_that_rate() {
        let t0 = test_epoch();
        let mut p = Pacer::new(MTU, 2);
        // 1.2 MB/s: 1200 B per ms; a 2 ms burst is 2 packets (the minimum).
        let (rate, cwnd) = (1_200_000, 1_000_000);
        let mut now = t0;
        let mut sent = 0u64;
        while now < t0 + Duration::from_secs(1) {
            match p.delay_at_rate(now, MTU, rate, cwnd) {
                None => {
                    p.on_sent(now, MTU);
                    sent += MTU;
                }
                Some(t) => now = t,
            }
        }
        assert!(sent.abs_diff(1_200_000 + 2 * MTU) <= MTU, "sent {sent}");
        assert_eq!(
            p.delay_at_rate(now, MTU, 0, cwnd),
            None,
            "no rate: no pacing"
        );
    }
}
