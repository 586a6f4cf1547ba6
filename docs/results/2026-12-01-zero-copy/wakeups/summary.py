#!/usr/bin/env python3
"""Medians over the rounds of run.sh (its outputs in perf.tar.gz): per side
and build, each event per GB (1 GB per run), and main over base."""
import statistics as st, tarfile

RUNS = tarfile.open('perf.tar.gz')

def load(name):
    out = {}
    for line in RUNS.extractfile(name).read().decode().splitlines(True):
        f = line.strip().split(',')
        if len(f) > 2 and f[0] and not line.startswith('#'):
            out[f[2]] = float(f[0])
    return out

rows = {}
for p in RUNS.getnames():
    build, side, _ = p[:-5].split('-')
    for k, v in load(p).items():
        rows.setdefault((side, k), {}).setdefault(build, []).append(v)
print(f"{'side':7} {'event (per GB)':32} {'base':>10} {'main':>10} {'main/base':>9}")
for (side, k), v in sorted(rows.items()):
    b, m = st.median(v['base']), st.median(v['main'])
    print(f"{side:7} {k:32} {b:10.0f} {m:10.0f} {m / b if b else 0:9.3f}")
print(f"rounds: {len(rows[('server', 'task-clock')]['base'])} (task-clock in ms)")
