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
)

func runClient(args []string) error {
	fs := flag.NewFlagSet("client", flag.ContinueOnError)
	out := fs.String("o", ".", "output directory")
	ca := fs.String("ca", "", "trust the certificates in this PEM file")
	insecure := fs.Bool("insecure", false, "do not verify the server certificate")
	cipher := fs.String("cipher", "", "TLS 1.3 cipher suites to offer: aes128,aes256,chacha20")
	timeout := fs.Duration("connect-timeout", 10*time.Second, "handshake timeout")
	quicVersion := fs.String("quic-version", "", "QUIC version to speak: 1 or 2 (default: quic-go's)")
	urls, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(urls) == 0 {
		return errors.New("no URLs given")
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

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	conn, err := quic.DialAddr(ctx, net.JoinHostPort(hostname, port), tlsConf, &quic.Config{
		MaxIdleTimeout:             30 * time.Second,
		MaxStreamReceiveWindow:     16 << 20,
		MaxConnectionReceiveWindow: 64 << 20,
		Versions:                   versions,
	})
	if err != nil {
		return fmt.Errorf("connect to %s: %w", host, err)
	}
	fmt.Fprintf(os.Stderr, "quic-version: %s\n", versionName(conn.ConnectionState().Version))
	suite := conn.ConnectionState().TLS.CipherSuite
	fmt.Fprintf(os.Stderr, "cipher-suite: %s\n", tls.CipherSuiteName(suite))
	if err := checkCipher(suite, ciphers); err != nil {
		conn.CloseWithError(1, "wrong cipher suite")
		return err
	}

	start := time.Now()
	errs := make([]error, len(paths))
	sizes := make([]int64, len(paths))
	var wg sync.WaitGroup
	for i, p := range paths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sizes[i], errs[i] = fetch(conn, p, filepath.Join(*out, outputName(p)))
		}()
	}
	wg.Wait()
	conn.CloseWithError(0, "done")

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
	fmt.Fprintf(os.Stderr, "%d of %d files, %d bytes in %.3f s\n", len(paths)-failed, len(paths), total, secs)
	if failed > 0 {
		return fmt.Errorf("%d of %d downloads failed", failed, len(paths))
	}
	return nil
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
