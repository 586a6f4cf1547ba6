#!/usr/bin/env bash
# quark's endpoint for the QUIC interop runner (quic-interop/quic-interop-runner).
#
# Runner conventions: ROLE=client|server, TESTCASE, REQUESTS (space-separated
# URLs, client), files served from /www, downloads written to /downloads,
# certificate in /certs/{cert.pem,priv.key}, SSLKEYLOGFILE and QLOGDIR set by
# the runner, server on port 443. An unsupported test case exits 127.
#
# Outside a container (interop/run, or by hand) these override the paths:
#   QUARK (binary, default `quark` on PATH), WWW, DOWNLOADS, CERTS, PORT,
#   LISTEN_HOST (default 0.0.0.0 here, as in the container), SESSION_FILE.
set -euo pipefail

QUARK=${QUARK:-quark}
WWW=${WWW:-/www}
DOWNLOADS=${DOWNLOADS:-/downloads}
CERTS=${CERTS:-/certs}
PORT=${PORT:-443}
LISTEN_HOST=${LISTEN_HOST:-0.0.0.0}
ROLE=${ROLE:-}
TESTCASE=${TESTCASE:-}
REQUESTS=${REQUESTS:-}

# In the simulator image, /setup.sh configures routes; /wait-for-it.sh waits
# for the simulator. Neither exists outside a container.
[ -x /setup.sh ] && /setup.sh
unsupported() {
    echo "run_endpoint.sh: test case '$TESTCASE' not supported${1:+ ($1)}" >&2
    exit 127
}

# `needs get --flag`: the binary must know the flag (features added on other
# branches: session files, 0-RTT, QUIC v2, qlog, migration).
# (The help is read whole first: with pipefail, grep -q closing the pipe early
# could fail the pipeline.)
knows() {
    local help
    help=$("$QUARK" "$1" --help 2>/dev/null || true)
    grep -q -- "$2" <<<"$help"
}
needs() { knows "$1" "$2" || unsupported "quark $1 has no $2"; }

sub=get; [ "$ROLE" = server ] && sub=serve
if [ -n "${QLOGDIR:-}" ] && knows "$sub" --qlog-dir; then
    mkdir -p "$QLOGDIR"
    QLOG=(--qlog-dir "$QLOGDIR")
else
    QLOG=()
fi
# SSLKEYLOGFILE is read from the environment by the TLS stack; nothing to pass.

case "$ROLE" in
server)
    args=(serve --listen "$LISTEN_HOST:$PORT" --root "$WWW"
        --cert "$CERTS/cert.pem" --key "$CERTS/priv.key")
    case "$TESTCASE" in
    handshake | transfer | multiplexing | multiconnect | ecn | keyupdate | \
        handshakeloss | transferloss | handshakecorruption | transfercorruption | \
        longrtt | blackhole | goodput | crosstraffic | amplificationlimit | ipv6 | \
        rebind-port | rebind-addr) ;;
    chacha20) args+=(--cipher chacha20) ;;
    retry) args+=(--retry) ;;
    http3) args+=(--h3) ;;
    resumption) ;;
    zerortt) needs serve --0rtt; args+=(--0rtt) ;;
    # The client starts in v1; preferring v2, the server moves it there by
    # compatible version negotiation (RFC 9368), as the runner checks.
    v2) needs serve --quic-versions; args+=(--quic-versions 2,1) ;;
    connectionmigration) needs serve --preferred-address
        # Another address of this host on the same port (quark's rule).
        args+=(--preferred-address "${PREFERRED_ADDRESS:-127.0.0.2:$PORT}") ;;
    *) unsupported ;;
    esac
    exec "$QUARK" "${args[@]}" "${QLOG[@]}"
    ;;
client)
    [ -x /wait-for-it.sh ] && /wait-for-it.sh sim:57832 -s -t 30
    read -r -a urls <<<"$REQUESTS"
    [ ${#urls[@]} -gt 0 ] || { echo "run_endpoint.sh: REQUESTS is empty" >&2; exit 1; }
    mkdir -p "$DOWNLOADS"
    # The runner's certificates are self-signed for the server's name.
    base=(get -q -o "$DOWNLOADS" --insecure "${QLOG[@]}")
    case "$TESTCASE" in
    handshake | transfer | multiplexing | ecn | transferloss | transfercorruption | \
        longrtt | blackhole | goodput | crosstraffic | amplificationlimit | ipv6 | \
        rebind-port | rebind-addr)
        exec "$QUARK" "${base[@]}" "${urls[@]}" ;;
    chacha20) exec "$QUARK" "${base[@]}" --cipher chacha20 "${urls[@]}" ;;
    retry) exec "$QUARK" "${base[@]}" "${urls[@]}" ;;
    http3) exec "$QUARK" "${base[@]}" --h3 "${urls[@]}" ;;
    keyupdate) exec "$QUARK" "${base[@]}" --key-update "${urls[@]}" ;;
    multiconnect | handshakeloss | handshakecorruption)
        # One connection per request (the runner counts handshakes).
        for u in "${urls[@]}"; do "$QUARK" "${base[@]}" "$u"; done ;;
    resumption | zerortt)
        # The first connection fetches one file and stores the session ticket;
        # the second resumes with it (in 0-RTT for zerortt) for the rest.
        early=()
        if [ "$TESTCASE" = zerortt ]; then needs get --0rtt; early=(--0rtt); fi
        if ! knows get --session-file; then
            # Tickets in the process's memory only: `get --resume` makes both
            # connections; without it, `get --0rtt` primes a connection of its own.
            if knows get --resume; then
                exec "$QUARK" "${base[@]}" --resume "${early[@]}" "${urls[@]}"
            fi
            [ "$TESTCASE" = zerortt ] || needs get --resume
            exec "$QUARK" "${base[@]}" --0rtt "${urls[@]}"
        fi
        session=${SESSION_FILE:-$(mktemp -d)/session}
        "$QUARK" "${base[@]}" --session-file "$session" "${urls[0]}"
        [ ${#urls[@]} -gt 1 ] || exit 0
        exec "$QUARK" "${base[@]}" --session-file "$session" "${early[@]}" "${urls[@]:1}" ;;
    v2)
        # Starts in v1 (the default) and offers v2; the server upgrades it.
        needs get --quic-version
        exec "$QUARK" "${base[@]}" "${urls[@]}" ;;
    connectionmigration)
        needs serve --preferred-address
        exec "$QUARK" "${base[@]}" "${urls[@]}" ;;
    *) unsupported ;;
    esac
    ;;
*)
    echo "run_endpoint.sh: ROLE must be client or server (got '$ROLE')" >&2
    exit 1
    ;;
esac
