package main

import (
	"bytes"
	"strings"
	"testing"
)

// patternBytes builds n bytes of pattern from its definition, not from patternAt.
func patternBytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i % 251)
	}
	return b
}

func TestPatternAtMatchesDefinition(t *testing.T) {
	all := patternBytes(3 * chunk)
	for _, off := range []uint64{0, 1, 250, 251, 1234, chunk - 1, chunk + 7} {
		n := chunk
		if !bytes.Equal(patternAt(off, n), all[off:off+uint64(n)]) {
			t.Fatalf("offset %d", off)
		}
	}
	var w bytes.Buffer
	if err := writePattern(&w, 2*chunk+5); err != nil || !bytes.Equal(w.Bytes(), all[:2*chunk+5]) {
		t.Fatalf("writePattern: %v", err)
	}
}

func TestVerifierAcceptsPatternInAnySplit(t *testing.T) {
	all := patternBytes(200_000)
	for _, split := range []int{1, 7, 251, 4096, 70_000} {
		v := verifier{want: uint64(len(all))}
		for rest := all; len(rest) > 0; {
			n := min(split, len(rest))
			if err := v.update(rest[:n]); err != nil {
				t.Fatalf("split %d: %v", split, err)
			}
			rest = rest[n:]
		}
		if err := v.finish(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestVerifierCatchesCorruptionLossAndExcess(t *testing.T) {
	all := patternBytes(10_000)
	bad := bytes.Clone(all)
	bad[5000] ^= 1
	v := verifier{want: 10_000}
	if err := v.update(bad); err == nil || !strings.Contains(err.Error(), "offset 5000") {
		t.Fatalf("corruption: %v", err)
	}
	lost := append(bytes.Clone(all[:100]), all[101:]...)
	v = verifier{want: 10_000}
	if v.update(lost) == nil {
		t.Fatal("a lost byte passed")
	}
	v = verifier{want: 10_000}
	if v.update(all[:9_999]) != nil || v.finish() == nil {
		t.Fatal("a truncated payload passed")
	}
	v = verifier{want: 10}
	if v.update(all[:11]) == nil {
		t.Fatal("an overlong payload passed")
	}
}

func TestHeaderParsing(t *testing.T) {
	n, used, err := parseHeader([]byte("GET /2000\r\nbody"))
	if n != 2000 || used != 11 || err != nil {
		t.Fatalf("got %d %d %v", n, used, err)
	}
	if n, used, err := parseHeader([]byte("GET /1099511627776\r\n")); n != maxLen || used != 20 || err != nil {
		t.Fatalf("maxLen: %d %d %v", n, used, err)
	}
	if _, used, err := parseHeader([]byte("GET /12")); used != 0 || err != nil {
		t.Fatalf("incomplete: %d %v", used, err)
	}
	for _, bad := range []string{
		"GET /\r\n", "GET /-1\r\n", "GET /1x\r\n", "PUT /1\r\n", "GET /1\n",
		"GET /1 2\r\n", "GET /1 \r\n", "GET /99999999999999999999999\r\n",
		"GET /1099511627777\r\n", strings.Repeat("G", 100),
	} {
		if _, _, err := parseHeader([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestRequestReaderSplitsHeaderAndBodyAnywhere(t *testing.T) {
	wire := append([]byte("GET /42\r\n"), patternBytes(300)...)
	for split := 1; split < len(wire); split++ {
		r := newRequestReader()
		if err := r.push(wire[:split]); err != nil {
			t.Fatal(err)
		}
		if err := r.push(wire[split:]); err != nil {
			t.Fatal(err)
		}
		if !r.done || r.respLen != 42 || r.body.got != 300 {
			t.Fatalf("split %d: %v %d %d", split, r.done, r.respLen, r.body.got)
		}
	}
	if newRequestReader().push(bytes.Repeat([]byte("x"), 200)) == nil {
		t.Error("garbage accepted")
	}
	if newRequestReader().push([]byte("GET /1\r\nbad body")) == nil {
		t.Error("a body that is not the pattern was accepted")
	}
}
