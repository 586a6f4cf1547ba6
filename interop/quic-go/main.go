// Command quicgo-hq is an hq-interop (HTTP/0.9 over QUIC) client and server
// built on quic-go, used by quark's interop tests as a third-party peer.
//
//	quicgo-hq server --listen ADDR --root DIR --cert F --key F [--cipher ...] [--retry] [--quic-versions 1,2]
//	quicgo-hq client URL... -o DIR (--ca F | --insecure) [--cipher ...] [--quic-version 1|2]
package main

import (
	"fmt"
	"os"
)

// alpn is the protocol every peer of the interop tests speaks.
const alpn = "hq-interop"

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
		fmt.Fprintf(os.Stderr, "quicgo-hq %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: quicgo-hq server --listen ADDR --root DIR --cert F --key F [--cipher LIST] [--retry]")
	fmt.Fprintln(os.Stderr, "       quicgo-hq client URL... -o DIR (--ca F | --insecure) [--cipher LIST]")
	fmt.Fprintln(os.Stderr, "       quicgo-hq version")
	os.Exit(2)
}
