#!/usr/bin/env python3
# per-packet.py A2.out A6.out [incl|excl] [N]: per function, (A6 - A2) / 28 169 packets, from callgrind_annotate (docs/results/2026-11-30-bulk/NOTES.md)
import subprocess, sys, re
def load(f, incl):
    args=['callgrind_annotate','--threshold=100']+(['--inclusive=yes','--tree=none'] if incl else ['--tree=none'])+[f]
    out=subprocess.run(args,capture_output=True,text=True).stdout
    d={}
    for line in out.splitlines():
        if line.lstrip().startswith("=>") and not incl: continue
        m=re.match(r'\s*([\d,]+)\s+\([^)]*\)\s+(.*)$',line)
        if m:
            v=int(m.group(1).replace(',','')); k=m.group(2).split(' [')[0]
            d[k]=d.get(k,0)+v
    return d
incl=len(sys.argv)>3 and sys.argv[3]=='incl'
a=load(sys.argv[1],incl); b=load(sys.argv[2],incl)
rows=[( (b.get(k,0)-a.get(k,0))/28169, k) for k in set(a)|set(b)]
rows.sort(reverse=True)
for v,k in rows[:int(sys.argv[4]) if len(sys.argv)>4 else 70]:
    if abs(v)>=3: print(f"{v:8.0f}  {k[:170]}")
