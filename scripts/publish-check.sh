#!/usr/bin/env bash
# Checks that every publishable crate would publish: `cargo publish --dry-run`
# packages them in dependency order (a local overlay registry stands in for
# the quark crates not on crates.io yet) and builds each packaged copy alone,
# which catches files outside a crate's directory, missing metadata and path
# dependencies without versions. Crates with `publish = false` are skipped.
# About 1.5 minutes on 2 cores (the packaged copies build with the plain dev
# profile, so their dependencies are built once more, in target/package).
# `--allow-dirty`: this checks the packages, not that the tree is committed.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo publish --workspace --dry-run --allow-dirty "$@"
