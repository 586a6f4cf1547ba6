#!/usr/bin/env bash
# callgrind-veth.sh BIN SIDE REQUESTS OUT: one lab transfer of REQUESTS x 10 MB over a veth between namespaces zc-a / zc-b (10.97.0.1/2, MTU 1500), SIDE under callgrind; needs cert.der / key.der in /tmp/cg (quark lab-cert)
set -euo pipefail
BIN=$1; side=$2; n=$3; out=$4; d=/tmp/cg
vg=(valgrind --tool=callgrind --callgrind-out-file=$out)
sv=(); cv=(); if [ $side = server ]; then sv=("${vg[@]}"); else cv=("${vg[@]}"); fi
phases="[{\"label\":\"r\",\"workload\":{\"type\":\"persistent\",\"connections\":1,\"in_flight\":1,\"requests\":$n,\"response_len\":10000000,\"body_len\":0,\"warmup\":1}}]"
rm -f $d/in $d/server.log $d/client.log; mkfifo $d/in
ip netns exec zc-a "${sv[@]}" $BIN lab-server --proto quic --cert $d/cert.der --key $d/key.der --threads 1 --listen 10.97.0.1:47311 <$d/in >$d/server.log 2>&1 &
server=$!
exec 3>$d/in
for _ in $(seq 100); do grep -q '"listening"' $d/server.log && break; sleep 0.2; done
{ printf 'prepare\ngo\n'; for _ in $(seq 3000); do grep -q '"event":"done"\|error' $d/client.log 2>/dev/null && break; sleep 0.2; done; } |
  ip netns exec zc-b "${cv[@]}" $BIN lab-client --proto quic --cert $d/cert.der --threads 1 --server 10.97.0.1:47311 --phases "$phases" >$d/client.log 2>&1
exec 3>&-
wait $server || true
grep -q "\"requests\":$n" $d/client.log || { echo "failed: $(tail -c 300 $d/client.log)"; exit 1; }
callgrind_annotate --threshold=100 $out 2>/dev/null | grep "PROGRAM TOTALS"
