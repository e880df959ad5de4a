#!/usr/bin/env bash
# CLCB rectangles (branch h-rects) against main on the GPU machine, paired: the same
# experiments with main's harness ($BIN/harness-main, built from 76cfabc) and this
# branch's ($BIN/harness, built from 284776a), one after the other, so that the circles' workloads are
# compared on one machine within minutes instead of against recordings of other days.
# Builds nothing; runs from any directory; writes under $OUT; about 190 s in all
# (DEADLINE_S, default 195; a step that would not fit is skipped and says so):
#   1. clcb/table2, one seed, main then branch (table2-main.csv, table2-branch.csv);
#   2. clcb/keywords at 1M subscriptions (GPU_MATCH_CLCB_SIZES), one seed, the engines
#      main's recording used (gpu, gpu-cells, grid, rtree), main (circles only) then branch
#      (circles and the `rect` series) (keywords-main.csv, keywords-branch.csv);
#   3. compute-sanitizer memcheck on quick clcb/keywords with the branch (circles and
#      rectangles of both areas, every kernel series checked against the CPU engines).
# times.txt: step, wall seconds, exit code (124 = cut by its timeout).
set -uo pipefail
BIN=${BIN:?BIN must name the folder of the binaries}
OUT=${OUT:-/tmp/out}
DEADLINE_S=${DEADLINE_S:-195}
START=$(date +%s)
mkdir -p "$OUT"
left() { echo $((DEADLINE_S - ($(date +%s) - START))); }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv >"$OUT/gpu.txt" 2>&1
# step NAME NEEDED_S LIMIT_S CMD...: runs CMD (output in NAME.txt) if NEEDED_S seconds are left.
step() {
    local name=$1 need=$2 limit=$3
    shift 3
    local t s rc
    t=$(left)
    if [ "$t" -lt "$need" ]; then
        echo "$name skipped-$t-s-left 0" >>"$OUT/times.txt"
        return
    fi
    [ "$limit" -gt "$t" ] && limit=$t
    s=$(date +%s)
    timeout "$limit" "$@" >"$OUT/$name.txt" 2>&1
    rc=$?
    echo "$name $(($(date +%s) - s)) $rc" >>"$OUT/times.txt"
}
for v in main branch; do
    h=$BIN/harness
    [ "$v" = main ] && h=$BIN/harness-main
    step "table2-$v" 40 70 "$h" run clcb table2 --seeds 1 --out "/tmp/rects-$v"
    cp "/tmp/rects-$v/clcb/table2.csv" "$OUT/table2-$v.csv" 2>/dev/null
done
for v in main branch; do
    h=$BIN/harness
    [ "$v" = main ] && h=$BIN/harness-main
    step "keywords-$v" 15 40 env GPU_MATCH_CLCB_SIZES=1000000 \
        "$h" run clcb keywords --seeds 1 --engines gpu,gpu-cells,grid,rtree --out "/tmp/rects-$v"
    cp "/tmp/rects-$v/clcb/keywords.csv" "$OUT/keywords-$v.csv" 2>/dev/null
done
step memcheck 20 45 compute-sanitizer --tool memcheck --print-limit 20 \
    "$BIN/harness" run clcb keywords --quick --seeds 1 --engines gpu,gpu-cells,grid,rtree \
    --out /tmp/rects-sanitized
cat "$OUT/times.txt"
