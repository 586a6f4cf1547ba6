package main

// The server's counters, as crates/quark-lab/src/adapter/stats.rs keeps
// them: what the server actually saw, so the orchestrator can check the
// client did exactly what was asked (it warns on any difference).

import (
	"fmt"
	"os"
	"sync/atomic"
)

// counters is the Rust side's ServerCounters, for one interval.
type counters struct {
	Connections     uint64 `json:"connections"`
	PeakConnections uint64 `json:"peak_connections"`
	Requests        uint64 `json:"requests"`
	PeakInFlight    uint64 `json:"peak_in_flight"`
	BytesIn         uint64 `json:"bytes_in"`
	BytesOut        uint64 `json:"bytes_out"`
	Datagrams       uint64 `json:"datagrams"`
	BadDatagrams    uint64 `json:"bad_datagrams"`
	Errors          uint64 `json:"errors"`
}

// serverStats are the live counters every connection and stream updates.
type serverStats struct {
	connections, requests, bytesIn, bytesOut, errors atomic.Uint64
	open, peakOpen, inFlight, peakInFlight           atomic.Int64
	total                                            atomic.Uint64 // requests ever, for dieAfter
	dieAfter                                         uint64
}

// raise lifts peak to at least v.
func raise(peak *atomic.Int64, v int64) {
	for {
		p := peak.Load()
		if v <= p || peak.CompareAndSwap(p, v) {
			return
		}
	}
}

// opened counts a connection whose handshake completed; closed ends it.
func (s *serverStats) opened() {
	s.connections.Add(1)
	raise(&s.peakOpen, s.open.Add(1))
}

func (s *serverStats) closed() { s.open.Add(-1) }

// request counts a request stream as in flight; finish or fail ends it.
func (s *serverStats) request() {
	raise(&s.peakInFlight, s.inFlight.Add(1))
	if n := s.total.Add(1); s.dieAfter != 0 && n >= s.dieAfter {
		// Fault injection for the orchestrator's tests.
		fmt.Fprintf(os.Stderr, "lab-server: dying on purpose after %d requests\n", n)
		os.Exit(101)
	}
}

func (s *serverStats) finish(bodyBytes, responseBytes uint64) {
	s.bytesIn.Add(bodyBytes)
	s.bytesOut.Add(responseBytes)
	s.requests.Add(1)
	s.inFlight.Add(-1)
}

func (s *serverStats) fail() {
	s.errors.Add(1)
	s.inFlight.Add(-1)
}

// reset starts an interval: counters to zero, peaks to the current level.
func (s *serverStats) reset() {
	for _, c := range []*atomic.Uint64{&s.connections, &s.requests, &s.bytesIn, &s.bytesOut, &s.errors} {
		c.Store(0)
	}
	s.peakOpen.Store(s.open.Load())
	s.peakInFlight.Store(s.inFlight.Load())
}

// snapshot returns the interval's counters.
func (s *serverStats) snapshot() counters {
	return counters{
		Connections:     s.connections.Load(),
		PeakConnections: uint64(max(s.peakOpen.Load(), 0)),
		Requests:        s.requests.Load(),
		PeakInFlight:    uint64(max(s.peakInFlight.Load(), 0)),
		BytesIn:         s.bytesIn.Load(),
		BytesOut:        s.bytesOut.Load(),
		Errors:          s.errors.Load(),
	}
}
