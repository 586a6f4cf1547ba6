package main

import (
	"fmt"
	"strings"

	"github.com/quic-go/quic-go"
)

// parseVersions reads a comma-separated list of QUIC versions: 1 (RFC 9000)
// and 2 (RFC 9369). Empty: quic-go's defaults.
func parseVersions(list string) ([]quic.Version, error) {
	if list == "" {
		return nil, nil
	}
	var out []quic.Version
	for _, v := range strings.Split(list, ",") {
		switch strings.TrimSpace(v) {
		case "1":
			out = append(out, quic.Version1)
		case "2":
			out = append(out, quic.Version2)
		default:
			return nil, fmt.Errorf("unknown QUIC version %q (1 or 2)", v)
		}
	}
	return out, nil
}

// versionName is how the logs name a version, for the interop checks.
func versionName(v quic.Version) string {
	switch v {
	case quic.Version1:
		return "v1"
	case quic.Version2:
		return "v2"
	default:
		return fmt.Sprintf("%#x", uint32(v))
	}
}
