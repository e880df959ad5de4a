#!/usr/bin/env bash
# Records harness experiments on the GPU machine (run from an empty directory; the
# harness binary in $BIN; results under $OUT): each `paper:experiment` of RUNS with
# SEEDS seeds (default 3), one after another while DEADLINE_S (default 540 s) leaves
# time, each under its own timeout (STEP_S, default 200 s); the recorded CSVs under
# $OUT/results, each run's output in $OUT/<paper>-<experiment>.txt, the times in
# $OUT/times.txt; everything packed into $OUT/record.tgz (the device tool brings back
# few files).
#
#     BIN=dir OUT=dir RUNS="ccm:fig6 clcb:keywords" bash scripts/gpu-record.sh
set -uo pipefail
BIN=${BIN:?}; OUT=${OUT:?}; RUNS=${RUNS:?}
mkdir -p "$OUT/rec"
. "$(dirname "${BASH_SOURCE[0]}")/step-lib.sh"
START=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/rec/gpu.txt" 2>&1
nproc > "$OUT/rec/cores.txt"
export CUDA_MODULE_LOADING=EAGER
for r in $RUNS; do
    paper=${r%%:*} exp=${r#*:}
    left=$(( ${DEADLINE_S:-540} - ($(date +%s) - START) ))
    limit=$(( left < ${STEP_S:-200} ? left : ${STEP_S:-200} ))
    if [ "$limit" -lt 20 ]; then echo "$paper-$exp skipped (no time left)" >> "$OUT/rec/times.txt"; continue; fi
    OUT=$OUT/rec step "$paper-$exp" "$limit" "$BIN/harness" run "$paper" "$exp" --seeds "${SEEDS:-3}" \
        --out "$OUT/rec/results" > "$OUT/rec/$paper-$exp.txt" 2>&1
done
tar czf "$OUT/record.tgz" -C "$OUT" rec && rm -rf "$OUT/rec"
