#!/usr/bin/env bash
# Two flows through one emulated bottleneck (`quark link`, layer 3, so QUIC
# and kernel TCP cross the same queue): both downloads start together and
# run for SECS seconds; each flow's goodput is the bytes it received in that
# time, and Jain's index is (a+b)^2 / 2(a^2+b^2).
#
#   sudo scripts/bbr-share.sh PROFILE SECS PAIR...
#   PAIR: quic-bbr+quic-bbr, quic-bbr+tcp-cubic, quic-cubic+quic-cubic, ...
#   e.g. sudo scripts/bbr-share.sh rtt30-loss0-rate100 20 quic-bbr+quic-bbr quic-bbr+tcp-cubic
#
# Prints one markdown row per pair. Needs root; QUARK=path/to/quark (default
# target/release/quark). The quark server's controller is the pair's QUIC
# one (both QUIC flows of a pair use the same); a TCP flow is plain TCP from a
# small Python sender that sets TCP_CONGESTION on its socket.
set -euo pipefail
profile=$1 secs=$2
shift 2
quark=${QUARK:-$(dirname "$0")/../target/release/quark}
quark=$(realpath "$quark")
work=$(mktemp -d)
link_pid=
server_pid=
sender_pid=
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
    [ -n "$sender_pid" ] && kill "$sender_pid" 2>/dev/null || true
    [ -n "$link_pid" ] && kill "$link_pid" 2>/dev/null && wait "$link_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
mkdir "$work/www"
truncate -s 4G "$work/www/big"

prefix=qbbr$$
"$quark" link up --prefix "$prefix" --profile "$profile" >"$work/link.out" 2>"$work/link.err" &
link_pid=$!
for _ in $(seq 50); do grep -q "link up" "$work/link.out" 2>/dev/null && break; sleep 0.1; done
grep -q "link up" "$work/link.out" || { cat "$work/link.err" >&2; exit 1; }

# A bulk TCP sender in the server's namespace: Linux's controller is chosen per
# socket (TCP_CONGESTION needs CAP_NET_ADMIN for one outside
# net.ipv4.tcp_allowed_congestion_control; the machine-wide sysctls are left
# alone). Plain TCP: the share is about the controllers, not TLS.
tcp_sender() {
    ip netns exec "$prefix-a" python3 -c '
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("10.77.0.1", 5001)); s.listen(1)
c, _ = s.accept()
c.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, sys.argv[1].encode())
buf = bytes(1 << 16)
try:
    while True: c.sendall(buf)
except OSError: pass' "$1" &
    sender_pid=$!
}

# One flow: prints the bytes it received in $secs seconds.
flow() {
    case $1 in
        quic-*) ip netns exec "$prefix-b" timeout "$secs" "$quark" get --h3 --insecure -q -o - \
                    https://10.77.0.1:4433/big 2>/dev/null | wc -c ;;
        tcp-*) ip netns exec "$prefix-b" python3 -c '
import socket, sys, time
s = socket.create_connection(("10.77.0.1", 5001)); end = time.time() + float(sys.argv[1]); n = 0
while time.time() < end:
    s.settimeout(max(end - time.time(), 0.01))
    try: d = s.recv(1 << 20)
    except socket.timeout: break
    if not d: break
    n += len(d)
print(n)' "$secs" ;;
    esac
}

echo "| pair | network | flow 1 Mbit/s | flow 2 Mbit/s | sum | Jain |"
echo "|---|---|---|---|---|---|"
for pair in "$@"; do
    a=${pair%+*} b=${pair#*+}
    case $a$b in tcp-*tcp-*) echo "$pair: at most one TCP flow per pair (one sender port)" >&2; continue ;; esac
    cc=cubic
    for k in $a $b; do case $k in quic-*) cc=${k#quic-} ;; esac; done
    for k in $a $b; do case $k in tcp-*) tcp_sender "${k#tcp-}" ;; esac; done
    ip netns exec "$prefix-a" "$quark" serve --h3 --listen 10.77.0.1:4433 --root "$work/www" \
        --cc "$cc" >/dev/null 2>"$work/serve.err" &
    server_pid=$!
    sleep 1
    flow "$a" >"$work/a" &
    fa=$!
    flow "$b" >"$work/b" &
    fb=$!
    wait $fa $fb || true
    kill "$server_pid" 2>/dev/null || true
    [ -n "$sender_pid" ] && kill "$sender_pid" 2>/dev/null || true
    sender_pid=
    wait "$server_pid" 2>/dev/null || true
    server_pid=
    awk -v pair="$pair" -v net="$profile" -v s="$secs" -v x="$(cat "$work/a")" -v y="$(cat "$work/b")" 'BEGIN {
        a = x * 8 / s / 1e6; b = y * 8 / s / 1e6
        j = (a + b) ^ 2 / (2 * (a ^ 2 + b ^ 2) + 1e-12)
        printf "| %s | %s | %.1f | %.1f | %.1f | %.3f |\n", pair, net, a, b, a + b, j }'
    sleep 1
done
