#!/usr/bin/env python3
# summary.py [DIR]: per build (base, main) and network (lo, veth), quic's CPU s/GB
# (client = receiver, server = sender, total) and the per-round ratio to the
# reference (tcp on loopback, nginx over veth): medians and ranges of every run.
import glob, gzip, json, os, statistics, sys
d = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
def med(xs): return f"{statistics.median(xs):.3f} ({min(xs):.3f}-{max(xs):.3f})"
for net in ["lo", "veth"]:
    for build in ["base", "main"]:
        c, s, t, r = [], [], [], []
        for f in sorted(glob.glob(f"{d}/{net}-{build}-*.json.gz")):
            res = json.load(gzip.open(f))["results"]
            q = next(x for x in res if x["protocol"] == "quic")
            o = next(x for x in res if x["protocol"] != "quic")
            for a, b in zip(q["runs"], o["runs"]):
                g = a["cpu_s_per_gb"]
                c.append(g["client"]); s.append(g["server"]); t.append(g["total"])
                r.append(g["total"] / b["cpu_s_per_gb"]["total"])
        if not t:
            continue
        print(f"{net:4} {build}: n={len(t)} receiver {med(c)} sender {med(s)} total {med(t)} ÷ {o['protocol']} {med(r)}")
