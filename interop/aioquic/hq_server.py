#!/usr/bin/env python3
"""hq-interop (HTTP/0.9 over QUIC) file server on aioquic.

    hq_server.py --listen HOST:PORT --root DIR --cert F --key F [--cipher LIST] [--retry] [--0rtt]

Serves until killed. Requests are `GET /path` on a bidirectional stream; the
reply is the file's bytes and FIN, or a stream reset when the file cannot be
served. Paths that would leave the root are refused. Session tickets are kept
in memory, each usable once, so clients resume; aioquic's tickets always allow
early data, so 0-RTT is accepted with or without `--0rtt`.
"""

import argparse
import asyncio
import os
import sys

from aioquic.asyncio import QuicConnectionProtocol, serve
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import HandshakeCompleted, StreamDataReceived, StreamReset

from hq_common import (
    ALPN,
    MAX_DATA,
    MAX_STREAM_DATA,
    negotiated_suite,
    parse_ciphers,
    qlog_from_env,
    suite_name,
    version,
)

MAX_REQUEST = 8 << 10  # bytes a client may send on one request stream
ERR_REJECTED = 0x10  # application error code for refused requests


def resolve_path(root, request):
    """Map b"GET /a/b\\r\\n" to a file under root, or raise ValueError."""
    line = request.rstrip(b"\r\n").decode("utf-8", errors="strict")
    if not line.startswith("GET /"):
        raise ValueError(f"bad request {line!r}")
    path = line[len("GET /") :]
    parts = path.split("/")
    if any(p in ("", ".", "..") or "\\" in p or "\0" in p or " " in p for p in parts):
        raise ValueError(f"refused path {line[4:]!r}")
    full = os.path.realpath(os.path.join(root, *parts))
    if os.path.commonpath([root, full]) != root:
        raise ValueError(f"refused path {line[4:]!r}: leaves the root")
    if not os.path.isfile(full):
        raise ValueError(f"no such file {line[4:]!r}")
    return full


class Tickets:
    """Session tickets issued, each taken when a client presents it (a replayed
    ClientHello finds none)."""

    def __init__(self):
        self._tickets = {}

    def add(self, ticket):
        self._tickets[ticket.ticket] = ticket

    def take(self, label):
        return self._tickets.pop(label, None)


class HqServer(QuicConnectionProtocol):
    root = ""
    suites = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._requests = {}

    def quic_event_received(self, event):
        if isinstance(event, HandshakeCompleted):
            suite = negotiated_suite(self._quic)
            if self.suites and suite not in self.suites:
                print(f"negotiated {suite_name(suite)}, which was not allowed", file=sys.stderr)
                self._quic.close(error_code=0x1, reason_phrase="wrong cipher suite")
        elif isinstance(event, StreamDataReceived):
            request = self._requests.get(event.stream_id, b"") + event.data
            if len(request) > MAX_REQUEST:
                self._reject(event.stream_id, "request too long")
                return
            if not event.end_stream:
                self._requests[event.stream_id] = request
                return
            self._requests.pop(event.stream_id, None)
            self._respond(event.stream_id, request)
        elif isinstance(event, StreamReset):
            self._requests.pop(event.stream_id, None)

    def _respond(self, stream_id, request):
        try:
            full = resolve_path(self.root, request)
            with open(full, "rb") as f:
                body = f.read()
        except (ValueError, UnicodeDecodeError, OSError) as e:
            self._reject(stream_id, str(e))
            return
        # aioquic buffers the whole body and sends it as flow control allows.
        self._quic.send_stream_data(stream_id, body, end_stream=True)
        self.transmit()

    def _reject(self, stream_id, why):
        print(f"stream {stream_id}: {why}", file=sys.stderr)
        self._requests.pop(stream_id, None)
        self._quic.reset_stream(stream_id, ERR_REJECTED)
        self._quic.stop_stream(stream_id, ERR_REJECTED)
        self.transmit()


async def run(args):
    host, _, port = args.listen.rpartition(":")
    host = host.strip("[]")
    if not os.path.isdir(args.root):
        raise SystemExit(f"--root {args.root}: not a directory")
    suites = parse_ciphers(args.cipher)
    config = QuicConfiguration(
        is_client=False,
        alpn_protocols=ALPN,
        idle_timeout=30.0,
        max_data=MAX_DATA,
        max_stream_data=MAX_STREAM_DATA,
    )
    qlog_from_env(config)
    if suites:
        config.cipher_suites = suites
    config.load_cert_chain(args.cert, args.key)
    HqServer.root = os.path.realpath(args.root)
    HqServer.suites = suites
    tickets = Tickets()
    server = await serve(
        host,
        int(port),
        configuration=config,
        create_protocol=HqServer,
        retry=args.retry,
        session_ticket_fetcher=tickets.take,
        session_ticket_handler=tickets.add,
    )
    addr = server._transport.get_extra_info("sockname")
    print(f"{version()} listening on {addr[0]}:{addr[1]} (hq-interop)", file=sys.stderr, flush=True)
    await asyncio.Event().wait()


def main():
    parser = argparse.ArgumentParser(description="hq-interop file server on aioquic")
    parser.add_argument("--listen", default="127.0.0.1:4433")
    parser.add_argument("--root")
    parser.add_argument("--cert")
    parser.add_argument("--key")
    parser.add_argument("--cipher", action="append", help="aes128, aes256, chacha20 (comma-separated)")
    parser.add_argument("--retry", action="store_true", help="validate client addresses with Retry")
    parser.add_argument("--0rtt", dest="zero_rtt", action="store_true",
                        help="accept 0-RTT (always on: the tickets kept allow early data)")
    parser.add_argument("--version", action="store_true", help="print versions and exit")
    args = parser.parse_args()
    if args.version:
        print(version())
        return 0
    if not (args.root and args.cert and args.key):
        parser.error("--root, --cert and --key are required")
    try:
        asyncio.run(run(args))
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
