#!/usr/bin/env bash
# The simulation tests on many seeds: every quark-proto integration test binary
# (release build) runs once per seed with SIM_SEED set, so each test's network
# (loss, reordering, jitter, timing) and each connection's random choices
# differ from the default seed CI runs. A failure prints the seed and the
# test; replay it with `SIM_SEED=<seed> cargo test --release -p quark-proto
# --test <file> <name>`.
#
#   scripts/seed-soak.sh FIRST COUNT          # seeds FIRST .. FIRST+COUNT-1
#   scripts/seed-soak.sh 2000 300 > soak.log  # about 25 minutes on 2 cores
#
# Prints one line per binary and seed ("ok" or "FAIL" with the failing tests
# and their messages) and a summary; exits non-zero when anything failed.
set -euo pipefail
cd "$(dirname "$0")/.."

first=${1:?first seed}
count=${2:?how many seeds}

mkdir -p target
cargo test --release -p quark-proto --tests --no-run --message-format=json 2>/dev/null \
    | python3 scripts/test-binaries.py quark-proto \
    | awk '$2 !~ /quark_proto-/ {print $2}' > target/seed-soak-binaries.txt
[ -s target/seed-soak-binaries.txt ] || { echo "error: no test binaries" >&2; exit 1; }

failed=0
runs=0
for ((seed = first; seed < first + count; seed++)); do
    while read -r exe; do
        name=$(basename "$exe")
        name=${name%-*}
        runs=$((runs + 1))
        if out=$(cd crates/quark-proto && SIM_SEED=$seed timeout -k 10 600 "$exe" 2>&1 < /dev/null); then
            echo "ok   seed=$seed $name"
        else
            failed=$((failed + 1))
            echo "FAIL seed=$seed $name"
            grep -E -A1 "^test .* FAILED$|panicked at" <<< "$out" | sed 's/^/     /' | head -20
        fi
    done < target/seed-soak-binaries.txt
done
echo "$runs runs ($count seeds), $failed failed"
[ "$failed" = 0 ]
