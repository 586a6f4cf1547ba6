#!/usr/bin/env bash
# Every attack class of `quark probe` at full size against a release build of
# `quark serve` (default flags) running under a 1 GiB memory cap, then memory
# per idle connection at 10 000 connections. The figures go in BENCHMARKS.md
# ("Under attack"). CI runs the quick form (crates/quark-cli/tests/probe.rs).
#
#   scripts/attacks.sh [OUT_DIR]        # default docs/results/<date>-attacks
#
# Needs root for the memory cap (cgroup v1 or v2); without it the server runs
# uncapped and the script says so. Attacks come from 127.0.0.2 onwards, the
# legitimate client from 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/.."

out=${1:-docs/results/$(date +%F)-attacks}
mkdir -p "$out"
[ -n "${NO_BUILD:-}" ] || cargo build --release -p quark-cli
quark=target/release/quark
www=$(mktemp -d)
trap 'rm -rf "$www"; [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null; true' EXIT
head -c 1048576 /dev/urandom > "$www/probe-1M.bin"
head -c 16777216 /dev/urandom > "$www/probe-16M.bin"

# A cgroup with a 1 GiB memory limit for the server, if we may make one.
cap=""
if [ "$(id -u)" = 0 ]; then
    if [ -d /sys/fs/cgroup/memory ]; then
        cap=/sys/fs/cgroup/memory/quark-attacks
        mkdir -p "$cap"
        echo $((1 << 30)) > "$cap/memory.limit_in_bytes"
    elif [ -f /sys/fs/cgroup/cgroup.controllers ]; then
        cap=/sys/fs/cgroup/quark-attacks
        mkdir -p "$cap"
        echo $((1 << 30)) > "$cap/memory.max"
    fi
fi
[ -z "$cap" ] && echo "warning: no memory cap (not root, or no cgroup memory controller)" >&2

start_server() {
    local port=$1 mode=${2:-}
    if [ -n "$cap" ]; then
        sh -c "echo \$\$ > $cap/cgroup.procs && exec $quark serve $mode --root $www --listen 127.0.0.1:$port" 2>"$www/serve-$port.log" &
    else
        "$quark" serve $mode --root "$www" --listen "127.0.0.1:$port" 2>"$www/serve-$port.log" &
    fi
    pid=$!
    for _ in $(seq 50); do
        grep -q "^serving " "$www/serve-$port.log" 2>/dev/null && return 0
        sleep 0.1
    done
    echo "error: quark serve did not start" >&2
    exit 1
}

# Each class against a fresh server, so its peak is measured from the same
# baseline and nothing another class left behind counts against it.
status=0
port=4433
: > "$out/attacks.txt"
for attack in $("$quark" probe --list | awk '{print $1}'); do
    start_server $port
    "$quark" probe --full --target 127.0.0.1:$port --server-pid "$pid" --attacks "$attack" \
        --json "$out/attack-$attack.json" | tee -a "$out/attacks.txt" || status=$?
    if ! kill -0 "$pid" 2>/dev/null; then
        echo "server DIED during $attack" | tee -a "$out/attacks.txt"
        status=1
    elif [ "$attack" = slow-loris ]; then
        # What the attack left open idles out (30 s); freed memory goes back
        # to the system (quark serve trims the heap every 5 s).
        sleep 40
        echo "after $attack, 40 s later: RSS $(awk '/VmRSS/ {print $2, $3}' /proc/$pid/status)" \
            | tee -a "$out/attacks.txt"
    fi
    kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true
    port=$((port + 1))
done

# The HTTP/3 classes against `quark serve --h3`.
for attack in $("$quark" probe --list --h3 | awk '{print $1}' | grep -v -x -F "$("$quark" probe --list | awk '{print $1}')"); do
    start_server $port --h3
    "$quark" probe --full --h3 --target 127.0.0.1:$port --server-pid "$pid" --attacks "$attack" \
        --json "$out/attack-$attack.json" | tee -a "$out/attacks.txt" || status=$?
    kill -0 "$pid" 2>/dev/null || { echo "server DIED during $attack" | tee -a "$out/attacks.txt"; status=1; }
    kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true
    port=$((port + 1))
done

# Memory per idle connection, on a fresh server.
start_server $port
"$quark" probe --target 127.0.0.1:$port --server-pid "$pid" --idle-connections 10000 \
    --json "$out/idle.json" | tee "$out/idle.txt"
kill "$pid"; wait "$pid" 2>/dev/null || true
pid=""
[ -n "$cap" ] && rmdir "$cap" 2>/dev/null || true
python3 scripts/attacks-table.py "$out" | tee "$out/table.md"
exit $status
