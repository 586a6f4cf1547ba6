#!/usr/bin/env python3
"""HTTP/3 (RFC 9114) server and client on aioquic, for quark-h3's interop tests.

    h3_peer.py server --port P --cert F --key F [--host 127.0.0.1]
    h3_peer.py client URL... (--ca F | --insecure) [--post URL]... [--data-len N] [--seed S]
    h3_peer.py version

The server answers `GET /bytes/<n>` with n deterministic bytes (see `data`)
and content-length n, and `POST /echo` with the request body and the trailer
`x-sha256` (the body's SHA-256); anything else gets 404. It prints
`ready PORT` on stdout once it listens, then serves until killed.

The client sends every request at once on one connection: a GET for each
URL, a POST of `data(--data-len, --seed)` for each `--post URL`. It prints
one line per request (the GETs in the order given, then the POSTs):

    METHOD PATH STATUS SHA256HEX LENGTH TRAILER

where TRAILER is the response's `x-sha256` trailer, or `-`. It exits non-zero
if any request fails (reset, connection closed, timeout).
"""

import argparse
import asyncio
import hashlib
import ssl
import sys
from urllib.parse import urlsplit

from aioquic.asyncio import QuicConnectionProtocol, connect, serve
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import ConnectionTerminated, StreamReset

from hq_common import version

# Flow-control windows: aioquic's 1 MiB defaults throttle bulk transfers.
MAX_DATA = 64 << 20
MAX_STREAM_DATA = 16 << 20

MAX_ECHO = 64 << 20  # the longest request body the server keeps
H3_REQUEST_REJECTED = 0x10B


# Fields repeated on every request / response: with the peer's QPACK dynamic
# table allowed, pylsqpack inserts them, so the peer's decoder table is used.
CLIENT_HEADERS = [
    (b"user-agent", b"aioquic-h3-peer (quark interop tests)"),
    (b"accept-language", b"en-US,en;q=0.5"),
]
SERVER_HEADERS = [(b"server", b"aioquic-h3-peer"), (b"cache-control", b"no-store")]


def data(length, seed):
    """`length` deterministic bytes: xorshift32 from `seed | 1`, each state as
    4 little-endian bytes (the same as quark-h3's tests)."""
    x = (seed | 1) & 0xFFFFFFFF
    words = []
    for _ in range((length + 3) // 4):
        x ^= (x << 13) & 0xFFFFFFFF
        x ^= x >> 17
        x ^= (x << 5) & 0xFFFFFFFF
        words.append(x)
    out = b"".join(w.to_bytes(4, "little") for w in words)
    return out[:length]


def header(headers, name):
    for k, v in headers:
        if k == name:
            return v
    return None




# --- server ------------------------------------------------------------------


class Request:
    def __init__(self, headers):
        self.method = header(headers, b":method") or b""
        self.path = header(headers, b":path") or b""
        self.body = bytearray()


class H3Server(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._http = H3Connection(self._quic)
        self._requests = {}

    def quic_event_received(self, event):
        if isinstance(event, StreamReset):
            self._requests.pop(event.stream_id, None)
        for h3_event in self._http.handle_event(event):
            self._h3_event(h3_event)

    def _h3_event(self, event):
        if isinstance(event, HeadersReceived):
            if event.stream_id not in self._requests:
                self._requests[event.stream_id] = Request(event.headers)
            # Request trailers are accepted and ignored.
        elif isinstance(event, DataReceived):
            request = self._requests.get(event.stream_id)
            if request is None:
                return
            request.body += event.data
            if len(request.body) > MAX_ECHO:
                self._requests.pop(event.stream_id, None)
                self._quic.reset_stream(event.stream_id, H3_REQUEST_REJECTED)
                self._quic.stop_stream(event.stream_id, H3_REQUEST_REJECTED)
                self.transmit()
                return
        else:
            return
        if event.stream_ended:
            request = self._requests.pop(event.stream_id, None)
            if request is not None:
                self._answer(event.stream_id, request)

    def _answer(self, stream_id, request):
        path = request.path.decode("ascii", errors="replace").split("?", 1)[0]
        n = None
        if request.method == b"GET" and path.startswith("/bytes/"):
            try:
                n = int(path[len("/bytes/") :])
            except ValueError:
                n = None
        if n is not None and 0 <= n <= 1 << 30:
            self._http.send_headers(
                stream_id,
                [(b":status", b"200"), (b"content-length", str(n).encode())] + SERVER_HEADERS,
            )
            # aioquic buffers the whole body and sends it as flow control allows.
            self._http.send_data(stream_id, data(n, n), end_stream=True)
        elif request.method == b"POST" and path == "/echo":
            body = bytes(request.body)
            self._http.send_headers(
                stream_id,
                [(b":status", b"200"), (b"content-length", str(len(body)).encode())]
                + SERVER_HEADERS,
            )
            self._http.send_data(stream_id, body, end_stream=False)
            digest = hashlib.sha256(body).hexdigest().encode()
            self._http.send_headers(stream_id, [(b"x-sha256", digest)], end_stream=True)
        else:
            self._http.send_headers(stream_id, [(b":status", b"404")], end_stream=True)
        self.transmit()


async def run_server(args):
    config = QuicConfiguration(
        is_client=False,
        alpn_protocols=H3_ALPN,
        idle_timeout=30.0,
        max_data=MAX_DATA,
        max_stream_data=MAX_STREAM_DATA,
    )
    config.load_cert_chain(args.cert, args.key)
    await serve(args.host, args.port, configuration=config, create_protocol=H3Server)
    print(f"ready {args.port}", flush=True)
    print(f"{version()} serving h3 on {args.host}:{args.port}", file=sys.stderr, flush=True)
    await asyncio.Event().wait()


# --- client ------------------------------------------------------------------


class Exchange:
    """One request and what came back."""

    def __init__(self, method, path):
        self.method = method
        self.path = path
        self.status = None
        self.trailers = None
        self.body = bytearray()
        self.done = asyncio.get_running_loop().create_future()

    def fail(self, why):
        if not self.done.done():
            self.done.set_exception(ConnectionError(why))

    def line(self):
        digest = hashlib.sha256(self.body).hexdigest()
        trailer = header(self.trailers or [], b"x-sha256")
        trailer = trailer.decode() if trailer else "-"
        return f"{self.method} {self.path} {self.status} {digest} {len(self.body)} {trailer}"


class H3Client(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._http = H3Connection(self._quic)
        self._exchanges = {}

    def request(self, method, authority, path, body):
        stream_id = self._quic.get_next_available_stream_id()
        exchange = Exchange(method, path)
        self._exchanges[stream_id] = exchange
        headers = [
            (b":method", method.encode()),
            (b":scheme", b"https"),
            (b":authority", authority.encode()),
            (b":path", path.encode()),
        ] + CLIENT_HEADERS
        if body is not None:
            headers.append((b"content-length", str(len(body)).encode()))
        self._http.send_headers(stream_id, headers, end_stream=body is None)
        if body is not None:
            self._http.send_data(stream_id, body, end_stream=True)
        self.transmit()
        return exchange

    def quic_event_received(self, event):
        if isinstance(event, StreamReset):
            exchange = self._exchanges.get(event.stream_id)
            if exchange is not None:
                exchange.fail(f"stream reset by the server (code {event.error_code:#x})")
        elif isinstance(event, ConnectionTerminated):
            for exchange in self._exchanges.values():
                exchange.fail(f"connection closed (code {event.error_code:#x}: {event.reason_phrase})")
        for h3_event in self._http.handle_event(event):
            self._h3_event(h3_event)

    def _h3_event(self, event):
        exchange = self._exchanges.get(event.stream_id)
        if exchange is None:
            return
        if isinstance(event, HeadersReceived):
            status = header(event.headers, b":status")
            if exchange.status is None and status is not None:
                if status.startswith(b"1"):
                    return  # an interim response
                exchange.status = int(status)
            else:
                exchange.trailers = event.headers
        elif isinstance(event, DataReceived):
            exchange.body += event.data
        else:
            return
        if event.stream_ended and not exchange.done.done():
            if exchange.status is None:
                exchange.fail("the stream ended without a response")
            else:
                exchange.done.set_result(None)


async def run_client(args):
    requests = [("GET", url) for url in args.urls] + [("POST", url) for url in args.post]
    targets = []
    for method, url in requests:
        parts = urlsplit(url)
        if parts.scheme != "https" or not parts.hostname:
            raise SystemExit(f"{url}: not an https://host:port/path URL")
        path = parts.path or "/"
        if parts.query:
            path += "?" + parts.query
        targets.append((method, parts.hostname, parts.port or 443, path))
    host, port = targets[0][1], targets[0][2]
    if any((h, p) != (host, port) for _, h, p, _ in targets):
        raise SystemExit("all URLs must name the same server")

    config = QuicConfiguration(
        is_client=True,
        alpn_protocols=H3_ALPN,
        server_name=args.server_name,
        idle_timeout=30.0,
        max_data=MAX_DATA,
        max_stream_data=MAX_STREAM_DATA,
    )
    if args.insecure:
        config.verify_mode = ssl.CERT_NONE
    elif args.ca:
        config.load_verify_locations(cafile=args.ca)
    else:
        raise SystemExit("no way to verify the server: give --ca FILE (or --insecure)")

    body = data(args.data_len, args.seed) if args.post else None
    authority = f"{args.server_name}:{port}"
    async with connect(host, port, configuration=config, create_protocol=H3Client) as client:
        # Requests wait for the server's SETTINGS, so pylsqpack's encoder may
        # use the dynamic table the server allows (it inserts fields that
        # repeat: the headers below, from the second request on).
        for _ in range(500):
            if client._http.received_settings is not None:
                break
            await asyncio.sleep(0.01)
        exchanges = [
            client.request(method, authority, path, body if method == "POST" else None)
            for method, _, _, path in targets
        ]
        try:
            results = await asyncio.wait_for(
                asyncio.gather(*(e.done for e in exchanges), return_exceptions=True), args.timeout
            )
        except asyncio.TimeoutError:
            raise ConnectionError(f"no complete answers within {args.timeout} s")
        client.close(error_code=0x100, reason_phrase="done")  # H3_NO_ERROR

    failed = 0
    for exchange, result in zip(exchanges, results):
        if isinstance(result, BaseException):
            failed += 1
            print(f"error: {exchange.method} {exchange.path}: {result}", file=sys.stderr)
        else:
            print(exchange.line())
    sys.stdout.flush()
    return 1 if failed else 0


def main():
    server = argparse.ArgumentParser(prog="h3_peer.py server", description="HTTP/3 server on aioquic")
    server.add_argument("--host", default="127.0.0.1")
    server.add_argument("--port", type=int, required=True)
    server.add_argument("--cert", required=True)
    server.add_argument("--key", required=True)

    client = argparse.ArgumentParser(prog="h3_peer.py client", description="HTTP/3 client on aioquic")
    client.add_argument("urls", nargs="*", metavar="URL", help="GET these")
    client.add_argument("--post", action="append", default=[], metavar="URL", help="POST data to this")
    client.add_argument("--data-len", type=int, default=0, help="length of the POST body")
    client.add_argument("--seed", type=int, default=1, help="seed of the POST body")
    client.add_argument("--ca", help="trust the certificates in this PEM file")
    client.add_argument("--insecure", action="store_true", help="do not verify the server")
    client.add_argument("--server-name", default="localhost", help="SNI and certificate name")
    client.add_argument("--timeout", type=float, default=60.0, help="seconds for all requests")

    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if mode == "version":
        print(version())
        return 0
    if mode not in ("server", "client"):
        usage = __doc__.strip().splitlines()[2:5]  # the three command lines
        print("usage:\n" + "\n".join(usage), file=sys.stderr)
        return 2
    try:
        if mode == "server":
            asyncio.run(run_server(server.parse_args(sys.argv[2:])))
            return 0
        args = client.parse_intermixed_args(sys.argv[2:])
        if not args.urls and not args.post:
            client.error("no URLs given")
        return asyncio.run(run_client(args))
    except KeyboardInterrupt:
        return 0
    except (ConnectionError, OSError) as e:
        print(f"h3_peer {mode}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
