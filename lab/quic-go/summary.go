package main

// Latency summaries exactly as crates/quark-lab/src/metrics/percentile.rs
// builds them: nearest-rank percentiles over every sample, so each reported
// value is one that was observed, and CDF points for the charts.

import (
	"math"
	"slices"
)

// summary is the Rust side's metrics::Summary, in seconds.
type summary struct {
	Count uint64  `json:"count"`
	Min   float64 `json:"min"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p999"`
	Max   float64 `json:"max"`
}

// nearestRank is the sample at 1-based rank ceil(p/100 × n) of the sorted
// samples; p = 0 gives the minimum. An exact product is not rounded up
// (0.9 × 10 must be rank 9, not 10).
func nearestRank(sorted []uint64, p float64) uint64 {
	n := float64(len(sorted))
	exact := p / 100 * n
	rank := math.Ceil(exact)
	if r := math.Round(exact); math.Abs(exact-r) < 1e-9 {
		rank = r
	}
	i := min(max(int(rank), 1), len(sorted))
	return sorted[i-1]
}

// summarize sorts the nanosecond samples in place and summarizes them; nil
// when there are none.
func summarize(ns []uint64) *summary {
	if len(ns) == 0 {
		return nil
	}
	slices.Sort(ns)
	var sum uint64
	for _, x := range ns {
		sum += x
	}
	s := func(p float64) float64 { return float64(nearestRank(ns, p)) / 1e9 }
	return &summary{
		Count: uint64(len(ns)),
		Min:   s(0),
		Mean:  float64(sum) / float64(len(ns)) / 1e9,
		P50:   s(50),
		P90:   s(90),
		P99:   s(99),
		P999:  s(99.9),
		Max:   s(100),
	}
}

// cdfPoints returns at most points+1 [seconds, cumulative fraction] points
// of the sorted samples' empirical CDF. Never nil: the report wants a list.
func cdfPoints(sorted []uint64, points int) [][2]float64 {
	out := [][2]float64{}
	n := len(sorted)
	if n == 0 || points == 0 {
		return out
	}
	out = append(out, [2]float64{float64(sorted[0]) / 1e9, 1 / float64(n)})
	for i := 1; i <= points; i++ {
		q := float64(i) / float64(points)
		rank := min(max(int(math.Ceil(q*float64(n))), 1), n)
		p := [2]float64{float64(sorted[rank-1]) / 1e9, float64(rank) / float64(n)}
		if p != out[len(out)-1] {
			out = append(out, p)
		}
	}
	return out
}
