#!/bin/bash
# A/B of main at 09:28 (old) and HEAD (new): quic vs tcp+tls, alternating.
for r in 1 2 3; do
  for b in old new; do
    ./quark-$b bench -p quic,tcp+tls -s rps --requests 100000 --json $b-rps-$r.json > $b-rps-$r.txt 2>&1
    ./quark-$b bench -p quic,tcp+tls -s persistent --sizes 2KiB --pin 0,0 --requests 20000 --json $b-pers-$r.json > $b-pers-$r.txt 2>&1
    ./quark-$b bench -p quic,tcp+tls -s goodput --sizes 200MB --runs 3 --json $b-bulk-$r.json > $b-bulk-$r.txt 2>&1
  done
done
echo done
