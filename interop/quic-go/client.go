package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sync"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/qlog"
)

func runClient(args []string) error {
	fs := flag.NewFlagSet("client", flag.ContinueOnError)
	out := fs.String("o", ".", "output directory")
	ca := fs.String("ca", "", "trust the certificates in this PEM file")
	insecure := fs.Bool("insecure", false, "do not verify the server certificate")
	cipher := fs.String("cipher", "", "TLS 1.3 cipher suites to offer: aes128,aes256,chacha20")
	timeout := fs.Duration("connect-timeout", 10*time.Second, "handshake timeout")
	quicVersion := fs.String("quic-version", "", "QUIC version to speak: 1 or 2 (default: quic-go's)")
	resume := fs.Bool("resume", false, "the first URL on one connection, the rest on a second resuming its session")
	zeroRTT := fs.Bool("0rtt", false, "with -resume: the second connection's requests in 0-RTT")
	urls, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(urls) == 0 {
		return errors.New("no URLs given")
	}
	if *resume && len(urls) < 2 {
		return errors.New("-resume needs two URLs or more")
	}
	ciphers, err := parseCiphers(*cipher)
	if err != nil {
		return err
	}
	restrictCiphers(ciphers)
	versions, err := parseVersions(*quicVersion)
	if err != nil {
		return err
	}
	if st, err := os.Stat(*out); err != nil || !st.IsDir() {
		return fmt.Errorf("-o %s: not a directory", *out)
	}

	var host string
	var paths []string
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil || u.Scheme != "https" || u.Host == "" {
			return fmt.Errorf("%s: not an https://host:port/path URL", raw)
		}
		if host == "" {
			host = u.Host
		} else if u.Host != host {
			return fmt.Errorf("all URLs must name the same server (%s vs %s)", host, u.Host)
		}
		p := u.EscapedPath()
		if p == "" {
			p = "/"
		}
		paths = append(paths, p)
	}
	hostname, port, err := net.SplitHostPort(host)
	if err != nil {
		hostname, port = host, "443"
	}

	tlsConf := &tls.Config{
		ServerName:         hostname,
		NextProtos:         []string{alpn},
		MinVersion:         tls.VersionTLS13,
		InsecureSkipVerify: *insecure,
	}
	switch {
	case *ca != "":
		pem, err := os.ReadFile(*ca)
		if err != nil {
			return err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("--ca %s: no PEM certificates", *ca)
		}
		tlsConf.RootCAs = pool
	case !*insecure:
		return errors.New("no way to verify the server: give --ca FILE (or --insecure)")
	}

	tickets := &ticketCache{ClientSessionCache: tls.NewLRUClientSessionCache(4), stored: make(chan struct{}, 1)}
	if *resume {
		tlsConf.ClientSessionCache = tickets
	}
	quicConf := &quic.Config{
		MaxIdleTimeout:             30 * time.Second,
		MaxStreamReceiveWindow:     16 << 20,
		MaxConnectionReceiveWindow: 64 << 20,
		Versions:                   versions,
		Tracer:                     qlog.DefaultConnectionTracer, // writes only with QLOGDIR set
	}
	addr := net.JoinHostPort(hostname, port)
	c := connection{addr: addr, tlsConf: tlsConf, quicConf: quicConf, timeout: *timeout, ciphers: ciphers, out: *out}

	start := time.Now()
	var errs []error
	var sizes []int64
	summary := ""
	if *resume {
		errs, sizes, err = c.fetch(paths[:1], false, tickets.stored)
		if err != nil {
			return err
		}
		more, moreSizes, err := c.fetch(paths[1:], *zeroRTT, nil)
		if err != nil {
			return err
		}
		errs, sizes = append(errs, more...), append(sizes, moreSizes...)
		summary = c.resumed
	} else if errs, sizes, err = c.fetch(paths, false, nil); err != nil {
		return err
	}

	failed := 0
	var total int64
	for i, err := range errs {
		if err != nil {
			failed++
			fmt.Fprintf(os.Stderr, "error: %s: %v\n", paths[i], err)
		}
		total += sizes[i]
	}
	secs := time.Since(start).Seconds()
	fmt.Fprintf(os.Stderr, "%d of %d files, %d bytes in %.3f s%s\n", len(paths)-failed, len(paths), total, secs, summary)
	if failed > 0 {
		return fmt.Errorf("%d of %d downloads failed", failed, len(paths))
	}
	return nil
}

// ticketCache tells when the server's session ticket has been stored.
type ticketCache struct {
	tls.ClientSessionCache
	stored chan struct{}
}

func (t *ticketCache) Put(key string, cs *tls.ClientSessionState) {
	t.ClientSessionCache.Put(key, cs)
	if cs != nil {
		select {
		case t.stored <- struct{}{}:
		default:
		}
	}
}

// connection is what every connection of one run shares.
type connection struct {
	addr     string
	tlsConf  *tls.Config
	quicConf *quic.Config
	timeout  time.Duration
	ciphers  []uint16
	out      string
	// How the last connection's handshake went: ", resumed" or not, and
	// with 0-RTT whether the server accepted it.
	resumed string
}

// fetch runs `paths` in parallel over one new connection (with `early`, in
// 0-RTT when a ticket allows it). With `ticket`, the connection waits for
// the server's session ticket (at most a second) before it closes.
func (c *connection) fetch(paths []string, early bool, ticket <-chan struct{}) ([]error, []int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	var conn *quic.Conn
	var err error
	if early {
		conn, err = quic.DialAddrEarly(ctx, c.addr, c.tlsConf, c.quicConf)
	} else {
		conn, err = quic.DialAddr(ctx, c.addr, c.tlsConf, c.quicConf)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("connect to %s: %w", c.addr, err)
	}
	errs := make([]error, len(paths))
	sizes := make([]int64, len(paths))
	var wg sync.WaitGroup
	requests := func() {
		for i, p := range paths {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sizes[i], errs[i] = fetch(conn, p, filepath.Join(c.out, outputName(p)))
			}()
		}
	}
	if early { // before the handshake completes: in 0-RTT if the server takes it
		requests()
	}
	select {
	case <-conn.HandshakeComplete():
	case <-ctx.Done():
		conn.CloseWithError(1, "handshake timeout")
		return nil, nil, fmt.Errorf("connect to %s: %w", c.addr, ctx.Err())
	}
	state := conn.ConnectionState()
	fmt.Fprintf(os.Stderr, "quic-version: %s\n", versionName(state.Version))
	fmt.Fprintf(os.Stderr, "cipher-suite: %s\n", tls.CipherSuiteName(state.TLS.CipherSuite))
	if err := checkCipher(state.TLS.CipherSuite, c.ciphers); err != nil {
		conn.CloseWithError(1, "wrong cipher suite")
		return nil, nil, err
	}
	if !early {
		requests()
	}
	wg.Wait()
	if ticket != nil {
		select {
		case <-ticket:
		case <-time.After(time.Second):
		}
	}
	conn.CloseWithError(0, "done")
	c.resumed = ", full handshake (no resumption)"
	if state.TLS.DidResume {
		c.resumed = ", resumed"
	}
	if early && state.Used0RTT {
		c.resumed += ", 0-RTT accepted"
	} else if early {
		c.resumed += ", 0-RTT not accepted"
	}
	return errs, sizes, nil
}

// fetch runs one hq-interop request on a new stream and writes the body to dest.
func fetch(conn *quic.Conn, p, dest string) (int64, error) {
	stream, err := conn.OpenStreamSync(context.Background())
	if err != nil {
		return 0, err
	}
	if _, err := fmt.Fprintf(stream, "GET %s\r\n", p); err != nil {
		return 0, err
	}
	if err := stream.Close(); err != nil { // FIN: the request is complete
		return 0, err
	}
	f, err := os.Create(dest)
	if err != nil {
		stream.CancelRead(0)
		return 0, err
	}
	n, err := io.Copy(f, stream)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(dest)
	}
	return n, err
}

// outputName is the file name a path is saved under.
func outputName(p string) string {
	name := path.Base(p)
	if name == "/" || name == "." || name == ".." {
		return "index.html"
	}
	return name
}
