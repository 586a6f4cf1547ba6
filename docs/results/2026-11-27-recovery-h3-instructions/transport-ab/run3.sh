#!/bin/bash
cd /tmp/ab2
orders=("base ab new" "new base ab" "ab new base" "base new ab" "ab base new" "new ab base")
for i in $(seq 6); do for b in ${orders[$((i-1))]}; do
  /tmp/ab/quark-$b bench -p quic,tcp+tls -s persistent --sizes 2KiB --pin --requests 20000 --repeat 3 --json /tmp/ab2/r2-$b-$i.json >/dev/null 2>&1 || echo "fail r2 $b $i"
done; done
echo done > /tmp/ab2/DONE3
