#!/usr/bin/env bash
# The BBR grid of issue #30: RTT 10/30/100 ms x loss 0/0.1/1/2 % x rate
# 10/100/1000 Mbit/s through quark's emulated layer-3 link (`--net-mode link`:
# QUIC and kernel TCP cross the same impairments, one BDP of queue), one
# download per cell: quark with BBR and with CUBIC, Linux TCP with BBR and with
# CUBIC. Short transfers (the machine has 2 shared cores): SIZE_10, SIZE_100,
# SIZE_1000 per rate; a cell that does not finish within TIMEOUT seconds is
# reported as an error (goodput below size / TIMEOUT).
#
#   sudo scripts/bbr-grid.sh OUTDIR      (writes OUTDIR/{bbr,cubic}-rate*.{json,html})
#   CCS=bbr RATES=100 PROTOS=quic narrow it (CCS=bbr1: quark's v1 model alone); scripts/bbr-grid-md.py OUTDIR makes the table.
set -euo pipefail
out=${1:?usage: bbr-grid.sh OUTDIR}
quark=${QUARK:-$(dirname "$0")/../target/release/quark}
timeout=${TIMEOUT:-30}
mkdir -p "$out"
declare -A size=([10]=${SIZE_10:-5MB} [100]=${SIZE_100:-20MB} [1000]=${SIZE_1000:-50MB})
for cc in ${CCS:-bbr cubic}; do
    for rate in ${RATES:-100 10 1000}; do
        nets="rtt{10,30,100}-loss{0,0.1,1,2}-rate$rate"
        "$quark" bench -p "${PROTOS:-quic,tcp}" -s goodput --sizes "${size[$rate]}" --runs 1 --warmup 0 \
            --timeout "$timeout" --net-mode link --cc "$cc" --tcp-cc "${cc%1}" \
            --net "$nets" --json "$out/$cc-rate$rate.json" --html "$out/$cc-rate$rate.html" || true
    done
done
