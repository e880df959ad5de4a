#!/usr/bin/env bash
# The lead's mid-session look on the GPU machine (run by .carry/mid/run.sh from an empty
# directory; binaries in $BIN: harness, harness-base, dense_bench; results under $OUT):
#   1. the cell index's split inside the harness (GPU_MATCH_INDEX_SPLIT) on CLCB Table 2,
#      beside the grid on all cores, one seed;
#   2. the HEM suite against dense_bench on the few-names models (`few`, `table1`),
#      HEM's sources in the repository's .carry/hem;
#   3. the harness's exit after a GPU command against the older binary
#      (scripts/probe/exit-check.sh).
set -uo pipefail
R=$(cd "$(dirname "$0")/../../.." && pwd)
BIN=${BIN:?}; OUT=${OUT:?}
mkdir -p "$OUT"
s=$(date +%s)
GPU_MATCH_INDEX_SPLIT=1 timeout 100 "$BIN/harness" run clcb table2 --seeds 1 --engines gpu-cells,grid \
    --out "$OUT/t2" > "$OUT/clcb-table2-split.txt" 2>&1
echo "clcb-table2-split $(( $(date +%s) - s )) s exit $?"
s=$(date +%s)
H=$BIN/harness B=$BIN/dense_bench SRC=$R/.carry/hem ONLY=few,table1 HARNESS=0 DEADLINE_S=150 \
    OUT="$OUT/hem" bash "$R/scripts/gpu-hem.sh" > "$OUT/hem-log.txt" 2>&1
echo "hem $(( $(date +%s) - s )) s"
s=$(date +%s)
H=$BIN/harness B=$BIN/harness-base timeout 60 bash "$R/scripts/probe/exit-check.sh" > "$OUT/exit-check.txt" 2>&1
echo "exit-check $(( $(date +%s) - s )) s"
