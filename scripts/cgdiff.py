# Per-request self instructions by function, A vs B (callgrind profiles of N
# and 2N requests each, from `KEEP=1 scripts/instructions.sh`): prints per-crate
# sums and the largest differences. A and B are DIR:PROTO, so one run's quic
# and quic-c compare as well as two builds' quic-c:
#   python3 scripts/cgdiff.py DIR:quic DIR:quic-c server 1000
# callgrind_annotate runs with --auto=no: with the sources on disk it also
# prints annotated source lines, which this parser would count a second time.
import re, subprocess, sys
def load(f):
    out = subprocess.run(['callgrind_annotate', '--auto=no', '--threshold=100', f], capture_output=True, text=True).stdout
    d = {}
    for line in out.splitlines():
        m = re.match(r'\s*([\d,]+)\s+\([^)]*\)\s+(\S.*)', line)
        if m and '=>' not in line and ':' in m.group(2):
            k = re.sub(r'/work/[^ ]*?/crates/', 'crates/', m.group(2).strip())
            k = re.sub(r' \[[^\]]*\]$', '', k)
            d[k] = d.get(k, 0) + int(m.group(1).replace(',', ''))
    return d
def per(spec, side, n):
    d, proto = spec.rsplit(':', 1)
    a, b = load(f'{d}/cg-{proto}-{side}-{n}.out'), load(f'{d}/cg-{proto}-{side}-{2*n}.out')
    return {k: (b.get(k, 0) - a.get(k, 0)) / n for k in set(a) | set(b)}
aspec, bspec, side, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
A, B = per(aspec, side, n), per(bspec, side, n)
def crate(k):
    for c in ['memmove', 'memcpy', 'malloc', 'quark_ffi', 'quic_c', 'quark_lab', 'quark_proto', 'quark_udp', 'quark::', 'tokio', 'futures', 'aws_lc', 'ring', 'std::', 'core::', 'alloc::', 'hashbrown']:
        if c in k: return c
    return 'other'
sums = {}
for k in set(A) | set(B):
    c = crate(k); sums.setdefault(c, [0, 0]); sums[c][0] += A.get(k, 0); sums[c][1] += B.get(k, 0)
ta, tb = sum(A.values()), sum(B.values())
print(f'{"total":12} {ta:8.0f} -> {tb:8.0f}  ({tb - ta:+.0f})')
for c, (a, b) in sorted(sums.items(), key=lambda x: -abs(x[1][1] - x[1][0])):
    print(f'{c:12} {a:8.0f} -> {b:8.0f}  ({b - a:+.0f})')
print('-- largest differences')
for k in sorted(set(A) | set(B), key=lambda k: -abs(B.get(k, 0) - A.get(k, 0)))[:int(sys.argv[5]) if len(sys.argv) > 5 else 30]:
    print(f'{A.get(k, 0):7.0f} -> {B.get(k, 0):7.0f}  {k[:160]}')
