#!/bin/bash
# Persistent 2 KiB requests over quark's emulated link (30 ms RTT, 1 % random
# loss each way): quark whose 1-RTT probes queue every packet in flight again
# (NEW) against the build whose probes took the oldest packet in flight
# (OLD), each run beside tcp+tls, taking turns. The same runs as tail-loss.
#   NEW=bin OLD=bin docs/results/2026-11-30-probes/run.sh [rounds]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
OUT=$here exec "$here/../2026-11-30-tail-loss/run.sh" "$@"
