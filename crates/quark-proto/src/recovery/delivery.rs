//! Delivery-rate sampling (draft-cheng-iccrg-delivery-rate-estimation-02), for
//! model-based congestion controllers such as BBR.
//!
//! Every in-flight packet carries a [`DeliveryStamp`]: how much had been delivered,
//! and when, at the moment it was sent. When it is acknowledged, the bytes delivered
//! since then over the time elapsed give a rate sample. One sample per ACK frame,
//! taken from its most recently sent packet.

use std::time::{Duration, Instant};

/// Delivery state at the moment a packet was sent (the draft's per-packet `P.*`),
/// or none ([`DeliveryStamp::NONE`]: the controller takes no rate samples).
/// The times are kept relative to the packet's send time, in nanoseconds, and
/// "none" and P.is_app_limited in spare values: 24 bytes in every sent-packet
/// record rather than 48 (issue #30), and exact.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DeliveryStamp {
    /// P.delivered
    delivered: u64,
    /// P.delivered_time - P.send_time (signed: a caller's clock may step back);
    /// `i64::MIN` for none (`signed_nanos` never gives it).
    delivered_offset: i64,
    /// Bits 0-62: P.send_time - P.first_sent_time, saturating at 0 (the
    /// sample's send_elapsed) and at 2^63 - 1 ns; bit 63: P.is_app_limited.
    elapsed_limited: u64,
}

const APP_LIMITED: u64 = 1 << 63;

impl DeliveryStamp {
    pub(crate) const NONE: Self = DeliveryStamp {
        delivered: 0,
        delivered_offset: i64::MIN,
        elapsed_limited: 0,
    };

    /// The stamp, if there is one.
    pub(crate) fn get(&self) -> Option<&Self> {
        (self.delivered_offset != i64::MIN).then_some(self)
    }

    fn app_limited(&self) -> bool {
        self.elapsed_limited & APP_LIMITED != 0
    }

    fn send_elapsed(&self) -> Duration {
        Duration::from_nanos(self.elapsed_limited & !APP_LIMITED)
    }
}

/// Nanoseconds, saturating (a u64 holds 584 years).
fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// `t - base` in signed nanoseconds, saturating at ±(2^63 - 1).
fn signed_nanos(base: Instant, t: Instant) -> i64 {
    match t.checked_duration_since(base) {
        Some(after) => i64::try_from(after.as_nanos()).unwrap_or(i64::MAX),
        None => -i64::try_from(base.duration_since(t).as_nanos()).unwrap_or(i64::MAX),
    }
}

/// `base` moved by `offset` nanoseconds: the inverse of [`signed_nanos`].
fn at_offset(base: Instant, offset: i64) -> Instant {
    let d = Duration::from_nanos(offset.unsigned_abs());
    if offset >= 0 {
        base.checked_add(d)
    } else {
        base.checked_sub(d)
    }
    .unwrap_or(base)
}

/// One ACK frame's delivery-rate sample (the draft's `rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateSample {
    /// Bytes per second delivered over the sample's interval; `None` when the
    /// interval is shorter than min_rtt (too short to trust) or zero.
    pub delivery_rate: Option<u64>,
    /// Bytes delivered when the newest acknowledged packet was sent (P.delivered).
    pub prior_delivered: u64,
    /// Bytes delivered on the connection so far, this ACK included (C.delivered).
    pub delivered: u64,
    /// The newest acknowledged packet was sent while the sender was app-limited.
    pub is_app_limited: bool,
    /// Time from sending the newest acknowledged packet to now.
    pub rtt: Duration,
}

/// What a sample is built from while an ACK's packets are processed.
#[derive(Clone, Copy, Debug)]
struct Pending {
    prior_delivered: u64,
    newest_sent: Instant,
    send_elapsed: Duration,
    ack_elapsed: Duration,
    app_limited: bool,
}

/// The connection-wide state (the draft's `C.*`).
#[derive(Debug, Default)]
pub(super) struct DeliveryRate {
    /// C.delivered: in-flight bytes acknowledged so far.
    delivered: u64,
    /// C.delivered_time
    delivered_time: Option<Instant>,
    /// C.first_sent_time
    first_sent_time: Option<Instant>,
    /// C.app_limited: the delivered count that ends the app-limited bubble (0: none).
    app_limited_until: u64,
    pending: Option<Pending>,
}

impl DeliveryRate {
    /// Stamp a packet being sent; `idle` when nothing was in flight before it.
    pub(super) fn on_sent(&mut self, now: Instant, idle: bool) -> DeliveryStamp {
        //= https://datatracker.ietf.org/doc/html/draft-cheng-iccrg-delivery-rate-estimation-02#section-3.2
        //# if (SND.NXT == SND.UNA)  /* no packets in flight yet? */
        //#   C.first_sent_time  = C.delivered_time = P.send_time
        if idle || self.delivered_time.is_none() {
            self.first_sent_time = Some(now);
            self.delivered_time = Some(now);
        }
        let delivered_time = self.delivered_time.unwrap_or(now);
        let first_sent_time = self.first_sent_time.unwrap_or(now);
        let send_elapsed = nanos(now.saturating_duration_since(first_sent_time));
        let limited = if self.app_limited_until != 0 {
            APP_LIMITED
        } else {
            0
        };
        DeliveryStamp {
            delivered: self.delivered,
            delivered_offset: signed_nanos(now, delivered_time),
            elapsed_limited: send_elapsed.min(!APP_LIMITED) | limited,
        }
    }

    /// The sender has nothing to send: samples until what is in flight now is
    /// delivered measure the application, not the path.
    pub(super) fn on_app_limited(&mut self, bytes_in_flight: u64) {
        //= https://datatracker.ietf.org/doc/html/draft-cheng-iccrg-delivery-rate-estimation-02#section-3.4
        //# C.app_limited = (C.delivered + C.pipe) ? : 1
        self.app_limited_until = self.delivered.saturating_add(bytes_in_flight).max(1);
    }

    /// An in-flight packet of `size` bytes sent at `time_sent` (the `now` its
    /// stamp was made at) was newly acknowledged.
    pub(super) fn on_acked(
        &mut self,
        now: Instant,
        time_sent: Instant,
        size: u64,
        stamp: &DeliveryStamp,
    ) {
        self.delivered = self.delivered.saturating_add(size);
        self.delivered_time = Some(now);
        //= https://datatracker.ietf.org/doc/html/draft-cheng-iccrg-delivery-rate-estimation-02#section-3.3
        //# UpdateRateSample() is invoked multiple times when a stretched ACK
        //# acknowledges multiple data packets. In this case we use the
        //# information from the most recently sent packet, i.e., the packet
        //# with the highest "P.delivered" value.
        let newest = self.pending.is_none_or(|p| {
            stamp.delivered > p.prior_delivered
                || (stamp.delivered == p.prior_delivered && time_sent > p.newest_sent)
        });
        if newest {
            self.pending = Some(Pending {
                prior_delivered: stamp.delivered,
                newest_sent: time_sent,
                send_elapsed: stamp.send_elapsed(),
                ack_elapsed: now
                    .saturating_duration_since(at_offset(time_sent, stamp.delivered_offset)),
                app_limited: stamp.app_limited(),
            });
            self.first_sent_time = Some(time_sent);
        }
    }

    /// Close the ACK: the sample of what it acknowledged, if it acknowledged
    /// anything in flight. `min_rtt` is the path's minimum RTT, once known.
    pub(super) fn sample(&mut self, now: Instant, min_rtt: Option<Duration>) -> Option<RateSample> {
        //= https://datatracker.ietf.org/doc/html/draft-cheng-iccrg-delivery-rate-estimation-02#section-3.3
        //# /* Clear app-limited field if bubble is ACKed and gone. */
        //# if (C.app_limited and C.delivered > C.app_limited)
        //#   C.app_limited = 0
        if self.app_limited_until != 0 && self.delivered > self.app_limited_until {
            self.app_limited_until = 0;
        }
        let p = self.pending.take()?;
        //= https://datatracker.ietf.org/doc/html/draft-cheng-iccrg-delivery-rate-estimation-02#section-3.3
        //# /* Use the longer of the send_elapsed and ack_elapsed */
        //# rs.interval = max(rs.send_elapsed, rs.ack_elapsed)
        let interval = p.send_elapsed.max(p.ack_elapsed);
        let delivered = self.delivered - p.prior_delivered;
        //= https://datatracker.ietf.org/doc/html/draft-cheng-iccrg-delivery-rate-estimation-02#section-3.3
        //# /* Normally we expect interval >= MinRTT.
        //#  * Note that rate may still be over-estimated when a spuriously
        //#  * retransmitted skb was first (s)acked because "interval"
        //#  * is under-estimated (up to an RTT).
        let trusted = !interval.is_zero() && min_rtt.is_none_or(|min| interval >= min);
        let delivery_rate = trusted.then(|| {
            let rate = u128::from(delivered) * 1_000_000_000 / interval.as_nanos();
            u64::try_from(rate).unwrap_or(u64::MAX)
        });
        Some(RateSample {
            delivery_rate,
            prior_delivered: p.prior_delivered,
            delivered: self.delivered,
            is_app_limited: p.app_limited,
            rtt: now.saturating_duration_since(p.newest_sent),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recovery::test_epoch;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn steady_flow_measures_its_rate() {
        // 1200 B every ms, each acknowledged 50 ms later: 1.2 MB/s.
        let t0 = test_epoch();
        let mut d = DeliveryRate::default();
        let mut stamps = Vec::new();
        for i in 0..200u32 {
            stamps.push(d.on_sent(t0 + i * MS, i == 0));
            if i >= 50 {
                let j = i - 50;
                let now = t0 + i * MS;
                d.on_acked(now, t0 + j * MS, 1200, &stamps[j as usize]);
                let s = d.sample(now, Some(50 * MS)).unwrap();
                assert_eq!(s.rtt, 50 * MS);
                if j > 50 {
                    // Stamped after the first ACK: exactly the sending rate.
                    assert_eq!(s.delivery_rate, Some(1_200_000));
                }
            }
        }
    }

    #[test]
    fn stretch_ack_uses_the_newest_packet_and_short_intervals_are_distrusted() {
        let t0 = test_epoch();
        let mut d = DeliveryRate::default();
        let a = d.on_sent(t0, true);
        let b = d.on_sent(t0 + MS, false);
        let now = t0 + 20 * MS;
        d.on_acked(now, t0 + MS, 1000, &b);
        d.on_acked(now, t0, 1000, &a);
        let s = d.sample(now, Some(10 * MS)).unwrap();
        assert_eq!((s.prior_delivered, s.delivered, s.rtt), (0, 2000, 19 * MS));
        assert_eq!(s.delivery_rate, Some(100_000), "2000 B over 20 ms");
        // An interval below min_rtt gives no rate, but still a sample.
        let c = d.on_sent(now, true);
        d.on_acked(now + MS, now, 1000, &c);
        let s = d.sample(now + MS, Some(10 * MS)).unwrap();
        assert_eq!((s.delivery_rate, s.delivered), (None, 3000));
        // Nothing acknowledged: no sample.
        assert!(d.sample(now + MS, None).is_none());
    }

    #[test]
    fn stamp_times_round_trip_exactly() {
        let t0 = test_epoch() + Duration::from_secs(2 * 86_400);
        for ns in [0, 1, 999_999_999, 1_000_000_001, 86_400_123_456_789] {
            let d = Duration::from_nanos(ns);
            for t in [t0 + d, t0 - d] {
                assert_eq!(at_offset(t0, signed_nanos(t0, t)), t);
            }
        }
        // Delivered after the send time (a clock stepping back): the sample
        // still measures from the real delivered time.
        let mut d = DeliveryRate::default();
        let a = d.on_sent(t0, true);
        assert!(a.get().is_some() && DeliveryStamp::NONE.get().is_none());
        d.on_acked(t0 + 20 * MS, t0, 1000, &a);
        d.sample(t0 + 20 * MS, None);
        let b = d.on_sent(t0 + 10 * MS, false);
        d.on_acked(t0 + 50 * MS, t0 + 10 * MS, 1000, &b);
        let s = d.sample(t0 + 50 * MS, None).unwrap();
        // ack_elapsed 30 ms (from 20 ms, not from the 10 ms send time),
        // send_elapsed 10 ms: 1000 B over the longer.
        assert_eq!(s.delivery_rate, Some(1000 * 1000 / 30));
    }

    #[test]
    fn app_limited_marks_samples_until_the_bubble_is_delivered() {
        let t0 = test_epoch();
        let mut d = DeliveryRate::default();
        d.on_app_limited(2000);
        let a = d.on_sent(t0, true);
        let b = d.on_sent(t0, false);
        d.on_acked(t0 + 10 * MS, t0, 1000, &a);
        assert!(d.sample(t0 + 10 * MS, None).unwrap().is_app_limited);
        d.on_acked(t0 + 11 * MS, t0, 1000, &b);
        d.sample(t0 + 11 * MS, None);
        // 2000 delivered is not past the 2000 mark yet.
        let c = d.on_sent(t0 + 11 * MS, true);
        assert!(c.app_limited());
        d.on_acked(t0 + 21 * MS, t0 + 11 * MS, 1000, &c);
        d.sample(t0 + 21 * MS, None);
        let e = d.on_sent(t0 + 21 * MS, true);
        assert!(!e.app_limited(), "3000 > 2000: bubble gone");
    }
}
