#!/usr/bin/env bash
# Where each protocol's CPU goes, per request, on the real machine: samples
# the lab's client and server with `perf record -e cpu-clock` (a timer, so no
# hardware counters are needed) and sorts the time into categories (key
# exchange, hashing, AEAD, copies, allocator, kernel, quark's protocol core,
# rustls, ...).
#
#   scripts/profile.sh [PROTOS] [SCENARIO] [SIZE] [REQUESTS]
#   scripts/profile.sh quic,tcp+tls ephemeral 2KiB 4000
#   scripts/profile.sh quic,tcp+tls persistent 2KiB 100000
#
# Each protocol runs twice, with REQUESTS and 2 x REQUESTS measured requests;
# the difference divided by REQUESTS is the per-request figure, free of
# start-up (as in scripts/instructions.sh). Client and server share CPU 0
# (`--pin 0,0`), so no time hides in waiting for another CPU. Unlike
# callgrind's counts this sees the code the CPU really runs: under valgrind,
# ring finds no SHA or ADX extensions and takes its slower generic paths,
# which inflates the handshake's share. The last rows repeat each run's CPU per
# request as the lab measured it (getrusage): a total far from them means a run
# was disturbed (the machine is shared), so run again. Needs perf and root (or
# kernel.perf_event_paranoid <= 0). KEEP=1 keeps the perf data.
set -euo pipefail
cd "$(dirname "$0")/.."

PROTOS=${1:-quic,tcp+tls}
SCENARIO=${2:-ephemeral}
SIZE=${3:-2KiB}
REQUESTS=${4:-4000}
BIN=${BIN:-target/release/quark}
FREQ=${FREQ:-5000}

command -v perf >/dev/null || { echo "error: perf is not installed" >&2; exit 1; }
[ -x "$BIN" ] || { echo "error: no $BIN (cargo build --release -p quark-cli)" >&2; exit 1; }

dir=$(mktemp -d /tmp/quark-profile.XXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$dir"' EXIT

args=()
for proto in ${PROTOS//,/ }; do
    for n in "$REQUESTS" $((2 * REQUESTS)); do
        out="$dir/$proto-$n.data"
        perf record -q -a -F "$FREQ" -e cpu-clock -o "$out" -- \
            "$BIN" bench -p "$proto" -s "$SCENARIO" --sizes "$SIZE" \
            --requests "$n" --warmup 100 --pin 0,0 --json "$dir/$proto-$n.json" \
            >"$dir/$proto-$n.log" 2>&1 ||
            { echo "error: $proto run failed: $(tail -c 300 "$dir/$proto-$n.log")" >&2; exit 1; }
    done
    args+=("$proto" "$dir/$proto-$REQUESTS.data" "$dir/$proto-$((2 * REQUESTS)).data")
done
python3 scripts/perf-categories.py "$REQUESTS" "$FREQ" "${args[@]}"
[ -z "${KEEP:-}" ] || echo "perf data kept in $dir"
