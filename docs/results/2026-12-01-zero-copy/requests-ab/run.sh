#!/usr/bin/env bash
set -u
# BASE=<quark binary> MAIN=<quark binary> run.sh LAST [FIRST]: rounds FIRST..LAST of
# rps (144 connections × 2 KB) and persistent 2 KiB on one CPU, quic and
# tcp+tls, the two builds taking turns; results here.
cd "$(dirname "$0")"
for r in $(seq ${2:-1} $1); do
  for b in base main; do
    bin=$BASE; [ $b = main ] && bin=$MAIN
    "$bin" bench -p quic,tcp+tls -s rps --sizes 2KB --requests 100000 --ref tcp+tls \
      --json rps-$b-$r.json > rps-$b-$r.txt 2>&1
    "$bin" bench -p quic,tcp+tls -s persistent --sizes 2KiB --pin 0,0 --requests 20000 --ref tcp+tls \
      --json persistent-$b-$r.json > persistent-$b-$r.txt 2>&1
  done
done
echo done
