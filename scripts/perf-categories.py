#!/usr/bin/env python3
"""Per-request CPU by category from pairs of `perf record -e cpu-clock` runs.

    perf-categories.py REQUESTS FREQ PROTO SHORT.data LONG.data [PROTO ...]

For each protocol, LONG ran REQUESTS more requests than SHORT; the difference
of their samples, divided by REQUESTS, is the time per request. Only the lab's
processes (command name `quark`) count; idle is left out. Prints a table of
categories (µs per request, client and server together) and each protocol's
largest symbols. Used by scripts/profile.sh.
"""

import collections
import json
import os
import re
import subprocess
import sys

# First match wins: (category, regular expression on the symbol name).
CATEGORIES = [
    ("key exchange, signatures", r"x25519|curve25519|^fe_|^fe4_|^ge_|p256|nistz|ecp_|^bn_|ecdsa|rsa|mont"),
    ("hashing, HMAC, HKDF", r"sha256|sha512|sha1_|hmac|hkdf|digest"),
    ("AEAD, header protection", r"aes|gcm|ghash|chacha|poly1305"),
    ("copies", r"memmove|memcpy"),
    ("zeroing", r"memset"),
    ("allocator", r"^(malloc|free|cfree|realloc|calloc|_int_malloc|_int_free|_int_realloc|malloc_consolidate|unlink_chunk|tcache|__libc_malloc|__libc_free|posix_memalign|_mid_memalign|alloc_perturb)"),
    ("clock reads", r"clock_gettime|Timespec"),
    ("quark protocol core", r"quark_proto::"),
    ("quark HTTP/3, QPACK", r"quark_h3::|quark_qpack::"),
    ("http types (http crate)", r"^<?http::|^core::ptr::drop_in_place<http::"),
    ("quark datagram I/O", r"quark_udp::"),
    ("quark runtime glue", r"quark::|quark_lab::"),
    ("quinn, s2n-quic (peers)", r"quinn|s2n_quic|s2n_codec"),
    ("rustls", r"rustls|webpki"),
    ("tokio", r"tokio|mio::"),
]
IDLE = re.compile(r"safe_halt|default_idle|cpuidle|do_idle|poll_idle|acpi_idle")


def category(dso, sym):
    if dso.startswith("[kernel"):
        return "kernel"
    for name, pattern in CATEGORIES:
        if re.search(pattern, sym):
            return name
    return "other"


def samples(path):
    """Samples per (dso, symbol) of the lab's processes."""
    out = subprocess.run(
        ["perf", "report", "-i", path, "--comms", "quark", "--no-children",
         "--sort", "dso,symbol", "-F", "sample,dso,sym", "--stdio", "-q", "-g", "none"],
        capture_output=True, text=True, check=True,
    ).stdout
    counts = collections.Counter()
    for line in out.splitlines():
        m = re.match(r"\s*(\d+)\s+(\S+)\s+\[.\]\s+(.*?)\s*$", line)
        if m and not IDLE.search(m.group(3)):
            counts[(m.group(2), m.group(3))] += int(m.group(1))
    return counts


def main():
    requests, freq = int(sys.argv[1]), float(sys.argv[2])
    rest = sys.argv[3:]
    if len(rest) % 3 or not rest:
        sys.exit("usage: perf-categories.py REQUESTS FREQ PROTO SHORT.data LONG.data ...")
    us_per_sample = 1e6 / freq / requests
    protos, cats, syms = [], {}, {}
    for i in range(0, len(rest), 3):
        proto, short, long = rest[i:i + 3]
        a, b = samples(short), samples(long)
        per = {k: (b[k] - a[k]) * us_per_sample for k in set(a) | set(b)}
        c = collections.Counter()
        for (dso, sym), v in per.items():
            c[category(dso, sym)] += v
        protos.append(proto)
        cats[proto] = c
        syms[proto] = per
    names = sorted({k for c in cats.values() for k in c}, key=lambda k: -cats[protos[0]][k])
    print("µs per request (client + server, one CPU), from perf cpu-clock samples")
    print("%-28s" % "category" + "".join("%12s" % p for p in protos))
    for n in names:
        print("%-28s" % n + "".join("%12.1f" % cats[p][n] for p in protos))
    print("%-28s" % "total" + "".join("%12.1f" % sum(cats[p].values()) for p in protos))
    # The lab's own CPU figure for each run (getrusage), when its JSON is there.
    for label, k in (("lab CPU, short run", 1), ("lab CPU, long run", 2)):
        row = []
        for i in range(0, len(rest), 3):
            path = os.path.splitext(rest[i + k])[0] + ".json"
            try:
                cells = json.load(open(path))["results"]
                us = sum(c["metrics"]["cpu_s_per_1000_requests"]["total"] for c in cells) * 1e3
                row.append("%12.1f" % us)
            except (OSError, KeyError, ValueError, IndexError):
                row.append("%12s" % "-")
        print("%-28s" % label + "".join(row))
    for p in protos:
        print("\n%s: largest symbols (µs per request)" % p)
        for (dso, sym), v in sorted(syms[p].items(), key=lambda kv: -kv[1])[:12]:
            print("%8.2f  %s" % (v, sym[:100]))


if __name__ == "__main__":
    main()
