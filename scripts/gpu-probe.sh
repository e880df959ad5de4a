#!/usr/bin/env bash
# A first look on the GPU machine (not recorded into results/): the experiments that
# carry the speed targets at full size with one seed, and an Nsight Compute per-kernel
# duration summary of one DDM experiment. Run by the device tool with the release
# binary carried in .carry/harness; everything lands in $OUT.
set -uo pipefail
H=./.carry/harness
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv
$H selftest 2>&1 | tail -3
for e in ${PROBE_EXPERIMENTS:-ccm/table2 clcb/table2 xml/fig7 ddm/fig5_7 ddm/fig6_8}; do
    s=$(date +%s)
    $H run ${e%/*} ${e#*/} --seeds 1 --out "$OUT/r" >>"$OUT/probe.txt" 2>&1
    echo "$e $(($(date +%s) - s))s exit $?"
done
if [ -n "${PROBE_NCU:-}" ]; then
    timeout 200 ncu --clock-control none --print-summary per-kernel \
        --metrics gpu__time_duration.sum $PROBE_NCU >"$OUT/ncu.txt" 2>&1
    grep -E "^  [a-z_]+|gpu__time_duration" "$OUT/ncu.txt" | head -60
fi
tar czf "$OUT/probe.tgz" -C "$OUT" r probe.txt
