#!/bin/bash
cd /tmp/ab2
for i in $(seq 4); do for b in new h3b; do
  /tmp/ab/quark-$b bench -p h3,http1+tls,http2+tls,h3-quinn -s persistent --sizes 2KiB --pin 0,0 --requests 20000 --repeat 2 --json /tmp/ab2/h1-$b-$i.json >/dev/null 2>&1 || echo "fail h1 $b $i"
  /tmp/ab/quark-$b bench -p h3,http1+tls,http2+tls -s rps --sizes 2KiB --repeat 2 --json /tmp/ab2/hr-$b-$i.json >/dev/null 2>&1 || echo "fail hr $b $i"
done; done
echo done > /tmp/ab2/DONE4
