#!/usr/bin/env python3
"""Splits callgrind profiles of one lab side into the handshake's parts.

    scripts/handshake_split.py ONE.out TWO.out N

ONE.out and TWO.out are callgrind profiles of the same side for two runs
whose difference is N connections (scripts/instructions.sh KEEP=1
WORKLOAD=fresh keeps them as cg-PROTO-SIDE-REQUESTS.out): every function's
own (exclusive) instructions, difference divided by N, summed by category.
Categories are matched on the function's name, first match wins; the crypto
ones are ring's primitives, which TCP+TLS and QUIC share.
"""

import re
import subprocess
import sys

CATEGORIES = [
    # ring names its Ed25519 internals x25519_*: those first.
    ("Ed25519", r"ed25519|sc_reduce|sc_muladd|ge_double_scalarmult"),
    ("x25519 key exchange", r"x25519|curve25519|fiat_25519"),
    ("P-256 (ECDSA sign/verify)", r"p256|nistz256|ecdsa|ec::suite_b|p384"),
    ("RSA / bignum", r"rsa|bn_|LIMBS_|limbs_|bigint|_mont|mont5|mul4x_|sqr8x"),
    ("SHA-2 (transcript, HKDF, HMAC)", r"sha256|sha512|sha2|hmac|hkdf|digest|block_data_order"),
    ("AEAD + header protection", r"aes|gcm|ghash|chacha|poly1305|aead"),
    ("allocator", r"malloc|free|realloc|calloc|_int_|tcache|cfree|memalign"),
    ("memcpy/memset/memcmp", r"memcpy|memmove|memset|memcmp|bcmp|strlen"),
    ("webpki + der parsing", r"webpki|untrusted|der::|x509|pki_types"),
    ("rustls (state machine, codec)", r"rustls::"),
    ("quark-proto (packets, frames, state)", r"quark_proto::"),
    ("quark runtime + UDP", r"quark::|quark_udp::"),
    ("tokio / mio", r"tokio::|mio::"),
    ("lab (adapter, hq, workload)", r"quark_lab::|quark_cli::"),
    ("kernel entry (syscall wrappers)", r"syscall|sendmsg|recvmsg|epoll|__GI_|clock_gettime|__libc"),
]


def functions(path):
    out = subprocess.run(
        ["callgrind_annotate", "--threshold=100", "--inclusive=no", "--auto=no", path],
        capture_output=True, text=True, check=True).stdout
    costs = {}
    for line in out.splitlines():
        m = re.match(r"\s*([\d,]+)\s+\([ \d.]+%\)\s+(.*)$", line)
        if not m or "PROGRAM TOTALS" in line:
            continue
        name = m.group(2)
        costs[name] = costs.get(name, 0) + int(m.group(1).replace(",", ""))
    return costs


def main():
    one, two, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    a, b = functions(one), functions(two)
    per = {k: (b.get(k, 0) - a.get(k, 0)) / n for k in set(a) | set(b)}
    total = sum(per.values())
    sums = {c: 0.0 for c, _ in CATEGORIES}
    sums["other"] = 0.0
    top_other = []
    for name, v in per.items():
        for c, pat in CATEGORIES:
            if re.search(pat, name, re.I):
                sums[c] += v
                break
        else:
            sums["other"] += v
            top_other.append((v, name))
    print(f"{'part':40} {'instr/conn':>12} {'share':>7}")
    for c, v in sorted(sums.items(), key=lambda kv: -kv[1]):
        print(f"{c:40} {v:12.0f} {100 * v / total:6.1f}%")
    print(f"{'total':40} {total:12.0f}")
    if "-v" in sys.argv:
        for v, name in sorted(top_other, reverse=True)[:15]:
            print(f"  other: {v:9.0f} {name[:110]}")


if __name__ == "__main__":
    main()
