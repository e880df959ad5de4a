#!/usr/bin/env bash
# GPU check of the CCM index's pipeline (staging of launch k + 1 beside the queuing of
# launch k and the collection of k - 1, three staging areas; a batch's dictionaries
# translated once per batch, not per call; the ramp of a call's launches tunable; heavy
# walks with several warps per event). Runs on the GPU host from any directory, with the stripped release
# binaries in $BIN: harness, index_check and index_pipeline (built by
# `cargo build --release -p harness` and
# `cargo build --release -p ccm --example index_check --example index_pipeline`).
# Builds nothing; writes under $OUT; at most ~195 s (each step has a timeout):
#   1. index_check: the index's answers against SFF's (Table 1's model uniform and Zipf,
#      the dense model; every event on the walk, then every event dense; calls of many
#      launches ramped from 37 events by 1.5), plainly;
#   2. ccm/table2 at full size, one seed: the GPU index and the CPU engines for the best
#      CPU (sff, index, hybrid), with the index's split (GPU_MATCH_INDEX_SPLIT=1);
#   3. index_pipeline table2: Table 2's rows 1 and 4 timed as the harness times the
#      index, for several tunings (first launch, growth, warps per event on heavy
#      walks, walk block, the kernel for dense events);
#   4. index_check on a fifth of the size under compute-sanitizer memcheck, then racecheck.
# Writes under $OUT: gpu.txt, check.txt, run.txt, tune.txt, sanitize.txt, times.txt, table2/.
set -uo pipefail
BIN=${BIN:?the folder of the binaries}
OUT=${OUT:-/tmp/out}
R="$OUT/table2"
mkdir -p "$OUT" "$R"
export CUDA_MODULE_LOADING=EAGER
{
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
    echo "branch h-ccm-gpu; binaries:"
    ls -l "$BIN"
    nproc
    date -u
} >"$OUT/gpu.txt" 2>&1
step() { # log name timeout command...
    local log=$1 name=$2 t=$3 s rc
    shift 3
    s=$(date +%s)
    echo "== $name" >>"$OUT/$log"
    timeout "$t" "$@" >>"$OUT/$log" 2>&1
    rc=$?
    echo "$name $(($(date +%s) - s)) s, exit $rc" | tee -a "$OUT/times.txt"
}
step check.txt index_check 25 "$BIN/index_check" 1
export GPU_MATCH_INDEX_SPLIT=1
step run.txt table2 50 "$BIN/harness" run ccm table2 --seeds 1 \
    --engines gpu-index,sff,index,hybrid --out "$R"
step tune.txt index_pipeline 45 "$BIN/index_pipeline" 1 table2
step sanitize.txt memcheck 35 compute-sanitizer --tool memcheck --print-limit 20 "$BIN/index_check" 2 small
step sanitize.txt racecheck 35 compute-sanitizer --tool racecheck --print-limit 20 "$BIN/index_check" 3 small
{
    grep -hE "differ|equal|SUMMARY|rror" "$OUT/check.txt" "$OUT/sanitize.txt" | sort | uniq -c | sort -rn | head -30
    grep -hE "index split|row \(|speedup|agree|recorded|this run" "$OUT/run.txt"
    grep -h "table 2 row" "$OUT/tune.txt"
} >"$OUT/summary.txt" 2>&1
cat "$OUT/summary.txt"
