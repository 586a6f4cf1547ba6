#!/bin/bash
# Persistent 16 KiB answers (about 14 packets) over quark's emulated link,
# 30 ms RTT and 5 % random loss each way: NEW against OLD, each beside
# tcp+tls, taking turns.
#   NEW=bin OLD=bin docs/results/2026-11-30-probes/heavy/run.sh OUTDIR ROUNDS
set -euo pipefail
out=$1; rounds=$2
for r in $(seq 1 "$rounds"); do
    for b in new old; do
        bin=$NEW
        [ "$b" = old ] && bin=$OLD
        "$bin" bench -p quic,tcp+tls -s persistent --sizes 16KiB --requests 1000 \
            --net rtt30-loss5 --net-mode link --ref tcp+tls \
            --json "$out/$b-$r.json" > "$out/$b-$r.txt" 2>&1
        grep -E "^persistent +(quic|tcp\+tls) " "$out/$b-$r.txt" | sed "s/^/$b-$r /" || true
    done
done
