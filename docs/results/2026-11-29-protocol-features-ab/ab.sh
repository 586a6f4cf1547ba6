#!/bin/bash
# A/B: 210ea88 (base) vs 2858fef (head), alternating, each run with tcp+tls as the in-run baseline.
cd /work/ab
for round in 1 2; do
  for v in base head; do
    ./quark-$v bench -p quic,tcp+tls -s goodput --sizes 200MB --repeat 3 --json ab-$v-gp-$round.json > ab-$v-gp-$round.txt 2>&1
    ./quark-$v bench -p quic,tcp+tls -s rps,persistent --repeat 3 --json ab-$v-rq-$round.json > ab-$v-rq-$round.txt 2>&1
  done
done
echo done > ab.done
