#!/usr/bin/env python3
# split.py [DIR]: quark's user and kernel CPU per GB, sender and receiver, medians over every run.
import glob, gzip, json, os, statistics, sys
d = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
for net in ["lo", "veth"]:
    for build in ["base", "main"]:
        v = {"su": [], "ss": [], "cu": [], "cs": []}
        for f in sorted(glob.glob(f"{d}/{net}-{build}-*.json.gz")):
            q = next(x for x in json.load(gzip.open(f))["results"] if x["protocol"] == "quic")
            for run in q["runs"]:
                gb = run["payload_bytes"] / 1e9
                v["su"].append(run["server"]["user_s"] / gb); v["ss"].append(run["server"]["sys_s"] / gb)
                v["cu"].append(run["client"]["user_s"] / gb); v["cs"].append(run["client"]["sys_s"] / gb)
        if not v["su"]:
            continue
        m = {k: statistics.median(x) for k, x in v.items()}
        print(f"{net:4} {build}: sender user {m['su']:.3f} sys {m['ss']:.3f} | receiver user {m['cu']:.3f} sys {m['cs']:.3f}")
