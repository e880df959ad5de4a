#!/usr/bin/env bash
# The session's last GPU run (run by .carry/mid/run.sh from an empty directory; binaries
# in $BIN: harness and harness-base for scripts/e2e-cut.sh, cells_split; results under
# $OUT), within DEADLINE_S (default 420 s):
#   1. compute-sanitizer memcheck of the cell index (cells_split, keywords, 2000
#      subscriptions), answers checked against the grid;
#   2. scripts/e2e-cut.sh: the users' commands, this tree's binary against harness-base;
#   3. `harness run xml paths`, one seed, gpu-dfa against the lazy DFA on all cores
#      (the check of gpu-dfa's defaults; not a recording: results/ holds three seeds);
#   4. `harness run clcb fig4d`, `fig4c`, then `fig4b`, one seed, every engine, each while
#      time is left (recorded CSVs for results/clcb/).
set -uo pipefail
R=$(cd "$(dirname "$0")/../../.." && pwd)
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
step memcheck-cells 40 env CELLS_ROUND=2048 CELLS_LAUNCH=512 compute-sanitizer --tool memcheck --print-limit 20 \
    "$BIN/cells_split" keywords 1 2000
mkdir -p "$OUT/e2e"
step e2e 215 env BIN="$BIN" OUT="$OUT/e2e" bash "$R/scripts/e2e-cut.sh"
step xml-paths 60 "$BIN/harness" run xml paths --seeds 1 --engines gpu-dfa,lazy-dfa-ahead-mc --out "$OUT/paths"
for f in fig4d fig4c fig4b; do
    step "clcb-$f" 60 "$BIN/harness" run clcb "$f" --seeds 1 --out "$OUT/rec"
done
