#!/usr/bin/env bash
# Bulk and rps, the build before the hardening (89098a8) and after, taking
# turns, quark and tcp+tls in every run: BASE=path/to/old/quark NEW=path/to/new/quark ./run.sh
set -euo pipefail
cd "$(dirname "$0")"
for i in 1 2 3 4 5 6; do
    for build in base new; do
        bin=$BASE; [ $build = new ] && bin=$NEW
        "$bin" bench -p quic,tcp+tls -s goodput --sizes 2GB --runs 3 --json goodput-$build-$i.json > /dev/null
        "$bin" bench -p quic,tcp+tls -s rps --requests 200000 --json rps-$build-$i.json > /dev/null
    done
done
