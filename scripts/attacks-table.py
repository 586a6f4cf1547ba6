#!/usr/bin/env python3
"""The table of scripts/attacks.sh's results, for BENCHMARKS.md:
scripts/attacks-table.py docs/results/<date>-attacks"""
import gzip
import json
import pathlib
import sys


def load(path):
    # docs/results keeps large files gzipped (FILE.json.gz).
    return json.load(gzip.open(path, "rt") if path.suffix == ".gz" else open(path))


out = pathlib.Path(sys.argv[1])
print("| attack | server RSS before → peak (MiB) | growth | legitimate 1 MB fetches, slowest | server closed with |")
print("|---|---|---|---|---|")
for path in sorted(out.glob("attack-*.json*")):
    for o in load(path):
        before, peak, _ = o["rss"]
        ok = [f["Ok"] for f in o["fetches"] if "Ok" in f]
        closes = ", ".join(f"{name} ×{n}" for name, n in o["report"]["closes"]) or "—"
        verdict = "" if not o["failures"] else " **FAIL**"
        print(f"| {o['attack']}{verdict} | {before / 2**20:.1f} → {peak / 2**20:.1f} | "
              f"{(peak - before) / 2**20:.1f} | {len(ok)}/{len(o['fetches'])}, "
              f"{max(ok, default=0) * 1000:.0f} ms | {closes} |")
idle = out / "idle.json"
if idle.exists():
    i = load(idle)
    print(f"\n{i['connections']} idle connections: {i['rss'][0] / 2**20:.1f} → "
          f"{i['rss'][1] / 2**20:.1f} MiB, {i['per_connection'] / 1024:.1f} KiB per connection")
