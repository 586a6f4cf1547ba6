// Command quicgo-lab runs quic-go in quark's lab: it is `quark lab-server`
// and `quark lab-client` for the protocol `quic-go`, with their command
// lines, their stdin/stdout line protocol and their JSON events, so that
// `quark bench -p quic-go` drives it like any other protocol.
//
//	quicgo-lab lab-server --proto quic-go --cert F --key F [--listen ADDR] ...
//	quicgo-lab lab-client --proto quic-go --cert F --server ADDR --phases JSON ...
//	quicgo-lab version
package main

import (
	"fmt"
	"os"
	"runtime/debug"

	"github.com/quic-go/quic-go"
)

func main() {
	if len(os.Args) < 2 {
		printUsage()
	}
	switch os.Args[1] {
	case "lab-server":
		os.Exit(runServer(os.Args[2:]))
	case "lab-client":
		os.Exit(runClient(os.Args[2:]))
	case "version":
		fmt.Println(version())
	default:
		printUsage()
	}
}

func printUsage() {
	fmt.Fprintln(os.Stderr, "usage: quicgo-lab lab-server|lab-client --proto quic-go ... (started by `quark bench -p quic-go`)")
	fmt.Fprintln(os.Stderr, "       quicgo-lab version")
	os.Exit(2)
}

// quicConfig is quic-go at its defaults but for the number of streams a
// peer may open at once, which the Rust adapters raise to 1024 too: above
// the parallel scenario's 100 in flight.
func quicConfig() *quic.Config {
	return &quic.Config{MaxIncomingStreams: 1024}
}

func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "quicgo-lab (no build information)"
	}
	for _, dep := range info.Deps {
		if dep.Path == "github.com/quic-go/quic-go" {
			return fmt.Sprintf("quicgo-lab: quic-go %s, %s", dep.Version, info.GoVersion)
		}
	}
	return "quicgo-lab: quic-go (version unknown), " + info.GoVersion
}
