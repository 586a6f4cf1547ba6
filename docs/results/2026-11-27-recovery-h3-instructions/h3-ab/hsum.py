import json,glob,gzip,statistics as st,sys
# usage: hsum.py h1 hr (in this directory; the files are gzipped here)
def load(f): return json.load(gzip.open(f,"rt") if f.endswith(".gz") else open(f))
for pre in sys.argv[1:]:
  for b in ['new','h3b']:
    out=[]
    for proto in ['h3','http1+tls','http2+tls','h3-quinn']:
        rps=[];p99=[];cpu=[]
        for f in sorted(glob.glob(f'{pre}-{b}-*.json*')):
            d=load(f)
            for r in d['results']:
                if r['protocol']!=proto: continue
                for a in (r['runs'] if 'runs' in r else [r]):
                    if 'latency_s' not in a: continue
                    rps.append(a['requests_per_s']); p99.append(a['latency_s']['p99']*1e6); cpu.append(a['cpu_s']['total']/a['requests']*1e6)
        if rps: out.append(f"{proto} {st.median(rps):7.0f} req/s p99 {st.median(p99):6.0f} cpu {st.median(cpu):5.1f}us n={len(rps)}")
    print(pre,b,' | '.join(out))
