#!/bin/bash
# Persistent 2 KiB requests over quark's emulated link (30 ms RTT, 1 % random
# loss each way, two network namespaces): quark whose 1-RTT probes queue
# every packet in flight again and whose Initial probes carry the Handshake
# flight (NEW) against the build whose probes took the oldest packet in
# flight (OLD), each run beside tcp+tls, taking turns.
#   NEW=bin OLD=bin docs/results/2026-11-30-probes/run.sh [rounds]
set -euo pipefail
out=$(cd "$(dirname "$0")" && pwd)
rounds=${1:-3}
for r in $(seq 1 "$rounds"); do
    for b in new old; do
        bin=$NEW
        [ "$b" = old ] && bin=$OLD
        "$bin" bench -p quic,tcp+tls -s persistent --sizes 2KiB --requests 2000 \
            --net rtt30-loss1 --net-mode link --ref tcp+tls \
            --json "$out/$b-$r.json" > "$out/$b-$r.txt" 2>&1
        grep -E "^persistent +(quic|tcp\+tls) " "$out/$b-$r.txt" | sed "s/^/$b-$r /" || true
    done
done
