//! Exact percentiles of recorded samples (nearest-rank method).
//!
//! For `N` sorted samples, percentile `p` (0 < p ≤ 100) is the sample at 1-based
//! rank `ceil(p / 100 × N)`; `p = 0` is the minimum. Every reported value is
//! therefore a latency that was actually observed: no interpolation.

use serde::{Deserialize, Serialize};

/// The value at percentile `p` of `sorted` (ascending) by nearest rank.
/// `None` for an empty slice or a `p` outside `[0, 100]`.
pub fn nearest_rank<T: Copy>(sorted: &[T], p: f64) -> Option<T> {
    if sorted.is_empty() || !(0.0..=100.0).contains(&p) {
        return None;
    }
    // The product is computed in integer space where possible to avoid
    // 0.9 * 10 = 9.000000000000002 pushing the rank one too far.
    let n = sorted.len() as f64;
    let exact = p / 100.0 * n;
    let rounded = exact.round();
    let rank = if (exact - rounded).abs() < 1e-9 {
        rounded
    } else {
        exact.ceil()
    };
    let rank = (rank as usize).clamp(1, sorted.len());
    Some(sorted[rank - 1])
}

/// Latency distribution summary, in seconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Number of samples.
    pub count: u64,
    /// Smallest sample.
    pub min: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// 50th percentile.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Largest sample.
    pub max: f64,
}

impl Summary {
    /// Summarises samples given in nanoseconds; sorts them in place.
    /// `None` when there are no samples.
    pub fn from_nanos(samples: &mut [u64]) -> Option<Summary> {
        samples.sort_unstable();
        let s = |p| nearest_rank(samples, p).map(|ns| ns as f64 / 1e9);
        let sum: u128 = samples.iter().map(|&x| u128::from(x)).sum();
        Some(Summary {
            count: samples.len() as u64,
            min: s(0.0)?,
            mean: sum as f64 / samples.len() as f64 / 1e9,
            p50: s(50.0)?,
            p90: s(90.0)?,
            p99: s(99.0)?,
            p999: s(99.9)?,
            max: s(100.0)?,
        })
    }
}

/// Points `[seconds, cumulative fraction]` of the empirical CDF of `sorted`
/// nanosecond samples, at most `points + 1` of them, for plotting.
pub fn cdf_points(sorted: &[u64], points: usize) -> Vec<[f64; 2]> {
    let n = sorted.len();
    if n == 0 || points == 0 {
        return Vec::new();
    }
    let mut out = Vec::with_capacity(points + 1);
    out.push([sorted[0] as f64 / 1e9, 1.0 / n as f64]);
    for i in 1..=points {
        let q = i as f64 / points as f64;
        let rank = ((q * n as f64).ceil() as usize).clamp(1, n);
        out.push([sorted[rank - 1] as f64 / 1e9, rank as f64 / n as f64]);
    }
    out.dedup_by(|a, b| a == b);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_known_values() {
        // Wikipedia's nearest-rank example: 15, 20, 35, 40, 50.
        let v = [15, 20, 35, 40, 50];
        assert_eq!(nearest_rank(&v, 5.0), Some(15));
        assert_eq!(nearest_rank(&v, 30.0), Some(20));
        assert_eq!(nearest_rank(&v, 40.0), Some(20));
        assert_eq!(nearest_rank(&v, 50.0), Some(35));
        assert_eq!(nearest_rank(&v, 100.0), Some(50));
        assert_eq!(nearest_rank(&v, 0.0), Some(15));
        assert_eq!(nearest_rank::<u32>(&[], 50.0), None);
        assert_eq!(nearest_rank(&v, 101.0), None);
    }

    #[test]
    fn exact_ranks_do_not_round_up() {
        let v: Vec<u64> = (1..=10).collect();
        assert_eq!(nearest_rank(&v, 90.0), Some(9));
        let v: Vec<u64> = (1..=1000).collect();
        assert_eq!(nearest_rank(&v, 99.9), Some(999));
        assert_eq!(nearest_rank(&v, 99.0), Some(990));
        assert_eq!(nearest_rank(&v, 50.0), Some(500));
        let v: Vec<u64> = (1..=100_000).collect();
        assert_eq!(nearest_rank(&v, 99.9), Some(99_900));
    }

    #[test]
    fn summary_of_shuffled_samples() {
        let mut v: Vec<u64> = (1..=1000).rev().map(|x| x * 1000).collect();
        let s = Summary::from_nanos(&mut v).unwrap();
        assert_eq!(s.count, 1000);
        assert_eq!(s.min, 1e-6);
        assert_eq!(s.p50, 500e-6);
        assert_eq!(s.p90, 900e-6);
        assert_eq!(s.p99, 990e-6);
        assert_eq!(s.p999, 999e-6);
        assert_eq!(s.max, 1000e-6);
        assert!((s.mean - 500.5e-6).abs() < 1e-12);
        assert_eq!(Summary::from_nanos(&mut []), None);
        let one = Summary::from_nanos(&mut [7]).unwrap();
        assert_eq!((one.p50, one.p999, one.max), (7e-9, 7e-9, 7e-9));
    }

    #[test]
    fn cdf_is_monotonic_and_ends_at_one() {
        let v: Vec<u64> = (1..=12345).collect();
        let c = cdf_points(&v, 100);
        assert!(c.len() <= 101);
        assert!(
            c.windows(2)
                .all(|w| w[0][0] <= w[1][0] && w[0][1] <= w[1][1])
        );
        assert_eq!(c.last().unwrap(), &[12345e-9, 1.0]);
    }
}
