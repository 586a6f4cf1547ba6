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
# Cargo also extracts the overlay registry's packages under CARGO_HOME, keyed by
# the overlay's path and the version alone, and reuses an extraction it finds:
# a checkout at a fixed path (a CI machine's) would build this run's crates
# against an earlier run's sources. Overlay registries are the sources whose
# directory names start with '-' (they have no host name).
cargo_home="${CARGO_HOME:-$HOME/.cargo}"
for name in $(sed -n 's/^name = "\(.*\)"$/\1/p' crates/*/Cargo.toml); do
    rm -rf "$cargo_home"/registry/src/-*/"$name"-[0-9]* "$cargo_home"/registry/cache/-*/"$name"-[0-9]*.crate
done
cargo publish --workspace --dry-run --allow-dirty "$@"
rm -rf "$CARGO_TARGET_DIR"
