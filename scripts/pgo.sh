#!/usr/bin/env bash
# A profile-guided release build of quark: target/pgo/.../release/quark.
#
#   scripts/pgo.sh            # build instrumented, train, merge, build optimised
#   TRAIN_ONLY=1 ...          # stop after the profile (target/pgo-data/merged.profdata)
#
# Why: a request's path through quark runs ~31 000 instructions and misses
# ~1 800 lines of code in a simulated 32 KiB L1i (CACHE=1
# scripts/instructions.sh): hot code sits among cold code, each line used for
# a few instructions. After a sleep on a VM that halts idle CPUs, those lines
# come back from further away, which is most of why quark's two-CPU request
# cost more than tcp+tls's (BENCHMARKS.md). LLVM, told which branches run,
# lays hot blocks out together and cold ones aside: 1 250 misses instead.
#
# The training is the lab itself on loopback, every protocol it links (quark,
# quinn, s2n-quic, tcp, tcp+tls, hyper, h3): the binary the benchmarks run holds
# all of them, and all of them are optimised with the same profile, so ratios
# between them stay fair. Needs the `llvm-tools` rustup component (installed
# here if missing) for `llvm-profdata` of rustc's own LLVM version.
set -euo pipefail
cd "$(dirname "$0")/.."

host=$(rustc -vV | sed -n 's/^host: //p')
sysroot=$(rustc --print sysroot)
profdata="$sysroot/lib/rustlib/$host/bin/llvm-profdata"
if [ ! -x "$profdata" ]; then
    rustup component add llvm-tools >/dev/null
fi
[ -x "$profdata" ] || { echo "error: no llvm-profdata at $profdata" >&2; exit 1; }

data=$PWD/target/pgo-data
rm -rf "$data"
mkdir -p "$data"

# `--target` keeps RUSTFLAGS off build scripts and proc macros.
echo "== instrumented build" >&2
QUARK_PGO=instrumented RUSTFLAGS="-Cprofile-generate=$data" \
    cargo build --release -p quark-cli --target "$host" --target-dir target/pgo-gen
gen=target/pgo-gen/$host/release/quark

echo "== training" >&2
protos=quic,quinn,s2n-quic,tcp,tcp+tls
"$gen" bench -p "$protos" -s persistent,rps,ephemeral --sizes 2KiB --requests 20000 >&2
"$gen" bench -p "$protos" -s persistent --pin 0,0 --sizes 2KiB --requests 20000 >&2
"$gen" bench -p "$protos" -s goodput --sizes 200MB --runs 2 >&2
"$gen" bench -p h3,h3-quinn,http2+tls,http1+tls -s rps --sizes 2KiB --requests 10000 >&2

"$profdata" merge -o "$data/merged.profdata" "$data"/*.profraw
echo "profile: $data/merged.profdata" >&2
[ -z "${TRAIN_ONLY:-}" ] || exit 0

echo "== optimised build" >&2
# The results' "build" entry says "release, pgo optimised" (quark-lab's
# `versions`).
QUARK_PGO=optimised RUSTFLAGS="-Cprofile-use=$data/merged.profdata -Cllvm-args=-no-pgo-warn-mismatch" \
    cargo build --release -p quark-cli --target "$host" --target-dir target/pgo
echo "built: target/pgo/$host/release/quark" >&2
