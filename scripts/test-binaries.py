#!/usr/bin/env python3
"""Reads `cargo test --no-run --message-format=json` on stdin and prints, for
each test binary of the packages named as arguments, its crate directory and
its path (one binary per line, in cargo's order)."""
import json
import os
import sys

wanted = set(sys.argv[1:])
for line in sys.stdin:
    try:
        msg = json.loads(line)
    except json.JSONDecodeError:
        continue
    if msg.get("reason") != "compiler-artifact" or not msg.get("executable"):
        continue
    if not msg.get("profile", {}).get("test"):
        continue
    # package_id: "path+file:///…/crates/quark#0.1.0" (or "…#name@version").
    manifest = msg["manifest_path"]
    pkg = os.path.basename(os.path.dirname(manifest))
    with open(manifest) as f:
        for row in f:
            if row.startswith("name = "):
                pkg = row.split('"')[1]
                break
    if pkg in wanted:
        print(os.path.dirname(manifest), msg["executable"])
