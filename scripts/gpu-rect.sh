#!/usr/bin/env bash
# CLCB areas that are rectangles, on the GPU machine (run from the repository root with the
# release binary carried in .carry/harness; it builds nothing). About 5 minutes
# (DEADLINE_S, default 290):
#   1. compute-sanitizer memcheck and racecheck on quick GPU-vs-CPU runs of clcb/keywords,
#      whose circle and rectangle series run every kernel that now reads a rectangle
#      (loc, match_batch, grid_match, grid_batch, match_latency, grid_latency of the
#      engine, cells_match of the cell index); memcheck on quick clcb/fig5a (the move
#      kernels, which now write AreaHi) and clcb/latency (the persistent kernel, whose
#      area reads and moves changed). Every GPU answer is checked against the CPU engines.
#   2. clcb/keywords at full size (1M subscriptions, GPU_MATCH_CLCB_SIZES; circles and
#      rectangles of 0.01 % and 1 %), one seed, into results/ (the lead decides what to keep), cut at the
#      deadline.
# Everything it writes goes to $OUT: gpu.txt, check.txt, run.txt, times.txt (experiment,
# wall seconds, exit code; 124 = cut at the deadline), results.tgz (results/clcb).
set -uo pipefail
H=./.carry/harness
OUT=${OUT:-/tmp/out}
START=$(date +%s)
DEADLINE_S=${DEADLINE_S:-290}
mkdir -p "$OUT"
left() { echo $((DEADLINE_S - ($(date +%s) - START))); }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/gpu.txt"
{
    for te in memcheck:keywords:60 racecheck:keywords:60 memcheck:fig5a:25 memcheck:latency:25; do
        IFS=: read -r tool e limit <<<"$te"
        echo "== $tool: clcb/$e quick (gpu checked against the cpu engines)"
        timeout "$limit" compute-sanitizer --tool "$tool" --print-limit 20 \
            $H run clcb "$e" --quick --seeds 1 --engines gpu,gpu-cells,grid,rtree \
            --out /tmp/sanitized 2>&1 | grep -v "^ " | tail -8
        echo "exit ${PIPESTATUS[0]}"
    done
} 2>&1 | tee "$OUT/check.txt"
export GPU_MATCH_CLCB_SIZES=1000000
t=$(left)
s=$(date +%s)
if [ "$t" -lt 30 ]; then
    echo "clcb/keywords skipped 0" | tee -a "$OUT/times.txt"
else
    timeout "$t" $H run clcb keywords --seeds 1 --engines gpu,gpu-cells,grid,rtree \
        --out results >>"$OUT/run.txt" 2>&1
    rc=$?
    echo "clcb/keywords $(($(date +%s) - s)) $rc" | tee -a "$OUT/times.txt"
fi
grep -hE "^(clcb|summary|experiment)" "$OUT/run.txt" | tail -30
tar czf "$OUT/results.tgz" results/clcb
