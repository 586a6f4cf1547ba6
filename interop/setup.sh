#!/usr/bin/env bash
# Installs the third-party QUIC peers of the interop tests (idempotent):
#   aioquic (PyPI)      -> .venv/ at the repository root
#   quic-go (Go proxy)  -> ${CARGO_TARGET_DIR:-target}/interop/quicgo-hq
#                          ${CARGO_TARGET_DIR:-target}/interop/quicgo-h3 (its http3)
#                          ${CARGO_TARGET_DIR:-target}/interop/quicgo-lab (lab/quic-go:
#                          the lab's `quic-go` protocol, `quark bench -p quic-go`)
# Needs python3 (with venv) and go; reaches only PyPI and the Go module proxy.
# quinn needs nothing here: cargo builds quinn-hq with the tests.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
VENV=$ROOT/.venv
REQS=$ROOT/interop/aioquic/requirements.txt
PYTHON=${PYTHON:-python3}

say() { printf 'interop/setup.sh: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

# --- aioquic -----------------------------------------------------------------
# The stamp records which requirements the venv was made from; a matching
# stamp plus a working import means there is nothing to do.
stamp=$VENV/.quark-interop-requirements
if ! cmp -s "$REQS" "$stamp" 2>/dev/null || ! "$VENV/bin/python" -c 'import aioquic' 2>/dev/null; then
    command -v "$PYTHON" >/dev/null || die "$PYTHON not found"
    if [ ! -x "$VENV/bin/python" ]; then
        say "creating $VENV"
        "$PYTHON" -m venv "$VENV" || die "python3 -m venv failed (on Debian: apt-get install python3-venv)"
    fi
    say "installing $(tr '\n' ' ' <"$REQS")"
    "$VENV/bin/python" -m pip install --disable-pip-version-check --quiet -r "$REQS"
    cp "$REQS" "$stamp"
fi

# --- quic-go -----------------------------------------------------------------
command -v go >/dev/null || die "go not found"
mkdir -p "$TARGET/interop"
# GOTOOLCHAIN=local: never try to download another Go; -mod=readonly: go.sum
# is the truth. The Go build cache makes a rebuild with no changes instant.
(cd "$ROOT/interop/quic-go" &&
    GOTOOLCHAIN=local GOFLAGS=-mod=readonly go build -trimpath -o "$TARGET/interop/quicgo-hq" .) ||
    die "building the quic-go peer failed"
(cd "$ROOT/interop/quic-go-h3" &&
    GOTOOLCHAIN=local GOFLAGS=-mod=readonly go build -trimpath -o "$TARGET/interop/quicgo-h3" .) ||
    die "building the quic-go HTTP/3 peer failed"
(cd "$ROOT/lab/quic-go" &&
    GOTOOLCHAIN=local GOFLAGS=-mod=readonly go build -trimpath -o "$TARGET/interop/quicgo-lab" .) ||
    die "building the quic-go lab program failed"

# --- versions ----------------------------------------------------------------
quinn=$(awk '/^name = "quinn"$/ { getline; gsub(/[^0-9.]/, ""); print; exit }' "$ROOT/Cargo.lock" 2>/dev/null || true)
echo "quinn:   quinn ${quinn:-?} (quinn-hq, built by cargo with the tests)"
echo "aioquic: $("$VENV/bin/python" "$ROOT/interop/aioquic/hq_client.py" --version)"
echo "quic-go: $("$TARGET/interop/quicgo-hq" version)"
echo "quic-go: $("$TARGET/interop/quicgo-h3" version)"
echo "quic-go: $("$TARGET/interop/quicgo-lab" version)"
