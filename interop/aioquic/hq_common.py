"""Pieces shared by the aioquic hq-interop client and server."""

import os
import sys

import aioquic
from aioquic.quic.logger import QuicFileLogger
from aioquic.tls import CipherSuite

ALPN = ["hq-interop"]

CIPHERS = {
    "aes128": CipherSuite.AES_128_GCM_SHA256,
    "aes256": CipherSuite.AES_256_GCM_SHA384,
    "chacha20": CipherSuite.CHACHA20_POLY1305_SHA256,
}

# IANA names, as the other peers print them.
SUITE_NAMES = {
    CipherSuite.AES_128_GCM_SHA256: "TLS_AES_128_GCM_SHA256",
    CipherSuite.AES_256_GCM_SHA384: "TLS_AES_256_GCM_SHA384",
    CipherSuite.CHACHA20_POLY1305_SHA256: "TLS_CHACHA20_POLY1305_SHA256",
}

# Flow-control windows: aioquic's 1 MiB defaults throttle bulk transfers.
MAX_DATA = 64 << 20
MAX_STREAM_DATA = 16 << 20


def parse_ciphers(values):
    """Turn ["aes128,chacha20", "aes256"] into a list of suites, or None for all."""
    suites = []
    for value in values or []:
        for name in value.split(","):
            name = name.strip()
            if not name:
                continue
            if name not in CIPHERS:
                raise SystemExit(f"unknown cipher {name!r} (aes128, aes256, chacha20)")
            suites.append(CIPHERS[name])
    return suites or None


def negotiated_suite(quic):
    """The cipher suite a completed handshake settled on, or None."""
    schedule = getattr(quic.tls, "key_schedule", None)
    return getattr(schedule, "cipher_suite", None)


def suite_name(suite):
    return SUITE_NAMES.get(suite, str(suite))


def version():
    return f"aioquic {aioquic.__version__}, Python {sys.version.split()[0]}"


def qlog_from_env(config):
    """Write a qlog per connection into $QLOGDIR when it is set, as the
    interop runner asks of every endpoint."""
    directory = os.environ.get("QLOGDIR")
    if directory:
        os.makedirs(directory, exist_ok=True)
        config.quic_logger = QuicFileLogger(directory)
