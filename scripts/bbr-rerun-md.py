#!/usr/bin/env python3
"""Repeated BBR cells as a table: quark-BBR and Linux TCP BBR per network,
goodput over all runs (Mbit/s) with the slowest and fastest run.

    scripts/bbr-rerun-md.py FILE.json[.gz]...   # from quark bench --runs N -p quic,tcp
"""
import gzip
import json
import sys


def load(path):
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        return json.load(f)


def cell(r):
    """'mean (slowest–fastest)' in Mbit/s, or — for a failed cell."""
    m = r.get("metrics")
    if r["status"] != "ok" or not m:
        return "—", None, 0
    per = m["payload_bytes"] / m["requests"] * 8 / 1e6
    lat = m["latency_s"]
    mean = m["goodput_bps"] / 1e6
    return f"{mean:.1f} ({per / lat['max']:.1f}–{per / lat['min']:.1f})", mean, m["requests"]


def main(paths):
    rows = {}
    for p in paths:
        for r in load(p)["results"]:
            rows.setdefault(r.get("net") or "?", {})[r["protocol"]] = cell(r)
    print("| network | runs | quark BBR | TCP BBR | quark ÷ TCP | quark ÷ link |")
    print("|---|---|---|---|---|---|")
    for net, c in rows.items():
        (q, qm, runs), (t, tm, _) = c.get("quic", ("—", None, 0)), c.get("tcp", ("—", None, 0))
        rate = float(net.rsplit("rate", 1)[1]) if "rate" in net else None
        ratio = f"{qm / tm:.2f}" if qm and tm else "—"
        share = f"{qm / rate * 100:.0f} %" if qm and rate else "—"
        print(f"| {net} | {runs} | {q} | {t} | {ratio} | {share} |")


if __name__ == "__main__":
    main(sys.argv[1:])
