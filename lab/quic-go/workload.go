package main

// What the client does in one phase and how it is timed, following
// crates/quark-lab/src/workload.rs: a phase is prepared (warm-up, long-lived
// connections opened: not measured), then run (measured). Requests come
// from one shared ticket counter, so exactly the asked number is issued
// however many workers share them.

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
)

// workload is the Rust side's Workload (tagged by "type"). The datagram
// workloads' fields are listed only so that such a phase is refused by its
// type, not as an unknown field.
type workload struct {
	Type        string `json:"type"`
	Requests    uint64 `json:"requests"`
	Workers     uint32 `json:"workers"`
	ResponseLen uint64 `json:"response_len"`
	BodyLen     uint64 `json:"body_len"`
	Warmup      uint64 `json:"warmup"`
	Connections uint32 `json:"connections"`
	InFlight    uint32 `json:"in_flight"`
	Streams     uint32 `json:"streams"`
	DurationMs  uint64 `json:"duration_ms"`
	Chunk       uint64 `json:"chunk"`
	Bytes       uint64 `json:"bytes"`
	Runs        uint32 `json:"runs"`
	Payload     uint32 `json:"payload"`
	Senders     uint32 `json:"senders"`
}

// timed reports whether progress counts elapsed milliseconds.
func (w workload) timed() bool { return w.Type == "streams" }

// prepared holds the phase's long-lived connections.
type prepared struct {
	conns []*quic.Conn
}

// teardown closes the long-lived connections.
func (p *prepared) teardown() {
	for _, c := range p.conns {
		c.CloseWithError(0, "done")
	}
}

// open opens n connections and completes a 1-byte request on each, so the
// server has accepted them all before the measurement starts.
func (p *prepared) open(c *client, n uint32) error {
	for range n {
		conn, err := c.connect()
		if err != nil {
			return fmt.Errorf("opening connections: %w", err)
		}
		p.conns = append(p.conns, conn)
	}
	for _, conn := range p.conns {
		if err := request(conn, 1, 0); err != nil {
			return fmt.Errorf("first request: %w", err)
		}
	}
	return nil
}

// freshRequest connects, requests and closes; it returns the connect and
// request times in ns.
func freshRequest(c *client, respLen, bodyLen uint64) (connectNs, requestNs uint64, err error) {
	t0 := time.Now()
	conn, err := c.connect()
	if err != nil {
		return 0, 0, err
	}
	t1 := time.Now()
	err = request(conn, respLen, bodyLen)
	t2 := time.Now()
	conn.CloseWithError(0, "done")
	return uint64(t1.Sub(t0)), uint64(t2.Sub(t1)), err
}

// prepare warms up and opens the long-lived connections (not measured).
func (c *client) prepare(w workload) (*prepared, error) {
	p := &prepared{}
	switch w.Type {
	case "fresh":
		for range w.Warmup {
			if _, _, err := freshRequest(c, w.ResponseLen, w.BodyLen); err != nil {
				return p, fmt.Errorf("warm-up: %w", err)
			}
		}
	case "persistent":
		if err := p.open(c, w.Connections); err != nil {
			return p, err
		}
		for i := range w.Warmup {
			if len(p.conns) == 0 {
				break
			}
			if err := request(p.conns[i%uint64(len(p.conns))], w.ResponseLen, w.BodyLen); err != nil {
				return p, fmt.Errorf("warm-up: %w", err)
			}
		}
	case "streams":
		if err := p.open(c, w.Connections); err != nil {
			return p, err
		}
	case "blast", "blast-for":
		return p, fmt.Errorf("quic-go runs request workloads only, not %s (a datagram workload)", w.Type)
	default:
		return p, fmt.Errorf("quic-go: unknown workload type %q", w.Type)
	}
	return p, nil
}

// taskOut is what one worker observed.
type taskOut struct {
	latency, connect            []uint64
	requests, bytesIn, bytesOut uint64
}

// finished counts one request of w that took latency nanoseconds.
func (o *taskOut) finished(w workload, latency uint64, progress *atomic.Uint64) {
	o.latency = append(o.latency, latency)
	o.requests++
	o.bytesIn += w.ResponseLen
	o.bytesOut += w.BodyLen
	progress.Add(1)
}

// sized makes room for a fair share of requests among tasks, and a half
// more: growing while measuring would allocate in every worker at about the
// same request, since they move in step.
func sized(requests uint64, tasks int, connect bool) taskOut {
	share := (requests + uint64(tasks) - 1) / uint64(max(tasks, 1))
	o := taskOut{latency: make([]uint64, 0, share+share/2)}
	if connect {
		o.connect = make([]uint64, 0, share+share/2)
	}
	return o
}

// measured is what the client observed in one phase.
type measured struct {
	requests, connections, bytesIn, bytesOut uint64
	elapsed                                  time.Duration
	latency, connect                         []uint64
	peakInFlight, peakConnections            uint64
}

// gauge counts requests in flight and remembers the peak.
type gauge struct{ now, peak atomic.Int64 }

func (g *gauge) inc() { raise(&g.peak, g.now.Add(1)) }
func (g *gauge) dec() { g.now.Add(-1) }

// run runs the measured part of a phase; progress counts finished requests.
func (c *client) run(w workload, p *prepared, progress *atomic.Uint64) (measured, error) {
	var g gauge
	var tickets atomic.Uint64
	var tasks []func() (taskOut, error)
	start := time.Now()
	switch w.Type {
	case "fresh":
		for range w.Workers {
			out := sized(w.Requests, int(w.Workers), true)
			tasks = append(tasks, func() (taskOut, error) {
				for tickets.Add(1) <= w.Requests {
					g.inc()
					cn, rn, err := freshRequest(c, w.ResponseLen, w.BodyLen)
					if err != nil {
						return out, err
					}
					g.dec()
					out.connect = append(out.connect, cn)
					out.finished(w, rn, progress)
				}
				return out, nil
			})
		}
	case "persistent":
		n := len(p.conns) * int(w.InFlight)
		for _, conn := range p.conns {
			for range w.InFlight {
				out := sized(w.Requests, n, false)
				tasks = append(tasks, func() (taskOut, error) {
					for tickets.Add(1) <= w.Requests {
						g.inc()
						t := time.Now()
						if err := request(conn, w.ResponseLen, w.BodyLen); err != nil {
							return out, err
						}
						rn := uint64(time.Since(t))
						g.dec()
						out.finished(w, rn, progress)
					}
					return out, nil
				})
			}
		}
	case "streams":
		until := start.Add(time.Duration(w.DurationMs) * time.Millisecond)
		for _, conn := range p.conns {
			for range w.Streams {
				tasks = append(tasks, func() (taskOut, error) {
					var out taskOut
					for time.Now().Before(until) {
						g.inc()
						t := time.Now()
						if err := request(conn, w.Chunk, 0); err != nil {
							return out, err
						}
						out.latency = append(out.latency, uint64(time.Since(t)))
						g.dec()
						out.requests++
						out.bytesIn += w.Chunk
					}
					return out, nil
				})
			}
		}
	default:
		return measured{}, fmt.Errorf("quic-go: cannot run workload %q", w.Type)
	}
	outs, err := runAll(tasks)
	if err != nil {
		return measured{}, err
	}
	var m measured
	for _, o := range outs {
		m.latency = append(m.latency, o.latency...)
		m.connect = append(m.connect, o.connect...)
		m.requests += o.requests
		m.bytesIn += o.bytesIn
		m.bytesOut += o.bytesOut
	}
	m.elapsed = time.Since(start)
	m.peakInFlight = uint64(g.peak.Load())
	if w.Type == "fresh" {
		m.connections = m.requests
		m.peakConnections = m.peakInFlight
	} else {
		m.peakConnections = uint64(len(p.conns))
	}
	return m, nil
}

// runAll runs the tasks concurrently and returns their outputs, or the first
// failure as soon as it happens (which ends the process: the rest are left).
func runAll(tasks []func() (taskOut, error)) ([]taskOut, error) {
	outs := make([]taskOut, len(tasks))
	failed := make(chan error, len(tasks))
	var wg sync.WaitGroup
	for i, task := range tasks {
		wg.Go(func() {
			var err error
			if outs[i], err = task(); err != nil {
				failed <- err
			}
		})
	}
	all := make(chan struct{})
	go func() { wg.Wait(); close(all) }()
	select {
	case err := <-failed:
		return nil, err
	case <-all:
	}
	select {
	case err := <-failed:
		return nil, err
	default:
		return outs, nil
	}
}

// report turns a phase's observations into the event the orchestrator reads.
func (m measured) report(u usage) report {
	var requestTime float64
	for _, ns := range m.latency {
		requestTime += float64(ns)
	}
	// summarize sorts the samples, which the CDFs need.
	latency, connect := summarize(m.latency), summarize(m.connect)
	return report{
		Requests:        m.requests,
		Connections:     m.connections,
		BytesIn:         m.bytesIn,
		BytesOut:        m.bytesOut,
		ElapsedS:        m.elapsed.Seconds(),
		RequestTimeS:    requestTime / 1e9,
		LatencyS:        latency,
		ConnectS:        connect,
		LatencyCDF:      cdfPoints(m.latency, cdfPointsKept),
		ConnectCDF:      cdfPoints(m.connect, cdfPointsKept),
		PeakInFlight:    m.peakInFlight,
		PeakConnections: m.peakConnections,
		Usage:           u,
	}
}
