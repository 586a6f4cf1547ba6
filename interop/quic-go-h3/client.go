package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/quic-go/quic-go/http3"
)

// urlList is a repeatable flag.
type urlList []string

func (l *urlList) String() string     { return strings.Join(*l, " ") }
func (l *urlList) Set(s string) error { *l = append(*l, s); return nil }

// exchange is one request and what came back.
type exchange struct {
	method, url, path string
	line              string
	err               error
}

func runClient(args []string) error {
	fs := flag.NewFlagSet("client", flag.ContinueOnError)
	var posts urlList
	fs.Var(&posts, "post", "POST the data to this URL (repeatable)")
	dataLen := fs.Int("data-len", 0, "length of the POST body")
	seed := fs.Uint("seed", 1, "seed of the POST body")
	ca := fs.String("ca", "", "trust the certificates in this PEM file")
	insecure := fs.Bool("insecure", false, "do not verify the server certificate")
	serverName := fs.String("server-name", "localhost", "SNI and certificate name")
	timeout := fs.Float64("timeout", 60, "seconds for all requests")
	gets, err := parseMixed(fs, args)
	if err != nil {
		return err
	}
	if len(gets) == 0 && len(posts) == 0 {
		return errors.New("no URLs given")
	}

	tlsConf := &tls.Config{ServerName: *serverName, MinVersion: tls.VersionTLS13}
	switch {
	case *insecure:
		tlsConf.InsecureSkipVerify = true
	case *ca != "":
		pem, err := os.ReadFile(*ca)
		if err != nil {
			return err
		}
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(pem) {
			return fmt.Errorf("--ca %s: no certificate found", *ca)
		}
		tlsConf.RootCAs = roots
	default:
		return errors.New("no way to verify the server: give --ca FILE (or --insecure)")
	}
	transport := &http3.Transport{TLSClientConfig: tlsConf, DisableCompression: true}
	defer transport.Close()
	client := &http.Client{Transport: transport, Timeout: time.Duration(*timeout * float64(time.Second))}

	var exchanges []*exchange
	for _, list := range []struct {
		method string
		urls   []string
	}{{http.MethodGet, gets}, {http.MethodPost, posts}} {
		for _, raw := range list.urls {
			u, err := url.Parse(raw)
			if err != nil || u.Scheme != "https" || u.Host == "" {
				return fmt.Errorf("%s: not an https://host:port/path URL", raw)
			}
			exchanges = append(exchanges, &exchange{method: list.method, url: raw, path: u.RequestURI()})
		}
	}
	body := data(*dataLen, uint32(*seed))

	var wg sync.WaitGroup
	for _, ex := range exchanges {
		wg.Go(func() { ex.line, ex.err = do(client, ex, body) })
	}
	wg.Wait()

	failed := 0
	for _, ex := range exchanges {
		if ex.err != nil {
			failed++
			fmt.Fprintf(os.Stderr, "error: %s %s: %v\n", ex.method, ex.path, ex.err)
			continue
		}
		fmt.Println(ex.line)
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d requests failed", failed, len(exchanges))
	}
	return nil
}

// do sends one request and describes the response in one line.
func do(client *http.Client, ex *exchange, body []byte) (string, error) {
	var reqBody io.Reader
	if ex.method == http.MethodPost {
		reqBody = bytes.NewReader(body)
	}
	req, err := http.NewRequest(ex.method, ex.url, reqBody)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", fmt.Errorf("reading the body: %w", err)
	}
	trailer := resp.Trailer.Get("X-Sha256")
	if trailer == "" {
		trailer = "-"
	}
	return fmt.Sprintf("%s %s %d %s %d %s", ex.method, ex.path, resp.StatusCode, sha256Hex(got), len(got), trailer), nil
}
