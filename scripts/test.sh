#!/usr/bin/env bash
# The test suite: unit, simulation, loopback, lab and interop tests, then the
# tests that move real datagrams once more with GSO and GRO switched off, and
# (as root) the loopback suite once more over AF_XDP.
# Installs the third-party QUIC peers first (aioquic from PyPI, quic-go from the
# Go proxy; quinn comes from crates.io with the build).
set -euo pipefail
cd "$(dirname "$0")/.."

bash interop/setup.sh
# The lab's quic-go program (lab/quic-go, built by setup.sh): vet and unit tests.
(cd lab/quic-go && export GOTOOLCHAIN=local GOFLAGS=-mod=readonly && go vet . && go test .)
# Everything the tests need, built once: the test binaries, the examples,
# the `quark` and `quinn-hq` binaries the interop and CLI tests run, and
# libquark for the C examples. Tests that would otherwise `cargo build -p`
# what they run (with other features, so a rebuild) take it as built.
cargo test --workspace --no-run
export QUARK_TEST_PREBUILT=1

# A test that hangs fails its pass after this long instead of eating the CI's
# whole budget (the full suite takes under 10 minutes on 2 cores).
guard() { timeout -k 30 "$1" "${@:2}"; }

guard 2400 cargo test --workspace "$@"

# Again without GSO/GRO: every crate whose tests move real datagrams (the
# lab's children inherit the switches); quark-proto's run in a simulated
# network (they run again on other seeds below) and quark-udp's test GSO, GRO
# and their fallbacks directly.
# The first pass's own test binaries run again: `cargo test -p` of these
# crates alone would unify dependency features differently and rebuild
# quark-lab and quark-cli (over a minute on 2 cores). Each runs in its crate's
# directory, as cargo runs it; doctests are left to the first pass.
echo "== again without UDP GSO/GRO" >&2
cargo test --workspace --no-run --message-format=json "$@" \
    | python3 scripts/test-binaries.py quark quark-interop quark-lab quark-cli quark-proto \
    > target/rerun-binaries.txt
# Runs, from that list, the binaries whose "crate-dir/name" matches the
# (extended) glob $1, with the environment settings $2...; counts them in
# $ran. Not a command substitution: that would drop `set -e` and hide a
# failing test.
shopt -s extglob
rerun() {
    local pattern=$1 dir exe
    shift
    ran=0
    while read -r dir exe; do
        # shellcheck disable=SC2254 # the pattern is a glob on purpose
        case "$dir/$(basename "$exe")" in
        $pattern)
            echo "     Running $exe" >&2
            (cd "$dir" && env "$@" timeout -k 30 600 "$exe" < /dev/null)
            ran=$((ran + 1))
            ;;
        esac
    done < target/rerun-binaries.txt
}
rerun '!(*/crates/quark-proto/*)' QUARK_NO_GSO=1 QUARK_NO_GRO=1
[ "$ran" -gt 0 ] || { echo "error: no test binaries for the pass without GSO/GRO" >&2; exit 1; }

# The simulation tests on two more seeds (each network and every random
# choice differ; deterministic, so a failure here replays with SIM_SEED).
# The full form, hundreds of seeds: scripts/seed-soak.sh.
for seed in 3003 3004; do
    echo "== the simulation tests again with SIM_SEED=$seed" >&2
    rerun '*/crates/quark-proto/!(quark_proto-*)' SIM_SEED=$seed
    [ "$ran" -gt 30 ] || { echo "error: $ran simulation test binaries found" >&2; exit 1; }
done

if [ "$(id -u)" = 0 ]; then
    echo "== the loopback suite again over AF_XDP (two namespaces joined by veth)" >&2
    # quark's loopback, busy_poll and workers tests, from the same list.
    rerun '*/crates/quark/@(loopback|busy_poll|workers)-*' QUARK_TEST_XDP=1
    [ "$ran" = 3 ] || { echo "error: $ran of quark's 3 AF_XDP test binaries found" >&2; exit 1; }
else
    echo "== not root: the AF_XDP pass of the loopback suite is skipped" >&2
fi
