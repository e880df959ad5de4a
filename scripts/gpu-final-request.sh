#!/usr/bin/env bash
# The session's last GPU run (run by .carry/mid/run.sh from an empty directory; binaries
# in $BIN: harness, harness-base (main before the session's merges, for
# scripts/e2e-cut.sh), index_check and cells_split; results under $OUT), within
# DEADLINE_S (default 420 s), each step while time is left:
#   1. compute-sanitizer memcheck and racecheck of the CCM index's kernels (index_check at
#      a fifth of its size), its answers checked against SFF's; memcheck of the cell index
#      built from columns (cells_split, keywords, 2000 subscriptions) against the grid;
#   2. `harness run ccm table2 --seeds 3`, every engine (recorded CSVs for results/ccm/);
#   3. scripts/e2e-cut.sh: the users' commands, this tree's binary against harness-base;
#   4. `harness run ccm dense`, then `dense10`, one seed, the GPU index against the hybrid
#      (the strongest CPU method there), under $OUT/rec.
set -uo pipefail
R=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${BIN:?}; OUT=${OUT:?}; mkdir -p "$OUT"
START=$(date +%s); DEADLINE_S=${DEADLINE_S:-420}
left() { echo $((DEADLINE_S - ($(date +%s) - START))); }
step() { # name seconds command...
    local name=$1 secs=$2 l; l=$(left); shift 2
    [ "$l" -lt "$secs" ] && secs=$l
    if [ "$secs" -lt 20 ]; then echo "$name skipped (no time left)" | tee -a "$OUT/times.txt"; return; fi
    local s; s=$(date +%s)
    timeout "$secs" "$@" > "$OUT/$name.txt" 2>&1
    local rc=$?
    echo "$name $(( $(date +%s) - s )) s, exit $rc" | tee -a "$OUT/times.txt"
}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/gpu.txt" 2>&1
export CUDA_MODULE_LOADING=EAGER
if [ -x "$BIN/index_check" ]; then
    step memcheck-index 40 compute-sanitizer --tool memcheck --print-limit 20 "$BIN/index_check" 2 small
    step racecheck-index 60 compute-sanitizer --tool racecheck --print-limit 20 "$BIN/index_check" 3 small
fi
if [ -x "$BIN/cells_split" ]; then
    step memcheck-cells 40 env CELLS_ROUND=2048 CELLS_LAUNCH=512 compute-sanitizer --tool memcheck \
        --print-limit 20 "$BIN/cells_split" keywords 1 2000
fi
step ccm-table2 90 "$BIN/harness" run ccm table2 --seeds 3 --out "$OUT/rec"
mkdir -p "$OUT/e2e"
step e2e 200 env BIN="$BIN" OUT="$OUT/e2e" bash "$R/scripts/e2e-cut.sh"
for e in dense dense10; do
    step "ccm-$e" 150 "$BIN/harness" run ccm "$e" --seeds 1 --engines gpu-index,hybrid --out "$OUT/rec"
done
tar czf "$OUT/rec.tgz" -C "$OUT" rec && rm -rf "$OUT/rec"
