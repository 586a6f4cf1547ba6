#!/usr/bin/env bash
# BASE=<quark> MAIN=<quark> run.sh LAST [FIRST]: rounds FIRST..LAST, the two builds
# taking turns; each a 1 GB download (5 x 200 MB on one quic connection, loopback)
# between lab-server (the sender) and lab-client (the receiver), each under
# `perf stat` counting scheduler and system-call tracepoints: <build>-<side>-<round>.perf
set -euo pipefail
cd "$(dirname "$0")"
events=task-clock,context-switches,sched:sched_wakeup,sched:sched_switch,sched:sched_waking
events+=,syscalls:sys_enter_sendmmsg,syscalls:sys_enter_recvmmsg,syscalls:sys_enter_epoll_wait
events+=,syscalls:sys_enter_read,syscalls:sys_enter_write
dir=$(mktemp -d /tmp/wakeups.XXXX)
trap 'rm -rf "$dir"' EXIT
"$MAIN" lab-cert --cert "$dir/cert.der" --key "$dir/key.der"
phases='[{"label":"r","workload":{"type":"persistent","connections":1,"in_flight":1,"requests":5,"response_len":200000000,"body_len":0,"warmup":1}}]'
port=47411
for r in $(seq "${2:-1}" "$1"); do
  for b in base main; do
    bin=$BASE; [ $b = main ] && bin=$MAIN
    common=(--proto quic --cert "$dir/cert.der" --threads 1)
    rm -f "$dir/in"; mkfifo "$dir/in"
    perf stat -x, -e "$events" -o "$b-server-$r.perf" \
      "$bin" lab-server "${common[@]}" --key "$dir/key.der" --listen "127.0.0.1:$port" \
      <"$dir/in" >"$dir/server.log" 2>&1 &
    server=$!
    exec 3>"$dir/in"
    for _ in $(seq 100); do grep -q '"listening"' "$dir/server.log" && break; sleep 0.1; done
    { printf 'prepare\ngo\n'
      for _ in $(seq 3000); do grep -q '"event":"done"\|error' "$dir/client.log" 2>/dev/null && break; sleep 0.1; done
    } | perf stat -x, -e "$events" -o "$b-client-$r.perf" \
        "$bin" lab-client "${common[@]}" --server "127.0.0.1:$port" --phases "$phases" >"$dir/client.log" 2>&1
    exec 3>&-
    wait "$server" || true
    grep -q '"requests":5' "$dir/client.log" || { echo "round $r $b failed: $(tail -c 300 "$dir/client.log")" >&2; exit 1; }
  done
done
echo done
