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
const N: (u128, u128) = (5, 4);
/// N in slow start: 2, as Linux paces TCP (`tcp_pacing_ss_ratio`, 200 %). The
/// window doubles every round trip while the pacer spreads the current one
/// over it: at 5/4 the pacer, not the window, set the pace of the ramp, and
/// every round woke the sender twice as often for the same bytes.
const N_SLOW_START: (u128, u128) = (2, 1);

/// Bursts may last this long at the pacing rate.
const BURST_INTERVAL: Duration = Duration::from_millis(2);

/// Once the bucket runs dry, the sender waits until this much sending time is
/// earned rather than one packet's worth, so a paced sender wakes about once
/// every two milliseconds (with at least two datagrams to send) instead of
/// once per packet. Linux's TCP paces in 1 ms units (a TSO burst, at least two
/// segments), but in the kernel, where a burst costs no wake-up; here each
/// costs a timer expiry, a thread wake-up (36-51 µs of CPU on the lab's VM)
/// and cold caches. Per-packet wakes once made quark's sender the costliest
/// per byte of the three QUIC stacks at 40 Mbit/s over 30 ms; 2 ms instead of
/// 1 ms took another 12-27 % off the sender's CPU at 20-50 Mbit/s with the
/// same goodput, also through a 50 Mbit/s bottleneck (BENCHMARKS.md). At high
/// rates the GSO batch bounds the quantum first.
const QUANTUM: Duration = Duration::from_millis(2);
/// A quantum is at most one GSO batch (what one system call sends).
const MAX_QUANTUM_BYTES: u64 = 64_000;

/// A sending rate as a fraction: `bytes` per `nanos` nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Rate {
    bytes: u128,
    nanos: u128,
}

impl Rate {
    /// N × cwnd / srtt, N = `num` / `den`.
    fn of_window(cwnd: u64, srtt: Duration, (num, den): (u128, u128)) -> Self {
        Rate {
            bytes: u128::from(cwnd) * num,
            nanos: srtt.as_nanos() * den,
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
    /// When a blocked sender was told to come back.
    wake: Option<Instant>,
    /// Tokens the bucket may hold above `capacity`: what a late wake-up
    /// earned past its time (at most [`BURST_INTERVAL`]'s worth).
    late: u64,
    /// [`BURST_INTERVAL`]'s worth of bytes at `rate`: asked before every
    /// packet, and the rate only changes with the window or the RTT, so the
    /// 128-bit division is done once per rate, not per packet.
    per_interval: u64,
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
            wake: None,
            late: 0,
            per_interval: 0,
        }
    }

    /// When a packet of `bytes` may be sent, given the window and RTT (None: now),
    /// at 2 × cwnd / srtt in slow start, else 5/4 ×.
    pub fn delay(
        &mut self,
        now: Instant,
        bytes: u64,
        cwnd: u64,
        srtt: Duration,
        slow_start: bool,
    ) -> Option<Instant> {
        let n = if slow_start { N_SLOW_START } else { N };
        self.delay_with(now, bytes, Rate::of_window(cwnd, srtt, n), cwnd)
    }

    /// The rate of the last `delay*` call, in bytes per second (for tests).
    #[cfg(test)]
    pub(crate) fn rate_per_second(&self) -> f64 {
        self.rate.bytes as f64 * 1e9 / self.rate.nanos as f64
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
        let same_rate = self.rate == rate;
        self.rate = rate;
        if rate.is_zero() {
            return None;
        }
        self.update_capacity(cwnd, same_rate);
        self.refill(now);
        // A packet larger than the bucket would wait forever; a full bucket suffices.
        let need = bytes.min(self.capacity);
        if self.tokens >= need {
            return None;
        }
        let target = self.quantum(rate, need);
        let wait = rate.time_for(u128::from(target - self.tokens));
        let at = now.checked_add(wait).unwrap_or(now);
        self.wake = Some(at);
        Some(at)
    }

    /// Tokens to wait for once blocked: [`QUANTUM`] at `rate`, between two
    /// packets of `need` bytes and a GSO batch, never above the bucket (nor
    /// below `need`, which the bucket always holds).
    fn quantum(&self, rate: Rate, need: u64) -> u64 {
        let per_quantum = u64::try_from(rate.bytes_in(QUANTUM.as_nanos())).unwrap_or(u64::MAX);
        per_quantum
            .min(MAX_QUANTUM_BYTES)
            .max(2 * need)
            .min(self.capacity)
            .max(need)
    }

    /// Let the bucket hold about [`BURST_INTERVAL`] worth of sending at the pacing
    /// rate, between the configured minimum and one congestion window. Bursts that
    /// short are what the network sees anyway (timer and scheduling granularity),
    /// and they let a whole GSO batch go out in one system call.
    /// `same_rate`: `per_interval` is still the current rate's.
    fn update_capacity(&mut self, cwnd: u64, same_rate: bool) {
        if !same_rate {
            let per_interval = self.rate.bytes_in(BURST_INTERVAL.as_nanos());
            self.per_interval = u64::try_from(per_interval).unwrap_or(u64::MAX);
        }
        let per_interval = self.per_interval;
        self.capacity = per_interval.min(cwnd).max(self.min_capacity);
        // Before first use the bucket is full, whatever its size turned out to be.
        self.tokens = if self.last.is_none() {
            self.capacity
        } else {
            self.tokens.min(self.capacity.saturating_add(self.late))
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
        if self.tokens <= self.capacity {
            self.late = 0;
        }
    }

    /// Add the tokens earned since the last refill at the last known rate.
    #[inline]
    fn refill(&mut self, now: Instant) {
        // Already refilled at `now` (`delay` then `on_sent` for one packet, and
        // every packet of a batch built at one instant): nothing more was
        // earned and no wake-up is pending, so this is a no-op. Inlined, apart
        // from the work, so the common case costs no call.
        if self.last == Some(now) && self.wake.is_none() {
            return;
        }
        self.refill_at(now);
    }

    #[inline(never)]
    fn refill_at(&mut self, now: Instant) {
        let Some(last) = self.last else {
            self.last = Some(now);
            return;
        };
        // A sender woken late (timer slack, a busy CPU) keeps what it earned
        // since its wake time, up to one more burst: with the bucket capped
        // at one quantum, every late wake-up was lost sending time, and a
        // paced sender on a loaded machine fell 10-20 % below its rate --
        // for BBR, whose rate follows what it delivers, for good.
        if let Some(wake) = self.wake.take()
            && now > wake
        {
            let late = now.saturating_duration_since(wake).min(BURST_INTERVAL);
            self.late = u64::try_from(self.rate.bytes_in(late.as_nanos())).unwrap_or(u64::MAX);
        }
        let cap = self.capacity.saturating_add(self.late);
        if self.tokens >= cap || self.rate.is_zero() {
            self.last = Some(now);
            return;
        }
        let elapsed = now.saturating_duration_since(last).as_nanos();
        let earned = self.rate.bytes_in(elapsed);
        // Leave `last` alone while less than a byte was earned so fractions add up.
        if earned > 0 {
            let earned = u64::try_from(earned).unwrap_or(u64::MAX);
            self.tokens = self.tokens.saturating_add(earned).min(cap);
            self.last = Some(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recovery::test_epoch;

    const MTU: u64 = 1200;

    /// Exactly `n` packets may go at `now`; the next one waits.
    fn lets_through(p: &mut Pacer, now: Instant, n: usize, cwnd: u64, srtt: Duration) {
        for i in 0..n {
            assert_eq!(
                p.delay(now, MTU, cwnd, srtt, false),
                None,
                "packet {i} of {n}"
            );
            p.on_sent(now, MTU);
        }
        assert!(
            p.delay(now, MTU, cwnd, srtt, false).is_some(),
            "packet {n} must wait"
        );
    }

    /// Sends MTU-sized packets for one second as fast as `delay` allows (it
    /// asks the pacer when the next may go): bytes sent and wake-ups taken.
    fn send_for_a_second(
        p: &mut Pacer,
        mut delay: impl FnMut(&mut Pacer, Instant) -> Option<Instant>,
    ) -> (u64, u32) {
        let t0 = test_epoch();
        let (mut now, mut sent, mut wakes) = (t0, 0u64, 0u32);
        while now < t0 + Duration::from_secs(1) {
            match delay(p, now) {
                None => {
                    p.on_sent(now, MTU);
                    sent += MTU;
                }
                Some(t) => {
                    assert!(t > now);
                    now = t;
                    wakes += 1;
                }
            }
        }
        (sent, wakes)
    }

    #[test]
    fn burst_then_paced() {
        let t0 = test_epoch();
        let mut p = Pacer::new(MTU, 4);
        let (cwnd, srtt) = (12_000, Duration::from_millis(100));
        for _ in 0..4 {
            assert_eq!(p.delay(t0, MTU, cwnd, srtt, false), None);
            p.on_sent(t0, MTU);
        }
        // Rate 1.25 * 12000 B / 100 ms = 150 B/ms; blocked, the sender waits
        // for two packets (1 ms at this rate is less): 2400 B take 16 ms.
        assert_eq!(
            p.delay(t0, MTU, cwnd, srtt, false),
            Some(t0 + Duration::from_millis(16))
        );
        let t1 = t0 + Duration::from_millis(16);
        lets_through(&mut p, t1, 2, cwnd, srtt);
    }

    /// A paced sender wakes once per two milliseconds of sending, not per
    /// packet, and still sends at the pacing rate.
    #[test]
    fn blocked_sender_wakes_once_every_two_milliseconds() {
        let mut p = Pacer::new(MTU, 10);
        // 1.25 × 240 000 B / 50 ms = 6 000 B/ms: 5 packets per millisecond.
        let (cwnd, srtt) = (240_000, Duration::from_millis(50));
        let (sent, wakes) =
            send_for_a_second(&mut p, |p, now| p.delay(now, MTU, cwnd, srtt, false));
        // 6 MB/s plus the first burst of 2 ms worth (12 000 B), give or take
        // the quantum that falls past the end.
        assert!(sent.abs_diff(6_012_000) <= 10 * MTU, "sent {sent}");
        assert!((495..=505).contains(&wakes), "{wakes} wake-ups");
    }

    #[test]
    fn late_wake_ups_keep_the_rate() {
        // 100 Mbit/s (12.5 MB/s), a sender that always wakes 1.5 ms late
        // (a loaded machine): it sends what it earned in the meantime.
        let mut p = Pacer::new(MTU, 10);
        let rate = 12_500_000;
        let (sent, wakes) = send_for_a_second(&mut p, |p, now| {
            p.delay_at_rate(now, MTU, rate, 10_000_000)
                .map(|t| t + Duration::from_micros(1_500))
        });
        assert!(
            sent.abs_diff(rate) <= rate / 50,
            "sent {sent} in {wakes} wake-ups"
        );
        // Still paced: far fewer bytes than a free-running sender, and the
        // same wake-ups as without the delay give or take the lateness.
        assert!(wakes > 200, "{wakes} wake-ups");
    }

    /// At high rates a quantum is one GSO batch, not two milliseconds' worth.
    #[test]
    fn quantum_is_at_most_a_gso_batch() {
        let t0 = test_epoch();
        let mut p = Pacer::new(MTU, 2);
        // 1.25 × 10 MB / 1 ms: 2 ms is 25 MB, the window bounds the bucket.
        let (cwnd, srtt) = (10_000_000, Duration::from_millis(1));
        p.delay(t0, MTU, cwnd, srtt, false);
        p.on_sent(t0, p.capacity);
        let at = p.delay(t0, MTU, cwnd, srtt, false).expect("must wait");
        // 64 000 B at 12 500 B/µs.
        assert_eq!(at, t0 + Duration::from_nanos(5_120));
    }

    #[test]
    fn burst_is_two_milliseconds_at_the_pacing_rate() {
        let t0 = test_epoch();
        let mut p = Pacer::new(MTU, 2);
        // 1.25 × 120 000 B / 10 ms × 2 ms = 30 000 B = 25 packets.
        let (cwnd, srtt) = (120_000, Duration::from_millis(10));
        p.delay(t0, MTU, cwnd, srtt, false);
        let t1 = t0 + Duration::from_secs(10);
        lets_through(&mut p, t1, 25, cwnd, srtt);
    }

    #[test]
    fn burst_never_exceeds_the_window_nor_drops_below_the_minimum() {
        let t0 = test_epoch();
        // A tiny RTT makes 2 ms worth huge: the window bounds the burst.
        let mut p = Pacer::new(MTU, 2);
        let (cwnd, srtt) = (12_000, Duration::from_micros(50));
        p.delay(t0, MTU, cwnd, srtt, false);
        lets_through(&mut p, t0, 10, cwnd, srtt);
        // A long RTT makes 2 ms worth tiny: the configured minimum holds.
        let mut p = Pacer::new(MTU, 4);
        let (cwnd, srtt) = (12_000, Duration::from_secs(1));
        lets_through(&mut p, t0, 4, cwnd, srtt);
    }

    #[test]
    fn long_run_rate_is_five_quarters_of_cwnd_per_rtt() {
        let mut p = Pacer::new(MTU, 10);
        let (cwnd, srtt) = (120_000, Duration::from_millis(50));
        let (sent, _) = send_for_a_second(&mut p, |p, now| p.delay(now, MTU, cwnd, srtt, false));
        // 1.25 * 120000 / 0.05 s = 3 MB/s, plus the initial burst of 12 000 B,
        // give or take the quantum (2 ms: 6 000 B) that falls past the end.
        let expected = 3_000_000 + 12_000;
        assert!(sent.abs_diff(expected) <= 6_000, "sent {sent}");
    }

    #[test]
    fn slow_start_paces_at_twice_the_window_per_rtt() {
        let mut p = Pacer::new(MTU, 10);
        let (cwnd, srtt) = (120_000, Duration::from_millis(50));
        let (sent, _) = send_for_a_second(&mut p, |p, now| p.delay(now, MTU, cwnd, srtt, true));
        // 2 * 120000 / 0.05 s = 4.8 MB/s, plus the initial burst of 12 000 B,
        // give or take the quantum (2 ms: 9 600 B) that falls past the end.
        let expected = 4_800_000 + 12_000;
        assert!(sent.abs_diff(expected) <= 9_600, "sent {sent}");
    }

    #[test]
    fn no_rate_means_no_pacing() {
        let t0 = test_epoch();
        let mut p = Pacer::new(MTU, 1);
        p.on_sent(t0, MTU);
        assert_eq!(p.delay(t0, MTU, 12_000, Duration::ZERO, false), None);
        assert_eq!(p.delay(t0, MTU, 0, Duration::from_millis(10), false), None);
    }

    #[test]
    fn oversized_packet_waits_for_a_full_bucket_only() {
        let t0 = test_epoch();
        let mut p = Pacer::new(MTU, 1);
        let (cwnd, srtt) = (12_000, Duration::from_millis(100));
        p.delay(t0, MTU, cwnd, srtt, false);
        p.on_sent(t0, MTU);
        let at = p.delay(t0, 10 * MTU, cwnd, srtt, false).expect("must wait");
        assert_eq!(at, t0 + Duration::from_millis(8));
    }

    #[test]
    fn controller_rate_paces_at_that_rate() {
        let mut p = Pacer::new(MTU, 2);
        // 1.2 MB/s: 1200 B per ms; a 2 ms burst is 2 packets (the minimum).
        let (rate, cwnd) = (1_200_000, 1_000_000);
        let (sent, _) = send_for_a_second(&mut p, |p, now| p.delay_at_rate(now, MTU, rate, cwnd));
        // Give or take the last quantum (two packets).
        assert!(sent.abs_diff(1_200_000 + 2 * MTU) <= 2 * MTU, "sent {sent}");
        let later = test_epoch() + Duration::from_secs(2);
        assert_eq!(
            p.delay_at_rate(later, MTU, 0, cwnd),
            None,
            "no rate: no pacing"
        );
    }
}
