# The NOTES table from `quark bench -p quic,quic-c ... --json FILE`: per cell,
# CPU s/GB of each protocol (median of the rounds, range), their ratio, and
# req/s. Usage: python3 table.py FILE.json[.gz]
import gzip, json, statistics, sys
p = sys.argv[1]
d = json.load(gzip.open(p, 'rt') if p.endswith('.gz') else open(p))
cells = {}
for r in d['results']:
    if r['status'] == 'ok':
        cells[(r['scenario'], r['label'], r['protocol'])] = r
def cpu(r):
    v = sorted(x['cpu_s_per_gb']['total'] for x in r['runs'])
    return statistics.median(v), v[0], v[-1]
print('| scenario | size | CPU s/GB quic | quic-c | ratio | req/s quic | quic-c | ratio |')
print('|---|---|---|---|---|---|---|---|')
for (sc, label, proto), r in cells.items():
    if proto != 'quic' or (sc, label, 'quic-c') not in cells:
        continue
    c = cells[(sc, label, 'quic-c')]
    (a, a0, a1), (b, b0, b1) = cpu(r), cpu(c)
    qa = statistics.median(x['requests_per_s'] for x in r['runs'])
    qb = statistics.median(x['requests_per_s'] for x in c['runs'])
    print(f'| {sc} | {label} | {a:.2f} ({a0:.2f}-{a1:.2f}) | {b:.2f} ({b0:.2f}-{b1:.2f}) | {b / a:.2f} | {qa:.0f} | {qb:.0f} | {qb / qa:.2f} |')
