#!/usr/bin/env bash
# Two `quark agent` containers on a podman network of their own and a
# `quark bench --server-agent A --client-agent B` across them from a third
# (quic and tcp+tls, small persistent and ephemeral cells; the lab checks
# every payload byte). First a driver with a wrong token must be refused.
#
#   deploy/run-two-agents.sh [OUT_DIR]     # OUT_DIR keeps bench.json/.txt
#
# The network is --internal (no route off the machine): all traffic stays
# between the three containers. Builds the image first if it is missing.
# Env: QUARK_IMAGE (default quark:VERSION), QUARK_BENCH_ARGS (replaces the
# cell options below).
set -euo pipefail
# shellcheck source=deploy/podman-env.sh
source "$(dirname "$0")/podman-env.sh"
cd "$repo_dir"

image=${QUARK_IMAGE:-quark:$(quark_version)}
if ! podman image exists "$image"; then
    deploy/build-image.sh
fi
out=${1:-$(mktemp -d)}
mkdir -p "$out"
out=$(cd "$out" && pwd) # podman takes a relative path for a volume name
# The containers run as user 65532; the driver writes its results here.
chmod 0777 "$out"

run_id=quark-deploy-$$
net=$run_id
work=$(mktemp -d)
cleanup() {
    podman rm -f -t 2 "$run_id-a" "$run_id-b" >/dev/null 2>&1 || true
    podman network rm -f "$net" >/dev/null 2>&1 || true
    podman secret rm "$run_id-token" "$run_id-wrong" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

# A fresh random token per run (and a wrong one), as podman secrets readable
# only by the containers' user.
(
    umask 077
    od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$work/token"
    od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$work/wrong"
)
podman secret create "$run_id-token" "$work/token" >/dev/null
podman secret create "$run_id-wrong" "$work/wrong" >/dev/null
# Under --read-only only podman's tmpfs mounts (/tmp) can take the secret's
# mount point: the image's root, /run included, is read-only.
secret() { echo "$1,target=/tmp/token,uid=65532,gid=65532,mode=0400"; }

podman network create --internal "$net" >/dev/null
# --init everywhere: catatonit is PID 1 and reaps orphaned lab children
# (quark itself ends on SIGTERM with exit 143).
# NET_ADMIN (in the container's own network namespace only): the lab's TCP
# protocols ask for cubic like the papers (`--tcp-cc`), which an unprivileged
# process gets only when it is in the namespace's allowed list (here the
# host's default is bbr, allowed "reno bbr").
for side in a b; do
    podman run -d --init --name "$run_id-$side" --hostname "quark-agent-$side" \
        --network "$net" --read-only --cap-add NET_ADMIN \
        --secret "$(secret "$run_id-token")" \
        "$image" agent --listen 0.0.0.0:7878 --token-file /tmp/token >/dev/null
done
addr() { podman inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$1"; }
for side in a b; do
    for _ in $(seq 50); do
        podman logs "$run_id-$side" 2>/dev/null | grep -q 'agent listening' && break
        sleep 0.2
    done
    podman logs "$run_id-$side" 2>/dev/null | grep -q 'agent listening' \
        || { podman logs "$run_id-$side" >&2; echo "error: agent $side did not start" >&2; exit 1; }
done
a=$(addr "$run_id-a")
b=$(addr "$run_id-b")
echo "agents: quark-agent-a at $a, quark-agent-b at $b (network $net)"

driver() {
    local tok=$1
    shift
    podman run --rm --init --network "$net" --read-only --secret "$(secret "$tok")" \
        -v "$out:/results" "$image" bench --server-agent "$a:7878" \
        --client-agent "$b:7878" --token-file /tmp/token "$@"
}

# The control channel refuses a driver with the wrong token.
if driver "$run_id-wrong" -p quic -s persistent --requests 10 >"$work/wrong.txt" 2>&1; then
    cat "$work/wrong.txt" >&2
    echo "error: a driver with the wrong token was not refused" >&2
    exit 1
fi
grep -q 'authentication failed' "$work/wrong.txt" \
    || { cat "$work/wrong.txt" >&2; echo "error: no 'authentication failed'" >&2; exit 1; }
echo "wrong token: refused (authentication failed)"

# shellcheck disable=SC2206 # word splitting of the override is intended
cells=(${QUARK_BENCH_ARGS:--p quic,tcp+tls -s persistent,ephemeral --sizes 2KiB,32KiB --requests 400 --clients 4})
driver "$run_id-token" "${cells[@]}" --json /results/bench.json 2>&1 | tee "$out/bench.txt"

# Every cell measured, each side on the agent it was sent to.
python3 - "$out/bench.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
p = r["config"]["placement"]
assert r["complete"] and not r["errors"], r["errors"]
assert p["server"]["host"] == "quark-agent-a" and p["client"]["host"] == "quark-agent-b", p
assert p.get("rtt_ms") is not None, "no RTT measured"
cells = r["results"]
bad = [c["label"] + ": " + str(c.get("error")) for c in cells if c["status"] != "ok"]
assert cells and not bad, bad
protos = sorted({c["protocol"] for c in cells})
print(f"checked: {len(cells)} cells ok ({', '.join(protos)}), server on quark-agent-a, "
      f"client on quark-agent-b, RTT {p['rtt_ms']:.3f} ms")
PY

# The same image as a file server: `quark serve --h3` in one container, and
# `quark get` over HTTP/3 from another; the file must arrive byte for byte.
mkdir -p "$work/www" "$work/got"
chmod 0755 "$work" "$work/www"
chmod 0777 "$work/got"
head -c 3000000 /dev/urandom >"$work/www/blob"
chmod 0644 "$work/www/blob"
podman run -d --init --name "$run_id-a" --replace --network "$net" --read-only \
    -v "$work/www:/srv/www:ro" "$image" serve --h3 --listen 0.0.0.0:4433 \
    --root /srv/www >/dev/null
s=$(addr "$run_id-a")
for _ in $(seq 50); do
    podman run --rm --init --network "$net" --read-only -v "$work/got:/got" "$image" \
        get --h3 --insecure --quiet -o /got "https://$s:4433/blob" 2>/dev/null && break
    sleep 0.2
done
cmp "$work/www/blob" "$work/got/blob"
echo "serve: 3 MB over HTTP/3 from the quark serve container, byte for byte"
echo "results in $out"
