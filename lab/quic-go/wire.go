package main

// The lab's application protocol, as crates/quark-lab/src/wire.rs and
// adapter/hq.rs define it for QUIC: a request is one bidirectional stream
// carrying "GET /<n>\r\n", then optionally a body, then FIN; the answer is
// exactly n bytes of pattern, then FIN. Payload byte i is i mod 251: a
// prime period, so a lost, repeated or misplaced piece of data shifts the
// pattern and fails verification.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
)

const (
	maxHeader = 64        // longest header line, "\r\n" included
	maxLen    = 1 << 40   // largest response or body a peer may ask for
	period    = 251       // the pattern's period
	chunk     = 256 << 10 // largest piece of pattern handed out at once
	readBuf   = 16 << 10  // stream read buffer (pooled, see bufs)
)

// pattern is long enough that the chunk bytes following any offset are one
// slice of it, so sending and verifying never build payload bytes.
var pattern = func() []byte {
	b := make([]byte, chunk+period)
	for i := range b {
		b[i] = byte(i % period)
	}
	return b
}()

// patternAt returns the pattern bytes at payload offset off, at most chunk long.
func patternAt(off uint64, n int) []byte {
	start := int(off % period)
	return pattern[start : start+min(n, chunk)]
}

// bufs holds read buffers: quic-go's streams copy into the reader's buffer,
// so only requests being read at the moment hold one.
var bufs = sync.Pool{New: func() any { b := make([]byte, readBuf); return &b }}

var (
	errBadHeader     = errors.New("malformed request header")
	errHeaderTooLong = fmt.Errorf("request header longer than %d bytes", maxHeader)
)

// parseHeader parses the header line at the start of buf. It returns the
// response length and the bytes the line used; used is 0 while the line is
// incomplete. Only the QUIC form is accepted: "GET /<n>\r\n", no body length.
func parseHeader(buf []byte) (n uint64, used int, err error) {
	nl := -1
	for i := 0; i < len(buf) && i < maxHeader; i++ {
		if buf[i] == '\n' {
			nl = i
			break
		}
	}
	if nl < 0 {
		if len(buf) >= maxHeader {
			return 0, 0, errHeaderTooLong
		}
		return 0, 0, nil
	}
	line := buf[:nl]
	if len(line) < 6 || string(line[:5]) != "GET /" || line[len(line)-1] != '\r' {
		return 0, 0, errBadHeader
	}
	n, err = parseLen(line[5 : len(line)-1])
	if err != nil {
		return 0, 0, err
	}
	return n, nl + 1, nil
}

// parseLen parses a decimal length of 1 to 20 digits, at most maxLen.
func parseLen(field []byte) (uint64, error) {
	if len(field) == 0 || len(field) > 20 {
		return 0, errBadHeader
	}
	for _, d := range field {
		if d < '0' || d > '9' {
			return 0, errBadHeader
		}
	}
	n, err := strconv.ParseUint(string(field), 10, 64)
	if err != nil || n > maxLen {
		return 0, fmt.Errorf("length %s above the %d byte limit", field, uint64(maxLen))
	}
	return n, nil
}

// verifier checks that a stream of payload is exactly want bytes of pattern.
type verifier struct {
	got, want uint64
}

// update checks the next piece of payload.
func (v *verifier) update(data []byte) error {
	if uint64(len(data)) > v.want-v.got {
		return fmt.Errorf("payload longer than the %d bytes expected", v.want)
	}
	for len(data) > 0 {
		n := min(len(data), chunk)
		if want := patternAt(v.got, n); !bytes.Equal(data[:n], want) {
			i := 0
			for data[i] == want[i] {
				i++
			}
			return fmt.Errorf("payload differs from the pattern at offset %d", v.got+uint64(i))
		}
		v.got += uint64(n)
		data = data[n:]
	}
	return nil
}

// finish fails unless every expected byte arrived.
func (v *verifier) finish() error {
	if v.got != v.want {
		return fmt.Errorf("payload ended after %d of %d bytes", v.got, v.want)
	}
	return nil
}

// requestReader splits a request stream into its header and its body, and
// checks the body against the pattern.
type requestReader struct {
	head    []byte
	done    bool
	respLen uint64
	body    verifier
}

func newRequestReader() *requestReader {
	return &requestReader{head: make([]byte, 0, maxHeader), body: verifier{want: maxLen}}
}

// push feeds received bytes.
func (r *requestReader) push(data []byte) error {
	if r.done {
		return r.body.update(data)
	}
	take := min(len(data), maxHeader-len(r.head))
	r.head = append(r.head, data[:take]...)
	n, used, err := parseHeader(r.head)
	switch {
	case err != nil:
		return err
	case used == 0 && take < len(data):
		return errHeaderTooLong
	case used == 0:
		return nil
	}
	r.done, r.respLen = true, n
	// Body bytes that came with the header, then the rest of data.
	if err := r.body.update(r.head[used:]); err != nil {
		return err
	}
	return r.body.update(data[take:])
}

// readAll feeds a whole stream to push, up to its FIN.
func readAll(s io.Reader, push func([]byte) error) error {
	b := bufs.Get().(*[]byte)
	defer bufs.Put(b)
	for {
		n, err := s.Read(*b)
		if n > 0 {
			if perr := push((*b)[:n]); perr != nil {
				return perr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// writePattern writes n bytes of pattern. The slices are shared and never
// written to, so the stack may hold on to them.
func writePattern(w io.Writer, n uint64) error {
	for off := uint64(0); off < n; off += chunk {
		if _, err := w.Write(patternAt(off, int(min(n-off, chunk)))); err != nil {
			return err
		}
	}
	return nil
}
