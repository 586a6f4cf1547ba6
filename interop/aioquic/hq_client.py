#!/usr/bin/env python3
"""hq-interop (HTTP/0.9 over QUIC) client on aioquic.

    hq_client.py URL... -o DIR (--ca F | --insecure) [--cipher LIST] [--key-update] [--resume [--0rtt]]

Fetches every URL in parallel, one bidirectional stream each, on a single
connection. With --resume, the first URL goes over a connection of its own
and the rest over a second that resumes its session (with --0rtt, sending
the requests as early data); the summary says "resumed" and "0-RTT accepted"
when they happened. Exits non-zero if any download fails.
"""

import argparse
import asyncio
import os
import posixpath
import socket
import ssl
import sys
import time
from urllib.parse import urlsplit

from aioquic.asyncio import QuicConnectionProtocol, connect
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import ConnectionTerminated, StreamDataReceived, StreamReset

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


class Download:
    """One request: where its body goes and how it ended."""

    def __init__(self, path, dest):
        self.path = path
        self.dest = dest
        self.file = open(dest, "wb")
        self.size = 0
        self.done = asyncio.get_running_loop().create_future()

    def finish(self, error=None):
        if self.done.done():
            return
        self.file.close()
        if error is None:
            self.done.set_result(self.size)
        else:
            try:
                os.remove(self.dest)
            except OSError:
                pass
            self.done.set_exception(ConnectionError(error))


class HqClient(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._downloads = {}

    def get(self, path, dest):
        """Send `GET path` on a new stream; returns the Download to await."""
        stream_id = self._quic.get_next_available_stream_id()
        download = Download(path, dest)
        self._downloads[stream_id] = download
        self._quic.send_stream_data(stream_id, f"GET {path}\r\n".encode(), end_stream=True)
        self.transmit()
        return download

    def quic_event_received(self, event):
        if isinstance(event, StreamDataReceived):
            download = self._downloads.get(event.stream_id)
            if download is None:
                return
            if event.data:
                download.file.write(event.data)
                download.size += len(event.data)
            if event.end_stream:
                download.finish()
        elif isinstance(event, StreamReset):
            download = self._downloads.get(event.stream_id)
            if download is not None:
                download.finish(f"stream reset by the server (code {event.error_code})")
        elif isinstance(event, ConnectionTerminated):
            for download in self._downloads.values():
                download.finish(
                    f"connection closed (code {event.error_code}: {event.reason_phrase})"
                )


def resolve(host, port):
    """An address for host, IPv4 first (localhost may also name ::1)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_DGRAM)
    infos.sort(key=lambda info: info[0] != socket.AF_INET)
    return infos[0][4][0]


def output_name(path):
    name = posixpath.basename(path.split("?", 1)[0])
    return "index.html" if name in ("", ".", "..") else name


class Ticket:
    """The session ticket a first connection receives, for the second."""

    def __init__(self):
        self.ticket = None
        self.arrived = asyncio.Event()

    def store(self, ticket):
        self.ticket = ticket
        self.arrived.set()


async def fetch(args, config, host, port, paths, early=False, ticket=None):
    """Fetch `paths` over one connection; returns (downloads, results, tls).
    With `early`, the requests go before the handshake completes (0-RTT when
    the configuration holds a ticket that allows it). With `ticket`, the
    connection waits for the server's session ticket before it closes."""
    async with connect(
        resolve(host, port),
        port,
        configuration=config,
        create_protocol=HqClient,
        wait_connected=False,
        session_ticket_handler=ticket.store if ticket else None,
    ) as client:
        client.transmit()
        downloads = []
        if early:
            downloads = [client.get(path, os.path.join(args.output, output_name(path))) for path in paths]
        try:
            await asyncio.wait_for(client.wait_connected(), args.connect_timeout)
        except asyncio.TimeoutError:
            raise ConnectionError(f"no answer from {host}:{port} within {args.connect_timeout} s")
        suite = negotiated_suite(client._quic)
        print(f"cipher-suite: {suite_name(suite)}", file=sys.stderr)
        if config.cipher_suites and suite not in config.cipher_suites:
            raise SystemExit(f"negotiated {suite_name(suite)}, which was not requested")
        if not early:
            downloads = [client.get(path, os.path.join(args.output, output_name(path))) for path in paths]
        if args.key_update:
            # aioquic defers it until the handshake is confirmed.
            client._quic.request_key_update()
            client.transmit()
        results = await asyncio.gather(*(d.done for d in downloads), return_exceptions=True)
        if ticket is not None:
            # It travels with HANDSHAKE_DONE, about a round trip after the handshake.
            try:
                await asyncio.wait_for(ticket.arrived.wait(), 1.0)
            except asyncio.TimeoutError:
                pass
        client.close(error_code=0, reason_phrase="done")
        return downloads, results, client._quic.tls


async def run(args):
    targets = []
    for url in args.urls:
        parts = urlsplit(url)
        if parts.scheme != "https" or not parts.hostname:
            raise SystemExit(f"{url}: not an https://host:port/path URL")
        targets.append((parts.hostname, parts.port or 443, parts.path or "/"))
    host, port, _ = targets[0]
    if any((h, p) != (host, port) for h, p, _ in targets):
        raise SystemExit("all URLs must name the same server")
    if not os.path.isdir(args.output):
        raise SystemExit(f"-o {args.output}: not a directory")
    if args.resume and len(targets) < 2:
        raise SystemExit("--resume needs two URLs or more")

    suites = parse_ciphers(args.cipher)
    config = QuicConfiguration(
        is_client=True,
        alpn_protocols=ALPN,
        server_name=host,
        idle_timeout=30.0,
        max_data=MAX_DATA,
        max_stream_data=MAX_STREAM_DATA,
    )
    qlog_from_env(config)
    if suites:
        config.cipher_suites = suites
    if args.insecure:
        config.verify_mode = ssl.CERT_NONE
    elif args.ca:
        config.load_verify_locations(cafile=args.ca)
    else:
        raise SystemExit("no way to verify the server: give --ca FILE (or --insecure)")

    paths = [path for _, _, path in targets]
    start = time.monotonic()
    downloads, results, resumed = [], [], ""
    if args.resume:
        ticket = Ticket()
        downloads, results, _ = await fetch(args, config, host, port, paths[:1], ticket=ticket)
        paths = paths[1:]
        config.session_ticket = ticket.ticket
    rest = await fetch(args, config, host, port, paths, early=args.resume and args.zero_rtt)
    downloads += rest[0]
    results += rest[1]
    if args.resume:
        tls = rest[2]
        resumed = ", resumed" if tls.session_resumed else ", full handshake (no resumption)"
        if args.zero_rtt:
            resumed += ", 0-RTT accepted" if tls.early_data_accepted else ", 0-RTT not accepted"

    failed = 0
    total = 0
    for download, result in zip(downloads, results):
        if isinstance(result, BaseException):
            failed += 1
            print(f"error: {download.path}: {result}", file=sys.stderr)
        else:
            total += result
    elapsed = time.monotonic() - start
    print(f"{len(downloads) - failed} of {len(downloads)} files, {total} bytes in {elapsed:.3f} s{resumed}",
          file=sys.stderr)
    return 1 if failed else 0


def main():
    parser = argparse.ArgumentParser(description="hq-interop client on aioquic")
    parser.add_argument("urls", nargs="*", metavar="URL")
    parser.add_argument("-o", "--output", default=".", help="output directory")
    parser.add_argument("--ca", help="trust the certificates in this PEM file")
    parser.add_argument("--insecure", action="store_true", help="do not verify the server")
    parser.add_argument("--cipher", action="append", help="aes128, aes256, chacha20 (comma-separated)")
    parser.add_argument("--connect-timeout", type=float, default=10.0)
    parser.add_argument("--key-update", action="store_true",
                        help="start a 1-RTT key update once the handshake is confirmed")
    parser.add_argument("--resume", action="store_true",
                        help="the first URL on one connection, the rest on a second resuming its session")
    parser.add_argument("--0rtt", dest="zero_rtt", action="store_true",
                        help="with --resume: the second connection's requests in 0-RTT")
    parser.add_argument("--version", action="store_true", help="print versions and exit")
    args = parser.parse_intermixed_args()
    if args.version:
        print(version())
        return 0
    if not args.urls:
        parser.error("no URLs given")
    try:
        return asyncio.run(run(args))
    except (ConnectionError, OSError) as e:
        print(f"hq_client: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
