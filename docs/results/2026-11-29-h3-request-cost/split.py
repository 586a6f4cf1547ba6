# Per protocol: median over runs of user and sys CPU µs per request (client + server).
import json, sys, statistics
d = json.load(open(sys.argv[1]))
for r in d['results']:
    runs = r.get('runs') or [r]
    us, sy, tot = [], [], []
    for run in runs:
        m = run['metrics'] if 'metrics' in run else run
        n = m['requests']
        u = m['client']['user_s'] + m['server']['user_s']
        s = m['client']['sys_s'] + m['server']['sys_s']
        us.append(u / n * 1e6); sy.append(s / n * 1e6); tot.append((u + s) / n * 1e6)
    print(f"{r['protocol']:10} user {statistics.median(us):5.1f}  sys {statistics.median(sy):5.1f}  total {statistics.median(tot):5.1f} µs/req  ({len(runs)} runs)")
