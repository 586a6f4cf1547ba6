//! Packet numbers skipped on purpose, to catch a peer acknowledging packets it
//! never received (an "optimistic" ACK, which would make us send faster than
//! the path allows). A skipped number is never sent, so an ACK that covers it
//! is proof of lying.
//!
//= https://www.rfc-editor.org/rfc/rfc9000#section-21.4
//# An endpoint that acknowledges packets it has not received might cause a
//# congestion controller to permit sending at rates beyond what the network
//# supports.  An endpoint MAY skip packet numbers when sending packets to
//# detect this behavior.  An endpoint can then immediately close the
//# connection with a connection error of type PROTOCOL_VIOLATION; see
//# Section 10.2.

use std::ops::RangeInclusive;

use rand::Rng;

/// The first gap comes within about this many packets; each later one about
/// twice as far as the last, up to `MAX_PERIOD`: a short connection is
/// checked early, a long one pays one gap (and the peer one extra ACK range)
/// per tens of thousands of packets.
const FIRST_PERIOD: u64 = 256;
const MAX_PERIOD: u64 = 64 * 1024;

/// The 1-RTT packet numbers we skipped lately.
#[derive(Debug)]
pub(crate) struct Skipped {
    /// The last two skipped numbers (an ACK may still cover the older one).
    numbers: [Option<u64>; 2],
    /// Skip when the next number reaches this.
    next_at: u64,
    period: u64,
}

impl Skipped {
    pub(crate) fn new(rng: &mut impl Rng) -> Self {
        Skipped {
            numbers: [None; 2],
            next_at: spread(rng, FIRST_PERIOD),
            period: FIRST_PERIOD,
        }
    }

    /// The packet number to use when `next` is next: `next`, or the one
    /// after it when `next` is skipped.
    pub(crate) fn pick(&mut self, next: u64, rng: &mut impl Rng) -> u64 {
        if next < self.next_at {
            return next;
        }
        self.numbers = [Some(next), self.numbers[0]];
        self.period = (self.period * 2).min(MAX_PERIOD);
        self.next_at = next + 1 + spread(rng, self.period);
        next + 1
    }

    /// Whether an ACK with these ranges (highest first) covers a number we
    /// never sent.
    pub(crate) fn covered(&self, ranges: impl Iterator<Item = RangeInclusive<u64>>) -> bool {
        let Some(lowest) = self.numbers.iter().flatten().min().copied() else {
            return false;
        };
        for range in ranges {
            if *range.end() < lowest {
                return false; // Descending: nothing lower can cover it.
            }
            if self.numbers.iter().flatten().any(|n| range.contains(n)) {
                return true;
            }
        }
        false
    }
}

/// A number of packets between half and one and a half `period`.
fn spread(rng: &mut impl Rng, period: u64) -> u64 {
    rng.random_range(period / 2..=period + period / 2)
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;

    #[test]
    fn gaps_come_ever_further_apart_and_acks_of_them_are_caught() {
        let mut rng = StdRng::seed_from_u64(7);
        let mut s = Skipped::new(&mut rng);
        let mut next = 0;
        let mut gaps = Vec::new();
        for _ in 0..300_000 {
            let pn = s.pick(next, &mut rng);
            if pn != next {
                gaps.push(next);
            }
            next = pn + 1;
        }
        assert!(
            gaps[0] >= FIRST_PERIOD / 2 && gaps[0] <= FIRST_PERIOD * 3 / 2,
            "{gaps:?}"
        );
        assert!(gaps.windows(2).all(|w| w[1] > w[0]));
        let spacing: Vec<u64> = gaps.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(spacing.last().unwrap() >= &(MAX_PERIOD / 2), "{spacing:?}");
        assert!(gaps.len() < 20, "{} gaps in 300 000 packets", gaps.len());
        let last = *gaps.last().unwrap();
        let before = gaps[gaps.len() - 2];
        // An honest ACK leaves the gap out; a lying one covers it.
        let honest = [last + 1..=next - 1, before + 1..=last - 1, 0..=before - 1];
        assert!(!s.covered(honest.into_iter()));
        assert!(s.covered([0..=next - 1].into_iter()));
        assert!(
            s.covered([before..=before].into_iter()),
            "the previous gap too"
        );
        assert!(!s.covered([last + 1..=last + 5].into_iter()));
    }

    #[test]
    fn nothing_skipped_nothing_covered() {
        let mut rng = StdRng::seed_from_u64(8);
        let s = Skipped::new(&mut rng);
        assert!(!s.covered([0..=1_000_000].into_iter()));
    }
}
