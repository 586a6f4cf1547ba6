package main

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"

	"github.com/quic-go/quic-go/http3"
)

// maxEcho bounds the request body the server keeps for POST /echo.
const maxEcho = 64 << 20

func runServer(args []string) error {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	host := fs.String("host", "127.0.0.1", "address to listen on")
	port := fs.Int("port", 0, "UDP port (0: any free one)")
	certFile := fs.String("cert", "", "certificate chain (PEM)")
	keyFile := fs.String("key", "", "private key (PEM)")
	rest, err := parseMixed(fs, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return fmt.Errorf("unexpected argument %q", rest[0])
	}
	if *certFile == "" || *keyFile == "" {
		return errors.New("--cert and --key are required")
	}
	cert, err := tls.LoadX509KeyPair(*certFile, *keyFile)
	if err != nil {
		return err
	}
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.ParseIP(*host), Port: *port})
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /bytes/{n}", serveBytes)
	mux.HandleFunc("POST /echo", serveEcho)
	server := &http3.Server{
		TLSConfig: http3.ConfigureTLSConfig(&tls.Config{
			Certificates: []tls.Certificate{cert},
			MinVersion:   tls.VersionTLS13,
		}),
		Handler: mux,
	}
	fmt.Printf("ready %d\n", udp.LocalAddr().(*net.UDPAddr).Port)
	fmt.Fprintf(os.Stderr, "%s serving h3 on %s\n", version(), udp.LocalAddr())
	return server.Serve(udp)
}

func serveBytes(w http.ResponseWriter, r *http.Request) {
	n, err := strconv.Atoi(r.PathValue("n"))
	if err != nil || n < 0 || n > 1<<30 {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Length", strconv.Itoa(n))
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write(data(n, uint32(n))); err != nil {
		fmt.Fprintf(os.Stderr, "GET %s: %v\n", r.URL.Path, err)
	}
}

func serveEcho(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxEcho+1))
	if err != nil || len(body) > maxEcho {
		fmt.Fprintf(os.Stderr, "POST /echo: reading the body: %v (%d bytes)\n", err, len(body))
		http.Error(w, "bad request body", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.Header().Set("Trailer", "X-Sha256")
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write(body); err != nil {
		fmt.Fprintf(os.Stderr, "POST /echo: %v\n", err)
		return
	}
	w.Header().Set("X-Sha256", sha256Hex(body))
}
