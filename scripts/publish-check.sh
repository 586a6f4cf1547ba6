#!/usr/bin/env bash
# Checks that every publishable crate would publish: `cargo publish --dry-run`
# packages them in dependency order (a local overlay registry stands in for
# the quark crates not on crates.io yet) and builds each packaged copy alone,
# which catches files outside a crate's directory, missing metadata and path
# dependencies without versions. Crates with `publish = false` are skipped.
# A few minutes on 2 cores (every packaged copy and its dependencies are
# built from scratch).
# `--allow-dirty`: this checks the packages, not that the tree is committed.
set -euo pipefail
cd "$(dirname "$0")/.."

# A target directory of its own, emptied first: cargo takes a registry
# package's build as final for its version, so packaged copies built by an
# earlier run (same 0.1.0, older code) would otherwise be reused as they were.
export CARGO_TARGET_DIR=target/publish-check
rm -rf "$CARGO_TARGET_DIR"
cargo publish --workspace --dry-run --allow-dirty "$@"
rm -rf "$CARGO_TARGET_DIR"
