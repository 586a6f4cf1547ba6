#!/usr/bin/env python3
"""Markdown tables from `quark bench --json` results (schema quark-lab/results v1).

    scripts/bench-md.py cells FILE.json[.gz]      # one row per cell
    scripts/bench-md.py pivot FILE.json METRIC   # label x protocol (goodput|cpu|rps|p99)
    scripts/bench-md.py breakdown FILE.json      # quark's µs/packet per component
"""
import gzip
import json
import sys


def load(path):
    # docs/results keeps large files gzipped (FILE.json.gz).
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        return json.load(f)


def ok(report):
    return [r for r in report["results"] if r["status"] == "ok" and r.get("metrics")]


def gbps(m):
    g = m["goodput_bps"]
    return f"{g / 1e9:.2f} Gbit/s" if g >= 1e9 else f"{g / 1e6:.0f} Mbit/s"


def secs(s):
    return f"{s * 1e6:.0f} µs" if s < 1e-2 else f"{s * 1e3:.1f} ms"


def cpu_gb(m):
    c = m.get("cpu_s_per_gb") or {}
    return f'{c["total"]:.2f}' if c.get("total") is not None else "-"


def cpu_kreq(m):
    c = m.get("cpu_s_per_1000_requests") or {}
    return f'{c["total"]:.3f}' if c.get("total") is not None else "-"


def cells(report):
    print("| scenario | size / network | protocol | goodput | req/s | p50 | p99 | CPU s/GB | CPU s/1k req |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in ok(report):
        m = r["metrics"]
        lat = m["latency_s"]
        print(f'| {r["scenario"]} | {r["label"]} | {r["protocol"]} | {gbps(m)} | {m["requests_per_s"]:.0f} '
              f'| {secs(lat["p50"])} | {secs(lat["p99"])} | {cpu_gb(m)} | {cpu_kreq(m)} |')


def pivot(report, metric):
    rows, protos, table = [], [], {}
    for r in ok(report):
        key = (r["scenario"], r["label"])
        if key not in rows:
            rows.append(key)
        if r["protocol"] not in protos:
            protos.append(r["protocol"])
        m = r["metrics"]
        table[(key, r["protocol"])] = {
            "goodput": gbps(m),
            "cpu": cpu_gb(m),
            "rps": f'{m["requests_per_s"]:.0f}',
            "p99": secs(m["latency_s"]["p99"]),
            "both": f'{gbps(m)} · {cpu_gb(m)}',
        }[metric]
    print("| scenario | size / network | " + " | ".join(protos) + " |")
    print("|---|---|" + "---|" * len(protos))
    for key in rows:
        print(f"| {key[0]} | {key[1]} | " + " | ".join(table.get((key, p), "-") for p in protos) + " |")


def breakdown(report):
    print("| cell | side | crypto | sendmsg | recvmsg | ACK | remaining | total µs/packet |")
    print("|---|---|---|---|---|---|---|---|")
    for r in ok(report):
        b = r["metrics"].get("breakdown")
        if not b:
            continue
        for side in ("server", "client"):
            items = b.get(side) or []
            vals = [i["ns"] / 1000 for i in items]
            print(f'| {r["scenario"]} {r["label"]} | {side} | ' + " | ".join(f"{v:.2f}" for v in vals)
                  + f" | {sum(vals):.2f} |")


if __name__ == "__main__":
    what, path = sys.argv[1], sys.argv[2]
    rep = load(path)
    if what == "cells":
        cells(rep)
    elif what == "pivot":
        pivot(rep, sys.argv[3])
    elif what == "breakdown":
        breakdown(rep)
    else:
        sys.exit(f"unknown table '{what}'")
