#!/usr/bin/env python3
"""Medians of run.sh's results: quark's goodput, CPU per GB and req/s, each
also as a ratio to tcp+tls in the same run."""
import glob
import gzip
import json
import statistics


def load(path):
    """A results file, gzipped (`.json.gz`, as kept in the repository) or not."""
    return json.load(gzip.open(path, "rt") if path.endswith(".gz") else open(path))


def cell(path, proto):
    for r in load(path)["results"]:
        if r["protocol"] == proto and r["status"] == "ok":
            return r["metrics"]


for scenario, fields in [("goodput", ["goodput_bps", "cpu_s_per_gb"]), ("rps", ["requests_per_s", "cpu_s_per_1000_requests"])]:
    for build in ["base", "new"]:
        rows = []
        for path in sorted(glob.glob(f"{scenario}-{build}-*.json*")):
            q, t = cell(path, "quic"), cell(path, "tcp+tls")
            vals = []
            for f in fields:
                qv = q[f] if not isinstance(q[f], dict) else q[f]["total"]
                tv = t[f] if not isinstance(t[f], dict) else t[f]["total"]
                vals += [qv, qv / tv]
            rows.append(vals)
        med = [statistics.median(c) for c in zip(*rows)]
        print(f"{scenario:8} {build:5} n={len(rows)}  {fields[0]} {med[0]:.4g} (x{med[1]:.3f} tcp+tls)  {fields[1]} {med[2]:.4g} (x{med[3]:.3f} tcp+tls)")
