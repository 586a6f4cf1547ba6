#!/usr/bin/env bash
set -u
# BASE=<quark binary> MAIN=<quark binary> veth-ab.sh LAST [FIRST]: runs FIRST..LAST, the two builds taking turns, results here
cd "$(dirname "$0")"
for r in $(seq ${2:-1} $1); do
  for b in base main; do
    bin=$BASE; [ $b = main ] && bin=$MAIN
    "$bin" bench -p quic,nginx -s goodput --sizes 200MB --repeat 5 --net veth --ref nginx --json veth-$b-$r.json > veth-$b-$r.txt 2>&1
  done
done
echo done
