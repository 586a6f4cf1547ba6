package main

// lab-client: runs the orchestrator's phases against a server and reports
// each one (crates/quark-lab/src/child/client.rs).

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
)

// cdfPointsKept is how many points of each CDF a report keeps.
const cdfPointsKept = 200

// phase is one row of results: a label and its workload.
type phase struct {
	Label    string   `json:"label"`
	Workload workload `json:"workload"`
}

// report is the Rust side's ClientReport.
type report struct {
	Requests        uint64       `json:"requests"`
	Connections     uint64       `json:"connections"`
	BytesIn         uint64       `json:"bytes_in"`
	BytesOut        uint64       `json:"bytes_out"`
	ElapsedS        float64      `json:"elapsed_s"`
	RequestTimeS    float64      `json:"request_time_s"`
	LatencyS        *summary     `json:"latency_s"`
	ConnectS        *summary     `json:"connect_s"`
	LatencyCDF      [][2]float64 `json:"latency_cdf"`
	ConnectCDF      [][2]float64 `json:"connect_cdf"`
	PeakInFlight    uint64       `json:"peak_in_flight"`
	PeakConnections uint64       `json:"peak_connections"`
	DatagramsSent   *uint64      `json:"datagrams_sent"`
	Usage           usage        `json:"usage"`
}

func runClient(args []string) int {
	a, err := parseClientArgs(args)
	if err == nil {
		err = runPhases(a)
	}
	return exitCode(err)
}

// expect reads the next command, which must be want.
func expect(cmds <-chan string, want string) error {
	if got := <-cmds; got != want {
		return fmt.Errorf("expected '%s', got '%s'", want, got)
	}
	return nil
}

func runPhases(a clientArgs) error {
	if err := setup(a.common, a.threads); err != nil {
		return err
	}
	suite, err := useOnlySuite(a.cipher)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(a.phases)))
	// A field this program does not know could change what is measured.
	dec.DisallowUnknownFields()
	var phases []phase
	if err := dec.Decode(&phases); err != nil {
		return fmt.Errorf("--phases: %w", err)
	}
	c, err := newClient(a, suite)
	if err != nil {
		return err
	}
	cmds := commands()
	for i, ph := range phases {
		emit("phase", map[string]int{"index": i})
		if err := expect(cmds, "prepare"); err != nil {
			return err
		}
		baseline := currentRSS()
		prep, err := c.prepare(ph.Workload)
		if err != nil {
			return fmt.Errorf("%s: %w", ph.Label, err)
		}
		emit("ready", nil)
		if err := expect(cmds, "go"); err != nil {
			return err
		}
		m := startMeter(baseline)
		var progress atomic.Uint64
		stop := ticker(&progress, ph.Workload.timed(), a.progressMs)
		got, err := c.run(ph.Workload, prep, &progress)
		u := m.stop()
		stop()
		if err != nil {
			return fmt.Errorf("%s: %w", ph.Label, err)
		}
		emit("done", map[string]report{"result": got.report(u)})
		prep.teardown()
	}
	emit("finished", nil)
	// Wait for the orchestrator to close stdin, which exits the process.
	for range cmds {
	}
	return nil
}

// ticker prints progress every ms milliseconds (never for 0) until stopped:
// units done, or milliseconds elapsed for timed workloads.
func ticker(progress *atomic.Uint64, timed bool, ms int64) (stop func()) {
	if ms <= 0 {
		return func() {}
	}
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		start := time.Now()
		t := time.NewTicker(time.Duration(ms) * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				n := progress.Load()
				if timed {
					n = uint64(time.Since(start).Milliseconds())
				}
				emit("progress", map[string]uint64{"done": n})
			}
		}
	}()
	// Stopping waits for the goroutine, so no progress follows the report.
	return func() { close(done); <-exited }
}

// client dials the server over one or more local UDP sockets.
type client struct {
	transports []*quic.Transport
	next       atomic.Uint64
	server     *net.UDPAddr
	tlsConf    *tls.Config
	suite      uint16
}

func newClient(a clientArgs, suite uint16) (*client, error) {
	server, err := net.ResolveUDPAddr("udp", a.server)
	if err != nil {
		return nil, fmt.Errorf("--server %s: %w", a.server, err)
	}
	conf, err := clientTLS(a.cert)
	if err != nil {
		return nil, err
	}
	c := &client{server: server, tlsConf: conf, suite: suite}
	// Bind where quark's client_bind does: loopback for a loopback server,
	// else any address of the family.
	local := &net.UDPAddr{IP: net.IPv4zero}
	switch {
	case server.IP.IsLoopback() && server.IP.To4() != nil:
		local.IP = net.IPv4(127, 0, 0, 1)
	case server.IP.IsLoopback():
		local.IP = net.IPv6loopback
	case server.IP.To4() == nil:
		local.IP = net.IPv6unspecified
	}
	for range max(a.sockets, 1) {
		udp, err := net.ListenUDP("udp", local)
		if err != nil {
			return nil, fmt.Errorf("cannot bind udp %s: %w", local, err)
		}
		c.transports = append(c.transports, &quic.Transport{Conn: udp})
	}
	return c, nil
}

// connect opens a connection, returning once its handshake completed.
func (c *client) connect() (*quic.Conn, error) {
	tr := c.transports[(c.next.Add(1)-1)%uint64(len(c.transports))]
	conn, err := tr.Dial(context.Background(), c.server, c.tlsConf, quicConfig())
	if err != nil {
		return nil, fmt.Errorf("QUIC handshake: %w", err)
	}
	if err := checkSuite(conn.ConnectionState().TLS.CipherSuite, c.suite); err != nil {
		conn.CloseWithError(1, "wrong cipher suite")
		return nil, err
	}
	return conn, nil
}

// request issues one request on a new stream of conn and verifies every
// byte of the response.
func request(conn *quic.Conn, respLen, bodyLen uint64) error {
	s, err := conn.OpenStreamSync(context.Background())
	if err != nil {
		return err
	}
	head := strconv.AppendUint([]byte("GET /"), respLen, 10)
	if _, err := s.Write(append(head, '\r', '\n')); err != nil {
		return err
	}
	if err := writePattern(s, bodyLen); err != nil {
		return err
	}
	if err := s.Close(); err != nil {
		return err
	}
	v := verifier{want: respLen}
	err = readAll(s, v.update)
	if err == nil {
		err = v.finish()
	}
	if err != nil {
		s.CancelRead(errRequest)
		return fmt.Errorf("response: %w", err)
	}
	return nil
}
