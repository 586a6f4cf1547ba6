#!/usr/bin/env bash
# Builds a static quark (x86_64-unknown-linux-musl) and the image
# quark:VERSION from deploy/Containerfile with podman.
#
#   deploy/build-image.sh            # the release profile (fat LTO: slow)
#   QUARK_IMAGE_FAST=1 deploy/build-image.sh   # thin LTO, 16 codegen units
#
# Needs the rustup target (rustup target add x86_64-unknown-linux-musl);
# installs musl-tools (aws-lc's and ring's C parts), podman and runc with apt
# when run as root. Prints the image name last.
set -euo pipefail
# shellcheck source=deploy/podman-env.sh
source "$(dirname "$0")/podman-env.sh"
cd "$repo_dir"

target=x86_64-unknown-linux-musl
apt_need musl-gcc musl-tools
apt_need podman podman
apt_need runc runc
if ! rustup target list --installed 2>/dev/null | grep -qx "$target"; then
    echo "error: the Rust target $target is missing: rustup target add $target" >&2
    exit 1
fi

# The C parts compile with musl's wrapper; no debug info in the image and
# symbols stripped (backtraces keep function names only from the symbol
# table, so a crash report names less; build locally to debug).
export CC_x86_64_unknown_linux_musl=musl-gcc
export CARGO_PROFILE_RELEASE_DEBUG=0
export CARGO_PROFILE_RELEASE_STRIP=symbols
export CARGO_INCREMENTAL=0
if [ -n "${QUARK_IMAGE_FAST:-}" ]; then
    export CARGO_PROFILE_RELEASE_LTO=thin CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16
fi
cargo build --release --locked -p quark-cli --target "$target"
bin=target/$target/release/quark

# Static: no program interpreter (ld.so) in the ELF headers.
if readelf -l "$bin" | grep -q 'INTERP'; then
    echo "error: $bin is dynamically linked" >&2
    exit 1
fi
"$bin" --version

# A build context of the binary and an empty /tmp only.
context=target/deploy-image
rm -rf "$context"
mkdir -p "$context/root/tmp"
chmod 1777 "$context/root/tmp"
tar -C "$context/root" --numeric-owner --owner=0 --group=0 --mtime=@0 -cf "$context/rootfs.tar" tmp
cp "$bin" "$context/quark"
version=$(quark_version)
podman build --quiet -f deploy/Containerfile --build-arg VERSION="$version" \
    -t "quark:$version" "$context" >/dev/null
podman image inspect --format '{{.Size}}' "quark:$version" \
    | awk -v i="quark:$version" '{ printf "built %s (%.1f MB)\n", i, $1 / 1e6 }' >&2
echo "quark:$version"
