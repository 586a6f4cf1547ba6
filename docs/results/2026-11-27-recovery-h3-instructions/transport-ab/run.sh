#!/bin/bash
cd /tmp/ab2
for i in $(seq 8); do for b in base new; do
  /tmp/ab/quark-$b bench -p quic,tcp+tls -s persistent --sizes 2KiB --pin --requests 20000 --repeat 3 --json /tmp/ab2/p2-$b-$i.json >/dev/null 2>&1 || echo "fail p2 $b $i"
done; done
for i in $(seq 4); do for b in base new; do
  /tmp/ab/quark-$b bench -p quic,tcp+tls,quinn -s persistent --sizes 2KiB --pin 0,0 --requests 20000 --repeat 2 --json /tmp/ab2/p1-$b-$i.json >/dev/null 2>&1 || echo "fail p1 $b $i"
  /tmp/ab/quark-$b bench -p quic,tcp+tls,quinn -s rps --sizes 2KB --repeat 2 --json /tmp/ab2/rps-$b-$i.json >/dev/null 2>&1 || echo "fail rps $b $i"
done; done
echo done > /tmp/ab2/DONE
