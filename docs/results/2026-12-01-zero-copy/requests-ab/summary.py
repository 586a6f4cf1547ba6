#!/usr/bin/env python3
"""Per-round ratios of the rps and persistent A/B (run.sh; its outputs are in
runs.tar.gz): quic's CPU per request, main over base, and each build's quic
over tcp+tls in its own run."""
import json, statistics as st, tarfile

RUNS = tarfile.open('runs.tar.gz')
NAMES = RUNS.getnames()

def cell(path, proto):
    j = json.load(RUNS.extractfile(path))
    for c in j['results']:
        if c['protocol'] == proto and c['status'] == 'ok':
            r = c['metrics']
            return r['cpu_s_per_1000_requests']['total'], r['requests_per_s'], r['latency_s']['p99']
    return None

def q(v):
    v = sorted(v)
    return f"{st.median(v):.3f} ({v[len(v)//4]:.3f}-{v[(3*len(v))//4]:.3f}; {v[0]:.3f}-{v[-1]:.3f})"

for sc in ['rps', 'persistent']:
    rounds = sorted(int(p.split('-')[-1][:-5]) for p in NAMES if p.startswith(f'{sc}-main-') and p.endswith('.json'))
    main_base, rel = [], {'base': [], 'main': []}
    rate, p99 = [], []
    for r in rounds:
        got = {b: (cell(f'{sc}-{b}-{r}.json', 'quic'), cell(f'{sc}-{b}-{r}.json', 'tcp+tls')) for b in ['base', 'main']}
        if any(x is None for pair in got.values() for x in pair):
            continue
        main_base.append(got['main'][0][0] / got['base'][0][0])
        rate.append(got['main'][0][1] / got['base'][0][1])
        p99.append(got['main'][0][2] / got['base'][0][2])
        for b in ['base', 'main']:
            rel[b].append(got[b][0][0] / got[b][1][0])
    print(f"{sc}: {len(main_base)} rounds (median (middle half; range))")
    print(f"  quic CPU per request, main / base: {q(main_base)}")
    print(f"  quic req/s, main / base:           {q(rate)}")
    print(f"  quic p99, main / base:             {q(p99)}")
    for b in ['base', 'main']:
        print(f"  {b}: quic / tcp+tls CPU per request: {q(rel[b])}")
