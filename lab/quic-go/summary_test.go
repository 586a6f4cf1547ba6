package main

import "testing"

func TestSummaryIsNearestRank(t *testing.T) {
	ns := make([]uint64, 0, 1000)
	for x := uint64(1000); x >= 1; x-- {
		ns = append(ns, x*1000)
	}
	s := summarize(ns)
	want := summary{Count: 1000, Min: 1e-6, Mean: 500.5e-6, P50: 500e-6, P90: 900e-6, P99: 990e-6, P999: 999e-6, Max: 1000e-6}
	if d := s.Mean - want.Mean; d > 1e-12 || d < -1e-12 {
		t.Fatalf("mean %v", s.Mean)
	}
	s.Mean = want.Mean
	if *s != want {
		t.Fatalf("got %+v", *s)
	}
	if summarize(nil) != nil {
		t.Fatal("a summary of nothing")
	}
	ten := []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	if nearestRank(ten, 90) != 9 {
		t.Fatal("an exact rank was rounded up")
	}
	c := cdfPoints(ns, 100)
	if len(c) > 101 || c[len(c)-1] != [2]float64{1000e-6, 1} {
		t.Fatalf("cdf ends at %v", c[len(c)-1])
	}
	if cdfPoints(nil, 100) == nil {
		t.Fatal("an empty CDF must be a list")
	}
}
