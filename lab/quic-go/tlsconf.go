package main

// TLS as the lab's Rust adapters have it (crates/quark-lab/src/adapter/tls.rs):
// TLS 1.3 with one cipher suite, ALPN hq-interop, the certificate the
// orchestrator made for the run (the server's identity; the client trusts
// exactly it, for the name localhost).

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"
	_ "unsafe" // for go:linkname
)

const (
	alpn       = "hq-interop"
	serverName = "localhost"
)

// crypto/tls has no setting for TLS 1.3 cipher suites: the client's offer
// and the server's choice come from these two lists, which crypto/tls makes
// reachable by name for exactly this use (interop/quic-go does the same).
//
//go:linkname defaultCipherSuitesTLS13 crypto/tls.defaultCipherSuitesTLS13
var defaultCipherSuitesTLS13 []uint16

//go:linkname defaultCipherSuitesTLS13NoAES crypto/tls.defaultCipherSuitesTLS13NoAES
var defaultCipherSuitesTLS13NoAES []uint16

// useOnlySuite parses a --cipher name (the names quark's Cipher::parse
// takes) and makes it the only TLS 1.3 suite this process offers or accepts.
func useOnlySuite(name string) (uint16, error) {
	var id uint16
	switch strings.ToLower(name) {
	case "aes128gcm", "aes-128-gcm":
		id = tls.TLS_AES_128_GCM_SHA256
	case "aes256gcm", "aes-256-gcm":
		id = tls.TLS_AES_256_GCM_SHA384
	case "chacha20", "chacha20-poly1305":
		id = tls.TLS_CHACHA20_POLY1305_SHA256
	default:
		return 0, fmt.Errorf("unknown cipher %s", name)
	}
	defaultCipherSuitesTLS13 = []uint16{id}
	defaultCipherSuitesTLS13NoAES = []uint16{id}
	return id, nil
}

// checkSuite fails when a handshake settled on another suite than asked for.
func checkSuite(got, want uint16) error {
	if got != want {
		return fmt.Errorf("negotiated %s instead of %s", tls.CipherSuiteName(got), tls.CipherSuiteName(want))
	}
	return nil
}

// curves are the key exchanges of rustls with ring, which the Rust stacks
// use, in its order. Go would lead with the hybrid X25519MLKEM768, which
// costs more and which those stacks do not offer.
var curves = []tls.CurveID{tls.X25519, tls.CurveP256, tls.CurveP384}

// serverTLS loads the run's certificate and PKCS#8 key (both DER).
func serverTLS(certFile, keyFile string) (*tls.Config, error) {
	cert, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("reading the certificate: %w", err)
	}
	der, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("reading the key: %w", err)
	}
	key, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, fmt.Errorf("reading the key: %s: %w", keyFile, err)
	}
	return &tls.Config{
		Certificates:     []tls.Certificate{{Certificate: [][]byte{cert}, PrivateKey: key}},
		NextProtos:       []string{alpn},
		MinVersion:       tls.VersionTLS13,
		CurvePreferences: curves,
	}, nil
}

// clientTLS trusts the run's certificate only. Sessions are cached for
// resumption, as rustls's client configuration does by default.
func clientTLS(certFile string) (*tls.Config, error) {
	der, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("reading the certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("reading the certificate: %s: %w", certFile, err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(cert)
	return &tls.Config{
		RootCAs:            roots,
		ServerName:         serverName,
		NextProtos:         []string{alpn},
		MinVersion:         tls.VersionTLS13,
		CurvePreferences:   curves,
		ClientSessionCache: tls.NewLRUClientSessionCache(256),
	}, nil
}
