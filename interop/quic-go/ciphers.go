package main

import (
	"crypto/tls"
	"fmt"
	"runtime/debug"
	"strings"
	_ "unsafe" // for go:linkname
)

// crypto/tls offers no way to choose TLS 1.3 cipher suites. Both the
// client's offer and the server's choice come from these two lists, which
// crypto/tls exports by name for exactly this kind of use.
//
//go:linkname defaultCipherSuitesTLS13 crypto/tls.defaultCipherSuitesTLS13
var defaultCipherSuitesTLS13 []uint16

//go:linkname defaultCipherSuitesTLS13NoAES crypto/tls.defaultCipherSuitesTLS13NoAES
var defaultCipherSuitesTLS13NoAES []uint16

// parseCiphers turns "aes128,chacha20" into TLS 1.3 suite ids.
func parseCiphers(list string) ([]uint16, error) {
	var ids []uint16
	for _, name := range strings.Split(list, ",") {
		switch strings.TrimSpace(name) {
		case "":
		case "aes128":
			ids = append(ids, tls.TLS_AES_128_GCM_SHA256)
		case "aes256":
			ids = append(ids, tls.TLS_AES_256_GCM_SHA384)
		case "chacha20":
			ids = append(ids, tls.TLS_CHACHA20_POLY1305_SHA256)
		default:
			return nil, fmt.Errorf("unknown cipher %q (aes128, aes256, chacha20)", name)
		}
	}
	return ids, nil
}

// restrictCiphers limits this process to the given TLS 1.3 suites.
func restrictCiphers(ids []uint16) {
	if len(ids) == 0 {
		return
	}
	defaultCipherSuitesTLS13 = append([]uint16(nil), ids...)
	defaultCipherSuitesTLS13NoAES = append([]uint16(nil), ids...)
}

// checkCipher fails when the negotiated suite is not one of the requested.
func checkCipher(got uint16, want []uint16) error {
	if len(want) == 0 {
		return nil
	}
	for _, id := range want {
		if id == got {
			return nil
		}
	}
	return fmt.Errorf("negotiated %s, which is not among the requested suites", tls.CipherSuiteName(got))
}

func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "quicgo-hq (unknown quic-go version)"
	}
	for _, dep := range info.Deps {
		if dep.Path == "github.com/quic-go/quic-go" {
			return fmt.Sprintf("quicgo-hq: quic-go %s, %s", dep.Version, info.GoVersion)
		}
	}
	return "quicgo-hq: quic-go (not found in build info), " + info.GoVersion
}
