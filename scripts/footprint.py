#!/usr/bin/env python3
"""Hot code per request: which instructions a request runs, and how many
64-byte cache lines they occupy.

    scripts/footprint.py SHORT.out LONG.out REQUESTS [FUNCTION_REGEX]

SHORT.out and LONG.out are callgrind profiles (`--dump-instr=yes`) of one side
of the same workload, LONG with REQUESTS more requests than SHORT (what
`FOOTPRINT=1 scripts/instructions.sh` writes). An instruction whose count grows
by at least half the extra requests runs on every request; the lines holding
such instructions are the code a request pulls into the L1i after the cache
went cold (a sleep, another process). Prints the totals, then lines by crate
and by function; with FUNCTION_REGEX, that function's hot instructions by the
source file they were inlined from.
"""
import collections
import re
import sys


def parse(path):
    """Instruction address -> (self cost, function, source file)."""
    cost = collections.Counter()
    where = {}
    names = {}
    ob = fn = fl = fi = None
    addr = line = 0
    call_cost_next = False

    def name(kind, rest):
        m = re.match(r"\((\d+)\)(?: (.*))?", rest.strip())
        if not m:
            return rest.strip()
        if m.group(2) is not None:
            names[(kind, m.group(1))] = m.group(2)
        return names.get((kind, m.group(1)), "?")

    def position(tok, cur):
        if tok == "*":
            return cur
        if tok[0] == "+":
            return cur + int(tok[1:], 0)
        if tok[0] == "-":
            return cur - int(tok[1:], 0)
        return int(tok, 0)

    with open(path) as f:
        for text in f:
            if text[0] in "0123456789+-*":
                fields = text.split()
                addr = position(fields[0], addr)
                line = position(fields[1], line)
                if call_cost_next:
                    # The cost line after `calls=` is the callee's, inclusive.
                    call_cost_next = False
                    continue
                cost[(ob, addr)] += int(fields[2]) if len(fields) > 2 else 0
                where[(ob, addr)] = (fn, fi or fl)
            elif text.startswith("ob="):
                ob = name("ob", text[3:])
            elif text.startswith("fn="):
                fn, fi = name("fn", text[3:]), None
            elif text.startswith("fl="):
                fl, fi = name("fl", text[3:]), None
            elif text.startswith(("fi=", "fe=")):
                fi = name("fl", text[3:])
            elif text.startswith("calls="):
                call_cost_next = True
            elif text.startswith(("cfi=", "cfl=")):
                name("fl", text[4:])
            elif text.startswith("cfn="):
                name("fn", text[4:])
            elif text.startswith("cob="):
                name("ob", text[4:])
    return cost, where


def crate(fn):
    m = re.search(r"\b(quark_[a-z0-9]+|quark|quinn_proto|quinn|s2n_quic[a-z_]*|"
                  r"tokio_rustls|tokio|futures_util|rustls|ring|h3|hyper|hashbrown|"
                  r"bytes)::", fn)
    if m:
        return m.group(1)
    return "other: " + fn[:40]


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    short, _ = parse(sys.argv[1])
    long, where = parse(sys.argv[2])
    requests = int(sys.argv[3])
    hot = {}
    for k, v in long.items():
        per = (v - short.get(k, 0)) / requests
        if per >= 0.5:
            hot[k] = per
    lines = {(ob, a >> 6) for ob, a in hot}
    print(f"per request: {sum(hot.values()):.0f} instructions run, {len(hot)} distinct, "
          f"on {len(lines)} cache lines ({len(lines) * 64 / 1024:.1f} KiB)")
    if len(sys.argv) > 4:
        pattern = re.compile(sys.argv[4])
        by_file = collections.defaultdict(lambda: [0, set()])
        for (ob, a), per in hot.items():
            fn, file = where[(ob, a)]
            if pattern.search(fn or ""):
                e = by_file[re.sub(r".*/(crates|library|src)/", "", file or "?")]
                e[0] += 1
                e[1].add(a >> 6)
        print("\ndistinct  lines  source file (inlined into matching functions)")
        for file, (n, ls) in sorted(by_file.items(), key=lambda x: -x[1][0])[:40]:
            print(f"{n:8d} {len(ls):6d}  {file}")
        return
    for title, key in (("crate", lambda fn: crate(fn)), ("function", lambda fn: fn)):
        groups = collections.defaultdict(lambda: [0.0, set()])
        for (ob, a), per in hot.items():
            g = groups[key(where[(ob, a)][0] or "?")]
            g[0] += per
            g[1].add((ob, a >> 6))
        print(f"\n lines  instr/request  {title}")
        for k, (per, ls) in sorted(groups.items(), key=lambda x: -len(x[1][1]))[:25]:
            print(f"{len(ls):6d} {per:14.0f}  {k[:140]}")


if __name__ == "__main__":
    main()
