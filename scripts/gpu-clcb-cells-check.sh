#!/usr/bin/env bash
# The cell index (clcb::cells) with its host pipeline moved to the device, on the GPU
# machine: binaries in $BIN (harness, cells_split), everything written under $OUT.
# At most ~200 s in all (each step under `timeout`, cut to the time left).
#   1. cells_split: Table 2's default scenario (250k subscriptions; launches of at most
#      32768, 16384 and 65536 events) and `keywords` at 1M subscriptions with 0.01%
#      regions: ns per event, the split, the grid on all cores beside it, answers
#      checked against the grid on every event of the stream;
#   2. compute-sanitizer memcheck and racecheck of cells_encode / cells_match /
#      cells_counts on small workloads (2000 subscriptions, integers; keywords, strings),
#      answers checked against the grid;
#   3. harness run clcb table2, keywords and fig3a (1M subscriptions), one seed, engines
#      gpu-cells and grid (the yardstick), with the cell index's split on stderr.
set -uo pipefail
BIN=${BIN:?BIN must name the directory of the binaries}
OUT=${OUT:?OUT must name the output directory}
START=$(date +%s)
DEADLINE_S=${DEADLINE_S:-195}
mkdir -p "$OUT/results"
left() { echo $((DEADLINE_S - ($(date +%s) - START))); }
# `cap S`: S seconds, or what is left if less.
cap() { local l; l=$(left); [ "$l" -lt "$1" ] && echo "$l" || echo "$1"; }
step() { # name seconds command...
    local name=$1 secs; secs=$(cap "$2"); shift 2
    if [ "$secs" -lt 5 ]; then echo "$name skipped (no time left)" | tee -a "$OUT/times.txt"; return; fi
    local s; s=$(date +%s)
    timeout "$secs" "$@" >"$OUT/$name.txt" 2>&1
    local rc=$?
    echo "$name $(($(date +%s) - s)) s, exit $rc" | tee -a "$OUT/times.txt"
}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv >"$OUT/gpu.txt" 2>&1
nproc >>"$OUT/gpu.txt"
S=$BIN/cells_split
H=$BIN/harness
step split-table2 40 env CELLS_LAUNCH=32768,16384,65536 "$S"
step split-keywords 35 "$S" keywords 0.01
step memcheck 20 env CELLS_ROUND=2048 CELLS_LAUNCH=512 compute-sanitizer --tool memcheck --print-limit 20 "$S" 2000
step memcheck-keywords 20 env CELLS_ROUND=2048 CELLS_LAUNCH=512 compute-sanitizer --tool memcheck --print-limit 20 "$S" keywords 1 2000
step racecheck 25 env CELLS_ROUND=1024 CELLS_LAUNCH=512 compute-sanitizer --tool racecheck --print-limit 20 "$S" keywords 1 2000
export GPU_MATCH_INDEX_SPLIT=1 GPU_MATCH_CLCB_SIZES=1000000
for e in table2 keywords fig3a; do
    step "harness-$e" 60 "$H" run clcb "$e" --seeds 1 --engines gpu-cells,grid --out "$OUT/results"
done
grep -h "ns/event\|agree\|equal\|ERROR SUMMARY\|RACECHECK SUMMARY\|Error\|error" "$OUT"/split-*.txt "$OUT"/memcheck*.txt "$OUT"/racecheck.txt 2>/dev/null | head -60 >"$OUT/summary.txt"
grep -h "cells split\|batched\|best CPU\|grid all cores" "$OUT"/harness-*.txt 2>/dev/null | head -40 >>"$OUT/summary.txt"
exit 0
