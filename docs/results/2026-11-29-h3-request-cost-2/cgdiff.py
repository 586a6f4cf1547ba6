# Per-request self instructions by function, before vs after (callgrind profiles
# of N and 2N requests each): prints the largest changes and per-crate sums.
# callgrind_annotate runs with --auto=no: with the sources on disk it also
# printed annotated source lines, which this parser counted a second time.
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
def per(a1, a2, n):
    a, b = load(a1), load(a2)
    return {k: (b.get(k, 0) - a.get(k, 0)) / n for k in set(a) | set(b)}
bdir, adir, side, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
B = per(f'{bdir}/cg-h3-{side}-{n}.out', f'{bdir}/cg-h3-{side}-{2*n}.out', n)
A = per(f'{adir}/cg-h3-{side}-{n}.out', f'{adir}/cg-h3-{side}-{2*n}.out', n)
def crate(k):
    fn = k.split(':', 1)[1] if ':' in k else k
    for c in ['memmove', 'malloc', 'quark_lab', 'quark_h3', 'quark_qpack', 'quark_proto', 'quark_udp', 'quark::', 'http::', 'tokio', 'futures', 'ring']:
        if c in k: return c
    return 'other'
sums = {}
for k in set(A) | set(B):
    c = crate(k); sums.setdefault(c, [0, 0]); sums[c][0] += B.get(k, 0); sums[c][1] += A.get(k, 0)
for c, (b, a) in sorted(sums.items(), key=lambda x: -abs(x[1][1] - x[1][0])):
    print(f'{c:12} {b:8.0f} -> {a:8.0f}  ({a - b:+.0f})')
print('-- largest changes')
for k in sorted(set(A) | set(B), key=lambda k: -abs(A.get(k, 0) - B.get(k, 0)))[:25]:
    print(f'{B.get(k, 0):7.0f} -> {A.get(k, 0):7.0f}  {k[:150]}')
