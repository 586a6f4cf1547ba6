#!/usr/bin/env bash
# The test suite: unit, simulation, loopback, lab and interop tests.
# Installs the third-party QUIC peers first (aioquic from PyPI, quic-go from the
# Go proxy; quinn comes from crates.io with the build).
set -euo pipefail
cd "$(dirname "$0")/.."

bash interop/setup.sh
# The interop and CLI tests run the `quark` binary.
cargo build -p quark-cli
cargo test --workspace "$@"
