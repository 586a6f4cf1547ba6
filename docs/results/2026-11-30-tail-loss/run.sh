#!/bin/bash
# Persistent 2 KiB requests over quark's emulated link (30 ms RTT, 1 % random
# loss each way, two network namespaces): quark whose 1-RTT probes carry the
# oldest unacknowledged stream data (NEW) against the build before, whose
# probes were bare PINGs (OLD), each run beside tcp+tls, taking turns.
#   NEW=bin OLD=bin docs/results/2026-11-30-tail-loss/run.sh [rounds]
# OUT=dir: write the results there instead of beside this script; SIZE,
# REQUESTS and NET change the answer size, request count and network.
set -euo pipefail
out=${OUT:-$(cd "$(dirname "$0")" && pwd)}
size=${SIZE:-2KiB}
requests=${REQUESTS:-2000}
net=${NET:-rtt30-loss1}
rounds=${1:-3}
for r in $(seq 1 "$rounds"); do
    for b in new old; do
        bin=$NEW
        [ "$b" = old ] && bin=$OLD
        "$bin" bench -p quic,tcp+tls -s persistent --sizes "$size" --requests "$requests" \
            --net "$net" --net-mode link --ref tcp+tls \
            --json "$out/$b-$r.json" > "$out/$b-$r.txt" 2>&1
        grep -E "^persistent +(quic|tcp\+tls) " "$out/$b-$r.txt" | sed "s/^/$b-$r /" || true
    done
done
