//! BBRv3's ACK-aggregation allowance, `extra_acked` (draft-ietf-ccwg-bbr
//! §5.5.9): how much more was acknowledged in a burst than the bandwidth
//! estimate explains. The window gets that much on top of the BDP so the
//! sender keeps sending through the silences between aggregated ACKs (ACK
//! frequency's one ACK per eighth of a window, delayed ACKs, receive offload).

use std::time::Instant;

use super::Bbr;
use super::filter::MaxFilter;

//= https://datatracker.ietf.org/doc/html/draft-ietf-ccwg-bbr#section-2.12
//# BBR.ExtraAckedFilterLen: A constant specifying the window length of
//# the BBR.extra_acked_filter max
//# filter window in steady-state = 10 (in units of packet-timed round trips).
const EXTRA_ACKED_FILTER_LEN: u64 = 10;

/// The estimator's state (the draft's `BBR.extra_acked_*`).
#[derive(Clone, Debug, Default)]
pub(super) struct Aggregation {
    interval_start: Option<Instant>,
    delivered: u64,
    filter: MaxFilter,
    /// The filtered estimate, bytes.
    extra_acked: u64,
}

impl Aggregation {
    /// The current allowance in bytes.
    pub(super) fn get(&self) -> u64 {
        self.extra_acked
    }
}

impl Bbr {
    /// An ACK frame acknowledged `newly_acked` bytes at `now`.
    pub(super) fn update_ack_aggregation(&mut self, now: Instant, newly_acked: u64) {
        //= https://datatracker.ietf.org/doc/html/draft-ietf-ccwg-bbr#section-5.5.9
        //# interval = (Now() - BBR.extra_acked_interval_start)
        //# expected_delivered = BBR.bw * interval
        //# /* Reset interval if ACK rate is below expected rate: */
        //# if (BBR.extra_acked_delivered <= expected_delivered)
        //#     BBR.extra_acked_delivered = 0
        //#     BBR.extra_acked_interval_start = Now()
        //#     expected_delivered = 0
        //# BBR.extra_acked_delivered += RS.newly_acked
        //# extra = BBR.extra_acked_delivered - expected_delivered
        //# extra = min(extra, C.cwnd)
        let bw = self.btl_bw.get();
        let a = &mut self.aggregation;
        let start = *a.interval_start.get_or_insert(now);
        let interval = now.saturating_duration_since(start).as_secs_f64();
        let mut expected = (bw as f64 * interval) as u64;
        if a.delivered <= expected {
            a.delivered = 0;
            a.interval_start = Some(now);
            expected = 0;
        }
        a.delivered = a.delivered.saturating_add(newly_acked);
        let extra = (a.delivered - expected).min(self.cwnd);
        //= https://datatracker.ietf.org/doc/html/draft-ietf-ccwg-bbr#section-5.5.9
        //# if (BBR.full_bw_reached)
        //#   filter_len = BBR.ExtraAckedFilterLen
        //# else
        //#   filter_len = 1  /* in Startup, just remember 1 round */
        let len = if self.filled_pipe {
            EXTRA_ACKED_FILTER_LEN
        } else {
            1
        };
        a.filter.update(extra, self.round_count);
        a.extra_acked = a.filter.recent(len);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::recovery::test_epoch;

    #[test]
    fn measures_what_a_burst_acknowledged_beyond_the_bandwidth() {
        let mut b = Bbr::new(1200);
        b.cwnd = 1_000_000;
        b.filled_pipe = true;
        b.btl_bw.update(1_000_000, 0); // 1 MB/s: 1 000 bytes per ms.
        let t0 = test_epoch();
        // ACKs at the delivery rate: nothing beyond it.
        for ms in 0..10 {
            b.update_ack_aggregation(t0 + Duration::from_millis(ms), 1000);
        }
        assert!(b.aggregation.get() <= 1000, "{}", b.aggregation.get());
        // Silence for 20 ms, then one ACK for 40 ms of data: the silence
        // ended the interval, so the burst counts from its own arrival.
        b.update_ack_aggregation(t0 + Duration::from_millis(30), 40_000);
        assert_eq!(b.aggregation.get(), 40_000);
        // A second burst 10 ms later: 10 kB of it was expected.
        b.update_ack_aggregation(t0 + Duration::from_millis(40), 30_000);
        assert_eq!(b.aggregation.get(), 60_000);
        // Held for ten rounds after the bursts, then forgotten.
        b.round_count = 9;
        b.update_ack_aggregation(t0 + Duration::from_millis(1000), 1000);
        assert_eq!(b.aggregation.get(), 60_000);
        b.round_count = 10;
        b.update_ack_aggregation(t0 + Duration::from_millis(1001), 1000);
        assert!(b.aggregation.get() <= 2000, "{}", b.aggregation.get());
    }
}
