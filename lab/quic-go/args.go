package main

// The command lines of `quark lab-server` and `quark lab-client`
// (crates/quark-lab/src/child/mod.rs: CommonArgs, ServerArgs, ClientArgs):
// the orchestrator starts this program with exactly those arguments. Options
// that tune quark or TCP only are accepted and ignored.

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// proto is the only protocol this program runs.
const proto = "quic-go"

// common holds the options of both children.
type common struct {
	cert     string
	cipher   string
	cpu      int // -1: not pinned
	threads  int
	busyPoll bool
}

// parse reads the options of child `name` into c and the ones define adds,
// then checks the common ones.
func parse(name string, args []string, c *common, define func(*flag.FlagSet)) error {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	p := commonFlags(fs, c)
	define(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	return checkCommon(fs, *p, *c)
}

func commonFlags(fs *flag.FlagSet, c *common) *string {
	fs.SetOutput(io.Discard) // errors are reported as one event, not a usage text
	p := fs.String("proto", "", "protocol adapter name (quic-go)")
	fs.StringVar(&c.cert, "cert", "", "server certificate (DER)")
	fs.StringVar(&c.cipher, "cipher", "aes128gcm", "TLS 1.3 cipher suite")
	fs.IntVar(&c.cpu, "cpu", -1, "pin this process to one CPU")
	fs.IntVar(&c.threads, "threads", 1, "threads running Go code at once (GOMAXPROCS)")
	fs.String("cc", "cubic", "quark's congestion controller (ignored: quic-go has NewReno only)")
	fs.String("tcp-cc", "cubic", "Linux's TCP congestion controller (ignored)")
	fs.BoolVar(&c.busyPoll, "busy-poll", false, "poll instead of sleeping (not supported)")
	return p
}

func checkCommon(fs *flag.FlagSet, p string, c common) error {
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if p != proto {
		return fmt.Errorf("unknown protocol %s (this program runs %s only)", p, proto)
	}
	if c.cert == "" {
		return errors.New("--cert is required")
	}
	if c.threads < 0 {
		return errors.New("--threads must be at least 0")
	}
	return nil
}

// serverArgs are the options of lab-server.
type serverArgs struct {
	common
	listen   string
	key      string
	dieAfter uint64
	workers  int // --server-workers; 0: absent
}

func parseServerArgs(args []string) (serverArgs, error) {
	var a serverArgs
	err := parse("lab-server", args, &a.common, func(fs *flag.FlagSet) {
		fs.StringVar(&a.listen, "listen", "127.0.0.1:0", "address to listen on")
		fs.StringVar(&a.key, "key", "", "private key (PKCS#8 DER)")
		fs.Uint64Var(&a.dieAfter, "die-after", 0, "fault injection: exit after this many requests")
		fs.IntVar(&a.workers, "server-workers", 0, "threads for the server (GOMAXPROCS at least this)")
	})
	if err != nil {
		return a, err
	}
	if a.key == "" {
		return a, errors.New("--key is required")
	}
	return a, nil
}

// clientArgs are the options of lab-client.
type clientArgs struct {
	common
	server     string
	phases     string
	progressMs int64
	sockets    int
}

func parseClientArgs(args []string) (clientArgs, error) {
	var a clientArgs
	err := parse("lab-client", args, &a.common, func(fs *flag.FlagSet) {
		fs.StringVar(&a.server, "server", "", "server address")
		fs.StringVar(&a.phases, "phases", "", "the phases to run, as JSON")
		fs.Int64Var(&a.progressMs, "progress-ms", 0, "print progress this often (0: never)")
		fs.IntVar(&a.sockets, "client-sockets", 1, "local UDP sockets to spread connections over")
	})
	if err != nil {
		return a, err
	}
	if a.server == "" || a.phases == "" {
		return a, errors.New("--server and --phases are required")
	}
	return a, nil
}
