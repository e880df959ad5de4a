#!/usr/bin/env bash
# The session's last GPU run (run from an empty directory; binaries in $BIN: harness and
# harness-base (main before the session's merges, for scripts/e2e-cut.sh); results
# under $OUT), within DEADLINE_S (default 530 s), each step while time is left, in this
# order:
#   1. scripts/e2e-cut.sh: the users' commands, this tree's binary against harness-base;
#   2. `harness run ccm dense`, one seed, the GPU index against the hybrid (the
#      strongest CPU method there);
#   3. `harness run clcb keywords`, three seeds, every engine;
#   4. `harness run ccm dense10`, one seed, as `dense`;
#   5. `harness run clcb fig3a`, three seeds, every engine.
# The recorded CSVs under $OUT/rec, packed into $OUT/rec.tgz.
set -uo pipefail
R=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${BIN:?}; OUT=${OUT:?}; mkdir -p "$OUT/rec"
START=$(date +%s); DEADLINE_S=${DEADLINE_S:-530}
left() { echo $((DEADLINE_S - ($(date +%s) - START))); }
run_step() { # name seconds command...
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
mkdir -p "$OUT/e2e"
run_step e2e 200 env BIN="$BIN" OUT="$OUT/e2e" bash "$R/scripts/e2e-cut.sh"
run_step ccm-dense 130 "$BIN/harness" run ccm dense --seeds 1 --engines gpu-index,hybrid --out "$OUT/rec"
run_step clcb-keywords 130 "$BIN/harness" run clcb keywords --seeds 3 --out "$OUT/rec"
run_step ccm-dense10 60 "$BIN/harness" run ccm dense10 --seeds 1 --engines gpu-index,hybrid --out "$OUT/rec"
run_step clcb-fig3a 90 "$BIN/harness" run clcb fig3a --seeds 3 --out "$OUT/rec"
tar czf "$OUT/rec.tgz" -C "$OUT" rec && rm -rf "$OUT/rec"
