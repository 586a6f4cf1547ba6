import json, sys, glob, gzip, statistics as st, collections
def load(f): return json.load(gzip.open(f,'rt') if f.endswith('.gz') else open(f))
# usage: sum.py PREFIX... ; pairs quic with tcp+tls per round within each file
for pre in sys.argv[1:]:
    rat=[]; q99=[]; t99=[]; qr=[]; tr=[]; qp50=[]
    for f in sorted(glob.glob(pre+'*.json*')):
        d=load(f)
        by={}
        for r in d['results']:
            by[r['protocol']]=r['runs'] if 'runs' in r else [r]
        if 'quic' not in by or 'tcp+tls' not in by: continue
        for a,b in zip(by['quic'],by['tcp+tls']):
            qa=a['metrics'] if 'metrics' in a else a; tb=b['metrics'] if 'metrics' in b else b
            q=qa['latency_s']['p99']; t=tb['latency_s']['p99']
            q99.append(q*1e6); t99.append(t*1e6); rat.append(q/t)
            qr.append(qa['requests_per_s']); tr.append(tb['requests_per_s']); qp50.append(qa['latency_s']['p50']*1e6)
    if not rat: print(pre,'none'); continue
    print(f"{pre:28s} n={len(rat):2d} quic p99 {st.median(q99):6.1f} p50 {st.median(qp50):5.1f} rps {st.median(qr):7.0f} | tcp+tls p99 {st.median(t99):6.1f} rps {st.median(tr):7.0f} | ratio med {st.median(rat):.3f} <=1 in {sum(r<=1 for r in rat)}/{len(rat)}")
