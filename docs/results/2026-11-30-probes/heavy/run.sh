#!/bin/bash
# Persistent 16 KiB answers (about 14 packets) over quark's emulated link,
# 30 ms RTT and 5 % random loss each way: NEW against OLD, each beside
# tcp+tls, taking turns (tail-loss/run.sh with other sizes).
#   NEW=bin OLD=bin docs/results/2026-11-30-probes/heavy/run.sh [rounds]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
OUT=$here SIZE=16KiB REQUESTS=1000 NET=rtt30-loss5 \
    exec "$here/../../2026-11-30-tail-loss/run.sh" "$@"
