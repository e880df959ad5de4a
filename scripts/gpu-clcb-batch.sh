#!/usr/bin/env bash
# CLCB from a flat batch of events, on the GPU machine (run from the repository root with
# the release binary carried in .carry/harness; it builds nothing). About 6 minutes:
#   1. compute-sanitizer memcheck and racecheck on quick GPU-vs-CPU runs of the paths that
#      now read the batch: clcb/fig3a (the engine's batched and grid-batched launches,
#      match_batch + grid_batch + zip_batch, and the cell index's cells_match, with
#      integer events) and memcheck on clcb/keywords (the same with strings laid out
#      inline); every GPU answer is checked against the CPU engines;
#   2. full size, one seed, into results/ (the lead decides what to keep): clcb/table2,
#      clcb/keywords at 1M subscriptions, Figs. 3a and 4d at 1M, then the other panels of
#      Figs. 3-4 at 1M while time is left (GPU_MATCH_CLCB_SIZES=1000000).
# Everything it writes goes to $OUT: check.txt, run.txt, times.txt (experiment, wall
# seconds, exit code; 124 = cut at the deadline), results.tgz (results/clcb).
set -uo pipefail
H=./.carry/harness
OUT=${OUT:-/tmp/out}
START=$(date +%s)
DEADLINE_S=${DEADLINE_S:-360}
mkdir -p "$OUT"
left() { echo $((DEADLINE_S - ($(date +%s) - START))); }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/gpu.txt"
{
    for te in memcheck:fig3a racecheck:fig3a memcheck:keywords; do
        tool=${te%%:*} e=${te#*:}
        echo "== $tool: clcb/$e quick (gpu checked against the cpu engines)"
        timeout 100 compute-sanitizer --tool "$tool" --print-limit 20 \
            $H run clcb "$e" --quick --seeds 1 --engines gpu,gpu-cells,grid,rtree \
            --out /tmp/sanitized 2>&1 | grep -v "^ " | tail -8
        echo "exit ${PIPESTATUS[0]}"
    done
} 2>&1 | tee "$OUT/check.txt"
export GPU_MATCH_CLCB_SIZES=1000000
for e in table2 keywords fig3a fig4d fig3b fig4b fig3c fig4c fig3d fig4a; do
    t=$(left)
    if [ "$t" -lt 30 ]; then
        echo "clcb/$e skipped 0" | tee -a "$OUT/times.txt"
        continue
    fi
    # The batched engines and their yardstick (the grid on one and all cores, from the
    # batch and, on one core, from heap events); table2 keeps every engine.
    engines=(--engines gpu,gpu-cells,grid,rtree)
    [ "$e" = table2 ] && engines=()
    s=$(date +%s)
    timeout "$t" $H run clcb "$e" --seeds 1 "${engines[@]}" --out results >>"$OUT/run.txt" 2>&1
    rc=$?
    echo "clcb/$e $(($(date +%s) - s)) $rc" | tee -a "$OUT/times.txt"
done
grep -hE "^(clcb|summary|experiment)" "$OUT/run.txt" | tail -30
tar czf "$OUT/results.tgz" results/clcb
