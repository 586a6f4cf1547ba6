#!/usr/bin/env bash
# Server instructions (callgrind) for one scale-like phase: N connections,
# R measured requests of 2 KB, 2 warm-up requests per connection.
# usage: count.sh BIN N R PORT OUTDIR
set -euo pipefail
BIN=$1 N=$2 R=$3 PORT=$4 dir=$5
mkdir -p "$dir"
[ -f "$dir/cert.der" ] || "$BIN" lab-cert --cert "$dir/cert.der" --key "$dir/key.der"
phases="[{\"label\":\"r\",\"workload\":{\"type\":\"persistent\",\"connections\":$N,\"in_flight\":1,\"requests\":$R,\"response_len\":2000,\"body_len\":0,\"warmup\":$((2*N))}}]"
out="$dir/cg-$N-$R.out"
rm -f "$out" "$dir/in"; mkfifo "$dir/in"
common=(--proto quic --cert "$dir/cert.der" --threads 1)
valgrind --tool=callgrind --callgrind-out-file="$out" "$BIN" lab-server "${common[@]}" --key "$dir/key.der" \
    --listen "127.0.0.1:$PORT" <"$dir/in" >"$dir/server.log" 2>&1 &
server=$!
exec 3>"$dir/in"
for _ in $(seq 300); do grep -q '"listening"' "$dir/server.log" && break; sleep 0.2; done
{
    printf 'prepare\ngo\n'
    for _ in $(seq 6000); do
        grep -q '"event":"done"\|error' "$dir/client.log" 2>/dev/null && break
        sleep 0.2
    done
} | "$BIN" lab-client "${common[@]}" --client-sockets 8 --server "127.0.0.1:$PORT" --phases "$phases" >"$dir/client.log" 2>&1
exec 3>&-
wait "$server" || true
grep -q "\"requests\":$R" "$dir/client.log" || { echo "run failed: $(tail -c 300 "$dir/client.log")" >&2; exit 1; }
callgrind_annotate --threshold=100 "$out" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", ""); print $1 }'
