# Sourced by deploy/build-image.sh and deploy/run-two-agents.sh: installs what
# they need on a Debian machine (as root) and points podman at
# deploy/podman/containers.conf unless CONTAINERS_CONF is set already.
# shellcheck shell=bash

deploy_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_dir=$(dirname "$deploy_dir")
export CONTAINERS_CONF=${CONTAINERS_CONF:-$deploy_dir/podman/containers.conf}

# apt_need CMD PACKAGE...: installs the packages when CMD is missing.
apt_need() {
    local cmd=$1
    shift
    command -v "$cmd" >/dev/null 2>&1 && return 0
    if [ "$(id -u)" != 0 ]; then
        echo "error: $cmd is missing; install: apt-get install $*" >&2
        return 1
    fi
    echo "installing $* ..." >&2
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

# The workspace version, which tags the image.
quark_version() {
    sed -n 's/^version = "\(.*\)"/\1/p' "$repo_dir/Cargo.toml" | head -n 1
}
