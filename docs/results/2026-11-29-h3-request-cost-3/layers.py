# Per-request self instructions by layer, from `KEEP=1 scripts/instructions.sh`
# profile directories: layers.py SIDE N DIR:PROTO [DIR:PROTO ...] (a markdown table).
import os, re, sys
src = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), '../../../scripts/cgdiff.py')).read().split('aspec, bspec')[0]
ns = {}; exec(src, ns)
L = [
 ('AES-GCM, HP, hashes (ring)', ['ring-0', 'ring::', 'aws_lc', 'aws-lc']),
 ('quark-proto', ['quark-proto', 'quark_proto']),
 ('quark driver + quark-udp', ['crates/quark/', 'quark::', 'quark-udp', 'quark_udp', 'hashbrown', 'slab']),
 ('h3 layer (quark-h3, QPACK, http, smallvec)', ['quark-h3', 'quark_h3', 'quark-qpack', 'quark_qpack', 'http-1', 'http::', 'smallvec']),
 ('rustls + tokio-rustls', ['rustls']),
 ('hyper + httparse', ['hyper', 'httparse', 'want-', 'atomic-waker']),
 ('lab (adapter, futures)', ['quark-lab', 'quark_lab', 'futures']),
 ('tokio, mio', ['tokio', 'mio-', 'mio::', 'parking_lot']),
 ('malloc', ['malloc']),
 ('memcpy/memmove/memcmp', ['memmove', 'memcpy', 'memcmp', 'memset', 'string/']),
]
def layer(k):
    f, fn = (k.split(':', 1) + [''])[:2]
    # file first (code inlined into a caller counts where it was written) ...
    for name, keys in L:
        if any(x in f for x in keys) and '/rustc/' not in f: return name
    # ... std code by the function it was inlined into
    for name, keys in L:
        if any(x in fn.split('::')[0] + '::' + fn for x in keys): return name
    return 'other (std, glibc, bytes)'
side, n = sys.argv[1], int(sys.argv[2]); cols = sys.argv[3:]
tabs = []
for c in cols:
    d = ns['per'](c, side, n); g = {}
    for k, v in d.items(): g[layer(k)] = g.get(layer(k), 0) + v
    tabs.append(g)
names = [x[0] for x in L] + ['other (std, glibc, bytes)']
hdr = '| ' + side + ' | ' + ' | '.join(c.split('/')[-1] for c in cols) + ' |'
print(hdr); print('|---' * (len(cols) + 1) + '|')
for nm in names:
    print(f'| {nm} | ' + ' | '.join(f'{t.get(nm, 0):,.0f}'.replace(',', ' ') for t in tabs) + ' |')
print('| **total** | ' + ' | '.join(f'**{sum(t.values()):,.0f}**'.replace(',', ' ') for t in tabs) + ' |')
