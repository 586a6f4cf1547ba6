#!/bin/sh
# RSS per idle established connection at N connections: start `quark serve`
# (default flags) with binary $1, hold N idle connections with `quark probe`
# (binary $2, the client side), print the result. As scripts/attacks.sh does.
# Usage: [SERVE_ARGS="--max-memory 2GiB"] measure.sh SERVER_BIN PROBE_BIN [N] [PORT]
# (past 50 000 connections, raise the server's memory budget: at its default
# of 512 MiB it refuses new connections near 60 000.)
set -eu
server=$1 probe=$2 n=${3:-10000} port=${4:-4700}
www=$(mktemp -d)
echo hello > "$www/index.html"
# shellcheck disable=SC2086 # SERVE_ARGS is a list of flags
"$server" serve --root "$www" --listen "127.0.0.1:$port" ${SERVE_ARGS:-} 2>"$www/serve.log" &
pid=$!
for _ in $(seq 100); do
    grep -q "^serving " "$www/serve.log" 2>/dev/null && break
    sleep 0.1
done
"$probe" probe --target "127.0.0.1:$port" --server-pid "$pid" --idle-connections "$n"
kill "$pid"; wait "$pid" 2>/dev/null || true
rm -rf "$www"
