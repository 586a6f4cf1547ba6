// Command quicgo-h3 is an HTTP/3 (RFC 9114) server and client built on
// quic-go's http3 package, used by quark-h3's interop tests as a third-party
// peer.
//
//	quicgo-h3 server --port P --cert F --key F [--host 127.0.0.1]
//	quicgo-h3 client URL... (--ca F | --insecure) [--post URL]... [--data-len N] [--seed S]
//	quicgo-h3 version
//
// The server answers GET /bytes/<n> with n deterministic bytes (see data) and
// content-length n, and POST /echo with the request body and the trailer
// x-sha256 (the body's SHA-256); anything else gets 404. It prints
// "ready PORT" on stdout once it listens (--port 0 picks a free port), then
// serves until killed.
//
// The client sends every request at once on one connection: a GET for each
// URL, a POST of data(--data-len, --seed) for each --post URL. It prints one
// line per request (the GETs in the order given, then the POSTs):
//
//	METHOD PATH STATUS SHA256HEX LENGTH TRAILER
//
// where TRAILER is the response's x-sha256 trailer, or "-". It exits non-zero
// if any request fails.
package main

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"runtime/debug"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "server":
		err = runServer(os.Args[2:])
	case "client":
		err = runClient(os.Args[2:])
	case "version":
		fmt.Println(version())
		return
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "quicgo-h3 %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: quicgo-h3 server --port P --cert F --key F [--host 127.0.0.1]")
	fmt.Fprintln(os.Stderr, "       quicgo-h3 client URL... (--ca F | --insecure) [--post URL]... [--data-len N] [--seed S]")
	fmt.Fprintln(os.Stderr, "       quicgo-h3 version")
	os.Exit(2)
}

// data returns length deterministic bytes: xorshift32 from seed|1, each state
// as 4 little-endian bytes (the same as quark-h3's tests).
func data(length int, seed uint32) []byte {
	out := make([]byte, 0, length+4)
	x := seed | 1
	for len(out) < length {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		out = binary.LittleEndian.AppendUint32(out, x)
	}
	return out[:length]
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// parseMixed parses flags that may come before, between or after the
// positional arguments, which it returns.
func parseMixed(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "quicgo-h3 (no build info)"
	}
	for _, dep := range info.Deps {
		if dep.Path == "github.com/quic-go/quic-go" {
			return fmt.Sprintf("quicgo-h3: quic-go %s (http3), %s", dep.Version, info.GoVersion)
		}
	}
	return "quicgo-h3: quic-go (not in build info), " + info.GoVersion
}
