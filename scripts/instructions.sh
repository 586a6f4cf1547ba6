#!/usr/bin/env bash
# Instructions per request, counted by callgrind: repeatable to the instruction
# on a machine whose timings are not (a shared VM).
#
#   scripts/instructions.sh [PROTOS] [SIZE] [REQUESTS]
#   scripts/instructions.sh quic,quinn,tcp+tls 2048 4000
#   WORKLOAD=fresh scripts/instructions.sh quic,tcp+tls 2048 200
#
# CONNECTIONS=N spreads the requests over N connections (one request in
# flight on each) and BODY_LEN sets the request body (default SIZE): the rps
# scenario is CONNECTIONS=144 BODY_LEN=0 with SIZE 2000.
#
# WORKLOAD=fresh opens a new connection for every request (handshake included,
# SIZE-byte response, no body): instructions per connection. With it,
# NO_RESUMPTION=1 makes every connection a full handshake (no TLS tickets) and
# CERT_KEY=ecdsa|ed25519|rsa picks the certificate's key.
# For each protocol, runs the lab server and client (one connection, one request
# in flight, SIZE-byte request and response) with one side under callgrind,
# twice: REQUESTS and 2 x REQUESTS measured requests. The difference divided by
# REQUESTS is the per-request count, free of start-up and handshake. User space
# only: the kernel's share (system calls, TCP) is not counted. Needs valgrind and
# a release build (BIN, default target/release/quark; CERT_BIN makes the
# certificate when BIN predates `lab-cert`). KEEP=1 keeps the working directory
# and each run's callgrind profile (cg-PROTO-SIDE-REQUESTS.out) for
# callgrind_annotate.
#
# Each side's count comes with the part spent inside glibc's allocator
# (instr/alloc): that part depends on the heap's history and, for a workload
# that allocates per request (h3), moves by several hundred between runs of
# the same binary, so compare builds on the rest (instr - alloc).
#
# CACHE=1 also simulates the caches (32 KiB L1i and L1d, 8-way; 1 MiB L2) and
# prints, per request, instructions / L1i misses / L1d read misses / L1d write
# misses: how much distinct code and data a request runs through, which is what
# a request pays again when it starts with cold caches (after a sleep).
#
# FOOTPRINT=1 also records every instruction's count and, per side, prints the
# code a request runs on every pass (scripts/footprint.py): cache lines, by
# crate and by function.
set -euo pipefail
cd "$(dirname "$0")/.."

PROTOS=${1:-quic,quinn,tcp+tls}
SIZE=${2:-2048}
REQUESTS=${3:-4000}
BIN=${BIN:-target/release/quark}
PORT=${PORT:-47311}

command -v valgrind >/dev/null || { echo "error: valgrind is not installed" >&2; exit 1; }
[ -x "$BIN" ] || { echo "error: no $BIN (cargo build --release -p quark-cli)" >&2; exit 1; }

dir=$(mktemp -d /tmp/quark-instr.XXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$dir"' EXIT
"${CERT_BIN:-$BIN}" lab-cert --cert "$dir/cert.der" --key "$dir/key.der" \
    ${CERT_KEY:+--cert-key "$CERT_KEY"}

# Total instructions of one side for one run of `requests` measured requests.
count() {
    local proto=$1 side=$2 requests=$3
    local workload="\"type\":\"persistent\",\"connections\":${CONNECTIONS:-1},\"in_flight\":1,\"requests\":$requests,\"response_len\":$SIZE,\"body_len\":${BODY_LEN:-$SIZE},\"warmup\":500"
    if [ "${WORKLOAD:-}" = fresh ]; then
        workload="\"type\":\"fresh\",\"workers\":1,\"requests\":$requests,\"response_len\":$SIZE,\"body_len\":0,\"warmup\":50"
    fi
    local phases="[{\"label\":\"r\",\"workload\":{$workload}}]"
    local out="$dir/cg.out" sv=() cv=()
    local vg=(valgrind --tool=callgrind --callgrind-out-file="$out")
    [ -z "${FOOTPRINT:-}" ] || vg+=(--dump-instr=yes)
    if [ -n "${CACHE:-}" ]; then
        vg+=(--cache-sim=yes --I1=32768,8,64 --D1=32768,8,64 --LL=1048576,16,64)
    fi
    if [ "$side" = server ]; then sv=("${vg[@]}"); else cv=("${vg[@]}"); fi
    local common=(--proto "$proto" --cert "$dir/cert.der" --threads 1)
    [ -z "${NO_RESUMPTION:-}" ] || common+=(--no-resumption)
    rm -f "$out" "$dir/in"
    mkfifo "$dir/in"
    "${sv[@]}" "$BIN" lab-server "${common[@]}" --key "$dir/key.der" \
        --listen "127.0.0.1:$PORT" <"$dir/in" >"$dir/server.log" 2>&1 &
    local server=$!
    exec 3>"$dir/in"
    for _ in $(seq 100); do
        grep -q '"listening"' "$dir/server.log" && break
        sleep 0.2
    done
    # The client takes its commands on stdin and quits when it closes: keep it
    # open until the phase is done.
    {
        printf 'prepare\ngo\n'
        for _ in $(seq 3000); do
            grep -q '"event":"done"\|error' "$dir/client.log" 2>/dev/null && break
            sleep 0.2
        done
    } | "${cv[@]}" "$BIN" lab-client "${common[@]}" \
        --server "127.0.0.1:$PORT" --phases "$phases" >"$dir/client.log" 2>&1
    exec 3>&-
    wait "$server" || true
    grep -q "\"requests\":$requests" "$dir/client.log" ||
        { echo "error: $proto $side run failed: $(tail -c 300 "$dir/client.log")" >&2; exit 1; }
    [ -z "${KEEP:-}${FOOTPRINT:-}" ] || cp "$out" "$dir/cg-$proto-$side-$requests.out"
    # Totals in callgrind's event order: Ir, then with CACHE Dr Dw I1mr D1mr D1mw ...
    # Without CACHE: Ir, and the part of it inside glibc's allocator (malloc.c).
    callgrind_annotate --threshold=100 "$out" 2>/dev/null | awk '
        /PROGRAM TOTALS/ {
            gsub(/\([ 0-9.]*%\)/, ""); gsub(",", "")
            if (NF > 6) cache = $1 "," $4 "," $5 "," $6; else total = $1 }
        /malloc\.c:/ && !/=>/ { v = $1; gsub(",", "", v); alloc += v }
        END { if (cache != "") print cache; else print total "," alloc + 0 }'
}

unit=instr/alloc
[ -z "${CACHE:-}" ] || unit="Ir/I1m/D1mr/D1mw"
printf '%-8s %6s  %26s  %26s\n' protocol size "server $unit/req" "client $unit/req"
for proto in ${PROTOS//,/ }; do
    per=()
    for side in server client; do
        one=$(count "$proto" "$side" "$REQUESTS")
        two=$(count "$proto" "$side" $((2 * REQUESTS)))
        # Per request, field by field (one field, or four with CACHE).
        per+=($(paste -d' ' <(tr , '\n' <<<"$one") <(tr , '\n' <<<"$two") |
            awk -v n="$REQUESTS" '{ printf "%s%d", (NR > 1 ? "/" : ""), ($2 - $1) / n }'))
    done
    printf '%-8s %6s  %26s  %26s\n' "$proto" "$SIZE" "${per[0]}" "${per[1]}"
    if [ -n "${FOOTPRINT:-}" ]; then
        for side in server client; do
            echo "-- $proto $side"
            python3 scripts/footprint.py "$dir/cg-$proto-$side-$REQUESTS.out" \
                "$dir/cg-$proto-$side-$((2 * REQUESTS)).out" "$REQUESTS"
        done
    fi
done
