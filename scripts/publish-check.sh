#!/usr/bin/env bash
# Checks that every publishable crate would publish: `cargo package` makes the
# .crate files (catching missing metadata and path dependencies without
# versions), then one `cargo check` compiles the packaged copies alone, in a
# workspace of their own where each quark crate's registry dependency is
# patched to its packaged copy. That catches files outside a crate's
# directory and anything the package leaves out.
#
# `cargo publish --dry-run` does the same but builds every packaged copy and
# its dependencies from scratch, one crate after another (8.5 minutes of a
# 30-minute CI on 2 cores); one check of them all together takes about one.
# Crates with `publish = false` are skipped.
# `--allow-dirty`: this checks the packages, not that the tree is committed.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

crates=()
for toml in crates/*/Cargo.toml; do
    grep -q '^publish = false' "$toml" && continue
    crates+=("$(sed -n 's/^name = "\(.*\)"$/\1/p' "$toml" | head -1)")
done
pkg_args=()
for name in "${crates[@]}"; do pkg_args+=(-p "$name"); done

# A directory of its own, emptied first, so nothing of an earlier run's
# packages is taken for this one's.
out=$root/target/publish-check
rm -rf "$out"
mkdir -p "$out/src"
CARGO_TARGET_DIR=$out/package-target \
    cargo package --no-verify --allow-dirty "${pkg_args[@]}" "$@"

version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"$/\1/p' Cargo.toml)
{
    echo '[workspace]'
    echo 'resolver = "3"'
    printf 'members = ['
    for name in "${crates[@]}"; do printf '"src/%s-%s", ' "$name" "$version"; done
    echo ']'
    echo '[patch.crates-io]'
    for name in "${crates[@]}"; do echo "$name = { path = \"src/$name-$version\" }"; done
} > "$out/Cargo.toml"
for name in "${crates[@]}"; do
    tar -mxzf "$out/package-target/package/$name-$version.crate" -C "$out/src"
done
# The workspace's lock file pins the same dependency versions the tests use.
cp Cargo.lock "$out/"

# The main target directory: dependencies already checked by clippy are reused.
(cd "$out" && CARGO_TARGET_DIR=$root/target cargo check --workspace 2>&1) \
    || { echo "publish-check: a packaged crate does not build alone" >&2; exit 1; }
rm -rf "$out"
echo "publish-check: ${#crates[@]} crates package and build alone (${crates[*]})"
