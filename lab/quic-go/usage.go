package main

// CPU time and memory of this process over a measured interval, taken the
// way crates/quark-lab/src/metrics/usage.rs takes them for the Rust
// children: getrusage(RUSAGE_SELF) user + system time of all threads, and the
// kernel's RSS high-water mark reset at the interval start.

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// usage is the Rust side's metrics::Usage.
type usage struct {
	UserS            float64 `json:"user_s"`
	SysS             float64 `json:"sys_s"`
	PeakRSSBytes     uint64  `json:"peak_rss_bytes"`
	PeakRSSScope     string  `json:"peak_rss_scope"`
	RSSBaselineBytes uint64  `json:"rss_baseline_bytes"`
}

// meter measures usage from its start to stop.
type meter struct {
	user, sys time.Duration
	scope     string
	baseline  uint64
}

// startMeter starts an interval; baseline is the RSS taken before setup.
func startMeter(baseline uint64) *meter {
	// Writing 5 resets the peak RSS (VmHWM) to the current RSS (proc(5)).
	scope := "process"
	if os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil {
		scope = "interval"
	}
	user, sys, _ := rusage()
	return &meter{user: user, sys: sys, scope: scope, baseline: baseline}
}

// stop ends the interval.
func (m *meter) stop() usage {
	user, sys, maxRSS := rusage()
	peak := maxRSS
	if m.scope == "interval" {
		if hwm, ok := statusField("VmHWM:"); ok {
			peak = hwm
		}
	}
	return usage{
		UserS:            max(user-m.user, 0).Seconds(),
		SysS:             max(sys-m.sys, 0).Seconds(),
		PeakRSSBytes:     peak,
		PeakRSSScope:     m.scope,
		RSSBaselineBytes: m.baseline,
	}
}

// rusage returns this process's user and system CPU time and its lifetime
// peak RSS in bytes.
func rusage() (user, sys time.Duration, maxRSS uint64) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, 0, 0
	}
	tv := func(t syscall.Timeval) time.Duration {
		return time.Duration(t.Sec)*time.Second + time.Duration(t.Usec)*time.Microsecond
	}
	// ru_maxrss is in KiB on Linux.
	return tv(ru.Utime), tv(ru.Stime), uint64(max(ru.Maxrss, 0)) * 1024
}

// currentRSS is the resident set size in bytes (0 when unknown).
func currentRSS() uint64 {
	rss, _ := statusField("VmRSS:")
	return rss
}

// statusField reads a kB field of /proc/self/status, in bytes.
func statusField(name string) (uint64, bool) {
	text, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(text)) {
		if rest, ok := strings.CutPrefix(line, name); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb * 1024, err == nil
		}
	}
	return 0, false
}
