package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/quic-go/quic-go"
)

// maxRequest bounds what a client may send on a request stream.
const maxRequest = 8 << 10

// errRejected is the application error code for refused requests.
const errRejected quic.StreamErrorCode = 0x10

func runServer(args []string) error {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:4433", "address to listen on")
	rootDir := fs.String("root", "", "directory to serve")
	certFile := fs.String("cert", "", "certificate chain (PEM)")
	keyFile := fs.String("key", "", "private key (PEM)")
	cipher := fs.String("cipher", "", "TLS 1.3 cipher suites to accept: aes128,aes256,chacha20")
	retry := fs.Bool("retry", false, "validate client addresses with Retry")
	quicVersions := fs.String("quic-versions", "1,2", "QUIC versions to accept, comma-separated: 1, 2")
	zeroRTT := fs.Bool("0rtt", false, "accept 0-RTT from resuming clients")
	rest, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return fmt.Errorf("unexpected argument %q", rest[0])
	}
	if *rootDir == "" || *certFile == "" || *keyFile == "" {
		return errors.New("--root, --cert and --key are required")
	}
	ciphers, err := parseCiphers(*cipher)
	if err != nil {
		return err
	}
	restrictCiphers(ciphers)
	versions, err := parseVersions(*quicVersions)
	if err != nil {
		return err
	}
	root, err := os.OpenRoot(*rootDir) // refuses paths that leave the directory
	if err != nil {
		return err
	}
	cert, err := tls.LoadX509KeyPair(*certFile, *keyFile)
	if err != nil {
		return err
	}
	tlsConf := &tls.Config{
		Certificates: []tls.Certificate{cert},
		NextProtos:   []string{alpn},
		MinVersion:   tls.VersionTLS13,
	}
	udpAddr, err := net.ResolveUDPAddr("udp", *listen)
	if err != nil {
		return err
	}
	udp, err := net.ListenUDP("udp", udpAddr)
	if err != nil {
		return err
	}
	tr := &quic.Transport{Conn: udp}
	if *retry {
		tr.VerifySourceAddress = func(net.Addr) bool { return true }
	}
	conf := &quic.Config{
		MaxIdleTimeout:             30 * time.Second,
		MaxIncomingStreams:         1000,
		MaxStreamReceiveWindow:     16 << 20,
		MaxConnectionReceiveWindow: 64 << 20,
		Versions:                   versions,
		Allow0RTT:                  *zeroRTT,
	}
	// With 0-RTT, connections are served from the ClientHello on, so early
	// requests are answered.
	var accept func(context.Context) (*quic.Conn, error)
	if *zeroRTT {
		ln, err := tr.ListenEarly(tlsConf, conf)
		if err != nil {
			return err
		}
		accept = ln.Accept
	} else {
		ln, err := tr.Listen(tlsConf, conf)
		if err != nil {
			return err
		}
		accept = ln.Accept
	}
	fmt.Fprintf(os.Stderr, "%s listening on %s (hq-interop)\n", version(), udp.LocalAddr())
	for {
		conn, err := accept(context.Background())
		if err != nil {
			return err
		}
		go serveConn(conn, root, ciphers)
	}
}

func serveConn(conn *quic.Conn, root *os.Root, ciphers []uint16) {
	suite := conn.ConnectionState().TLS.CipherSuite
	if err := checkCipher(suite, ciphers); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", conn.RemoteAddr(), err)
		conn.CloseWithError(1, "wrong cipher suite")
		return
	}
	for {
		stream, err := conn.AcceptStream(context.Background())
		if err != nil {
			return // connection closed
		}
		go serveStream(stream, root)
	}
}

func serveStream(stream *quic.Stream, root *os.Root) {
	req, err := io.ReadAll(io.LimitReader(stream, maxRequest+1))
	if err == nil && len(req) > maxRequest {
		err = errors.New("request too long")
	}
	var f *os.File
	if err == nil {
		var name string
		if name, err = requestPath(req); err == nil {
			f, err = root.Open(name)
		}
	}
	if err == nil {
		var st os.FileInfo
		if st, err = f.Stat(); err == nil && !st.Mode().IsRegular() {
			err = errors.New("not a regular file")
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "stream %d: %v\n", stream.StreamID(), err)
		if f != nil {
			f.Close()
		}
		stream.CancelRead(errRejected)
		stream.CancelWrite(errRejected)
		return
	}
	defer f.Close()
	if _, err := io.Copy(stream, f); err != nil {
		stream.CancelWrite(errRejected)
		return
	}
	stream.Close()
}

// requestPath parses "GET /path\r\n" into a path relative to the root,
// refusing anything that could name a file outside it.
func requestPath(req []byte) (string, error) {
	line := string(bytes.TrimRight(req, "\r\n"))
	p, ok := strings.CutPrefix(line, "GET ")
	if !ok || !strings.HasPrefix(p, "/") || strings.ContainsAny(p, "\x00\\\r\n ") {
		return "", fmt.Errorf("bad request %q", line)
	}
	rel := strings.TrimPrefix(p, "/")
	for _, part := range strings.Split(rel, "/") {
		if part == ".." || part == "." || part == "" {
			return "", fmt.Errorf("refused path %q", p)
		}
	}
	return rel, nil
}
