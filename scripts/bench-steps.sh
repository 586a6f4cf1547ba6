#!/usr/bin/env bash
# The fast-path steps of issue #5, measured in one go with one build: each
# optimisation switched on in turn, with quark's per-packet CPU breakdown
# (thesis tables 2, 4, 7: crypto, sendmsg, recvmsg, ACK handling, remaining).
#
#   scripts/bench-steps.sh [OUT_DIR] [SIZE]     (defaults: bench-out/steps, 200MB)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench-out/steps}
size=${2:-200MB}
mkdir -p "$out"
cargo build --release -p quark-cli >&2
quark=./target/release/quark

run() { # name, env...
    local name=$1; shift
    echo "step: $name" >&2
    env "$@" "$quark" bench -p quic,tcp+tls,quinn -s goodput --sizes "$size" --runs 3 --warmup 1 \
        --json "$out/$name.json" >"$out/$name.txt" 2>&1 || true
}

run 1-baseline  QUARK_NO_GSO=1 QUARK_NO_GRO=1 QUARK_TUNE=pmtud=0,ackfreq=0
run 2-gso-gro   QUARK_TUNE=pmtud=0,ackfreq=0
run 3-ackfreq   QUARK_TUNE=pmtud=0
run 4-pmtud     QUARK_TUNE=

python3 - "$out" <<'PY'
import json, sys, glob, os
out = sys.argv[1]
print("| step | quic goodput | quic CPU s/GB | tcp+tls CPU s/GB | quinn CPU s/GB | quic server µs/packet: crypto / sendmsg / recvmsg / ack / remaining | client µs/packet: crypto / sendmsg / recvmsg / ack / remaining |")
print("|---|---|---|---|---|---|---|")
for path in sorted(glob.glob(os.path.join(out, "*.json"))):
    d = json.load(open(path))
    cells = {r["protocol"]: r for r in d["results"] if r["status"] == "ok"}
    def cpu_gb(p):
        r = cells.get(p)
        if not r: return "-"
        m = r["metrics"]; c, s = m["client"], m["server"]
        return f'{(c["user_s"]+c["sys_s"]+s["user_s"]+s["sys_s"])/(m["payload_bytes"]/1e9):.2f}'
    q = cells.get("quic")
    if not q: continue
    m = q["metrics"]
    b = m.get("breakdown") or {}
    def side(name):
        items = b.get(name) or []
        return " / ".join(f'{i["ns"]/1000:.2f}' for i in items) or "-"
    name = os.path.basename(path)[:-5]
    print(f'| {name} | {m["goodput_bps"]/1e9:.2f} Gbit/s | {cpu_gb("quic")} | {cpu_gb("tcp+tls")} | {cpu_gb("quinn")} | {side("server")} | {side("client")} |')
PY
