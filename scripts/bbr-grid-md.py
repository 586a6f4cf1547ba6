#!/usr/bin/env python3
"""The BBR grid's table from scripts/bbr-grid.sh's results.

    scripts/bbr-grid-md.py DIR     # DIR/{bbr,cubic}-rate{10,100,1000}.json[.gz]

One row per network: quark-BBR, Linux TCP BBR, quark-CUBIC, Linux TCP CUBIC
goodput in Mbit/s (`—` a cell that failed or timed out), quark-BBR ÷ TCP BBR,
and quark-BBR as a share of the link rate.
"""
import gzip
import json
import os
import re
import sys


def load(path):
    for p in (path, path + ".gz"):
        if os.path.exists(p):
            with (gzip.open(p, "rt") if p.endswith(".gz") else open(p)) as f:
                return json.load(f)
    return None


COLUMNS = [
    # header, keys tried in order ("quark-<file prefix>" / "tcp-<file prefix>")
    ("quark BBR", ["quark-bbr"]),
    ("TCP BBR", ["tcp-bbr", "tcp-bbr-before"]),
    ("quark CUBIC", ["quark-cubic"]),
    ("TCP CUBIC", ["tcp-cubic"]),
    ("quark bbr1 (v1)", ["quark-bbr1"]),
    ("quark BBR before", ["quark-bbr-before"]),
]


def main(d):
    cells = {}  # (net, "quark-<cc>" | "tcp-<cc>") -> Mbit/s, or None (failed)
    nets = []
    for name in sorted(os.listdir(d)):
        m = re.match(r"(.+)-rate(\d+)\.json(\.gz)?$", name)
        if not m:
            continue
        cc = m.group(1)
        for r in load(os.path.join(d, name))["results"]:
            net = r.get("net") or "?"
            if net not in nets:
                nets.append(net)
            key = (net, f"{'quark' if r['protocol'] == 'quic' else 'tcp'}-{cc}")
            ok = r["status"] == "ok" and r.get("metrics")
            cells[key] = r["metrics"]["goodput_bps"] / 1e6 if ok else None
    nets.sort(key=lambda n: [float(x) for x in re.findall(r"[\d.]+", n)][::-1][:1] + [float(x) for x in re.findall(r"[\d.]+", n)])
    fmt = lambda v: "—" if v is None else f"{v:.1f}"
    pick = lambda net, keys: next((cells[(net, k)] for k in keys if (net, k) in cells), None)
    print("| network | " + " | ".join(h for h, _ in COLUMNS) + " | quark BBR ÷ TCP BBR | quark BBR ÷ link |")
    print("|---" * (len(COLUMNS) + 3) + "|")
    for net in nets:
        row = [pick(net, keys) for _, keys in COLUMNS]
        qb, tb = row[0], row[1]
        ratio = f"{qb / tb:.2f}" if qb and tb else "—"
        m = re.search(r"rate(\d+)", net)
        link = f"{qb / float(m.group(1)) * 100:.0f} %" if qb and m else "—"
        print(f"| {net} | " + " | ".join(fmt(v) for v in row) + f" | {ratio} | {link} |")


if __name__ == "__main__":
    main(sys.argv[1])
