//! The bottleneck-bandwidth max filter: the largest delivery rate of the last
//! `BTL_BW_FILTER_LEN` packet-timed round trips.

/// Window of the BtlBw max filter, in round trips.
//= https://datatracker.ietf.org/doc/html/draft-cardwell-iccrg-bbr-congestion-control-00#section-4.1.1.2
//# The length of the BBR.BtlBw max filter window is BtlBwFilterLen = 10 round trips.
pub(super) const BTL_BW_FILTER_LEN: u64 = 10;

/// One slot per round (of the last [`BTL_BW_FILTER_LEN`]) holding that round's
/// largest sample: O(1) to update, ten comparisons to read.
#[derive(Clone, Debug, Default)]
pub(super) struct MaxFilter {
    /// (round, largest sample in it)
    slots: [(u64, u64); BTL_BW_FILTER_LEN as usize],
    latest_round: u64,
    max: u64,
}

impl MaxFilter {
    /// Add a sample taken in `round` (rounds never go back).
    pub(super) fn update(&mut self, value: u64, round: u64) {
        let round = round.max(self.latest_round);
        let slot = &mut self.slots[(round % BTL_BW_FILTER_LEN) as usize];
        if slot.0 != round {
            *slot = (round, value);
        } else {
            slot.1 = slot.1.max(value);
        }
        self.latest_round = round;
        self.max = self
            .slots
            .iter()
            .filter(|(r, _)| round - r < BTL_BW_FILTER_LEN)
            .map(|&(_, v)| v)
            .max()
            .unwrap_or(0);
    }

    /// The largest sample of the window (0 before any).
    pub(super) fn get(&self) -> u64 {
        self.max
    }

    /// The largest sample of the last `rounds` rounds only (at most the window).
    pub(super) fn recent(&self, rounds: u64) -> u64 {
        self.slots
            .iter()
            .filter(|(r, _)| self.latest_round - r < rounds)
            .map(|&(_, v)| v)
            .max()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_max_of_the_last_ten_rounds() {
        let mut f = MaxFilter::default();
        assert_eq!(f.get(), 0);
        f.update(100, 1);
        f.update(50, 2);
        f.update(70, 2);
        assert_eq!(f.get(), 100);
        for round in 3..=10 {
            f.update(10, round);
        }
        assert_eq!(f.get(), 100, "round 1 is still within 10 rounds of 10");
        f.update(10, 11);
        assert_eq!(f.get(), 70, "round 1 left the window");
        f.update(10, 30);
        assert_eq!(f.get(), 10, "everything older than 10 rounds is gone");
        f.update(500, 29);
        assert_eq!(f.get(), 500, "a late sample counts for the latest round");
        f.update(20, 31);
        assert_eq!(f.recent(1), 20, "the latest round alone");
        assert_eq!(f.recent(2), 500);
    }
}
