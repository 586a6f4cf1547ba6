package main

// lab-server: serves hq-interop requests with quic-go and measures itself
// between the orchestrator's `start` and `end` (crates/quark-lab/src/child/server.rs).

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/quic-go/quic-go"
)

// errRequest is the stream error code for a request the server refuses.
const errRequest quic.StreamErrorCode = 0x10

func runServer(args []string) int {
	a, err := parseServerArgs(args)
	if err == nil {
		err = serve(a)
	}
	return exitCode(err)
}

func serve(a serverArgs) error {
	// Like the Rust children, --server-workers gives a server without
	// workers of its own (quic-go has none) that many threads.
	if err := setup(a.common, max(a.threads, a.workers)); err != nil {
		return err
	}
	suite, err := useOnlySuite(a.cipher)
	if err != nil {
		return err
	}
	tlsConf, err := serverTLS(a.cert, a.key)
	if err != nil {
		return err
	}
	addr, err := net.ResolveUDPAddr("udp", a.listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", a.listen, err)
	}
	udp, err := net.ListenUDP("udp", addr)
	if err != nil {
		return fmt.Errorf("cannot listen on udp %s: %w", a.listen, err)
	}
	ln, err := (&quic.Transport{Conn: udp}).Listen(tlsConf, quicConfig())
	if err != nil {
		return err
	}
	stats := &serverStats{dieAfter: a.dieAfter}
	go func() {
		for {
			conn, err := ln.Accept(context.Background())
			if err != nil {
				return
			}
			go serveConn(conn, suite, stats)
		}
	}()
	emit("listening", map[string]string{"addr": udp.LocalAddr().String()})

	baseline := currentRSS()
	var m *meter
	for cmd := range commands() {
		switch cmd {
		case "mark":
			baseline = currentRSS()
			emit("marked", nil)
		case "start":
			// A client sees a response complete before the server's stream
			// counts it: let earlier requests finish counting first.
			settle(stats)
			stats.reset()
			m = startMeter(baseline)
			emit("started", nil)
		case "end":
			if m == nil {
				return fmt.Errorf("'end' without 'start'")
			}
			u := m.stop()
			m = nil
			emit("report", struct {
				Usage    usage    `json:"usage"`
				Counters counters `json:"counters"`
			}{u, stats.snapshot()})
		case "quit":
			return nil
		default:
			return fmt.Errorf("unknown command '%s'", cmd)
		}
	}
	return nil
}

// settle waits (at most 2 s) until no request is being served.
func settle(stats *serverStats) {
	for range 2000 {
		if stats.inFlight.Load() == 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// serveConn serves every request stream of one connection; the connection
// counts as open until its streams are done.
func serveConn(conn *quic.Conn, suite uint16, stats *serverStats) {
	if err := checkSuite(conn.ConnectionState().TLS.CipherSuite, suite); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", conn.RemoteAddr(), err)
		stats.errors.Add(1)
		conn.CloseWithError(1, "wrong cipher suite")
		return
	}
	stats.opened()
	defer stats.closed()
	var streams sync.WaitGroup
	defer streams.Wait()
	for {
		s, err := conn.AcceptStream(context.Background())
		if err != nil {
			return // the connection ended
		}
		streams.Go(func() { serveStream(s, stats) })
	}
}

// serveStream reads a request to its FIN, checking any body against the
// pattern, and answers with the bytes asked for.
func serveStream(s *quic.Stream, stats *serverStats) {
	stats.request()
	req := newRequestReader()
	err := readAll(s, req.push)
	if err == nil && !req.done {
		err = errBadHeader
	}
	if err == nil {
		err = writePattern(s, req.respLen)
	}
	if err == nil {
		err = s.Close()
	}
	if err != nil {
		s.CancelRead(errRequest)
		s.CancelWrite(errRequest)
		stats.fail()
		return
	}
	stats.finish(req.body.got, req.respLen)
}
