#!/usr/bin/env bash
# Mid-session GPU check of two changes to the CCM index on the dense model, where answers
# are 4,000-22,000 ids per event at 1M filters: the answer lists made by a block of warps per
# event (each warp a segment of the event's row of answer bits; before, one warp listed a
# whole row), and the filter-major kernel comparing the range form's values as i32 where
# every bound allows it exactly (ccm_index_dense_narrow: half the shared memory per filter
# and event; before, i64).
#
# Binaries (stripped, release, built from branch h-ccm-dense; $BIN/COMMIT names the commit):
#     $BIN/harness      cargo build --release -p harness
#     $BIN/index_check  cargo build --release -p ccm --example index_check
#     $BIN/dense_lists  cargo build --release -p ccm --example dense_lists
# Runs from any directory (nothing of the repository needed), under 200 s in all (each
# step has a timeout, the harness runs share what is left):
#     BIN=/path/to/bins OUT=/some/dir bash gpu-ccm-dense-request.sh
#
# Writes to $OUT:
#   summary.txt  the lines to read first (the timing lines of every step);
#   check.txt    index_check (the index's answers against SFF's: Table 1's model, the dense
#                model with 8000 filters: rows of 250 words, 8 warps per event in the lists,
#                the lists grown and listed again), plainly, then a fifth of the size under
#                compute-sanitizer memcheck and racecheck; ptxas.txt: the kernels'
#                registers, spills and shared memory;
#   lists.txt    dense_lists: dense and dense10 at 1M filters, x = 20, 4, 10: the hybrid
#                index on all cores, then the GPU index as before (list_warps 1: a warp
#                per row; narrow_ranges false: i64 compares), each change alone, both, and
#                (dense) both with the filter-major kernel's block of 512 threads: each's
#                time per event, its ratio to the hybrid's, its device time split (walk,
#                dense kernel, lists), and every answer checked against the hybrid index's;
#   dense.txt, dense10.txt  `harness run ccm dense|dense10 --seeds 1 --engines
#                gpu-index,hybrid` (every answer checked against SFF's) with the index's
#                split per workload (GPU_MATCH_INDEX_SPLIT=1); results.tgz their CSVs
#                (either run may be cut by its timeout: the split lines of the workloads
#                done are printed as they end).
set -uo pipefail
BIN=${BIN:-.}
OUT=${OUT:-out}
R=/tmp/ccm-dense-request
mkdir -p "$OUT" "$R"
START=$(date +%s)
export CUDA_MODULE_LOADING=EAGER
say() { echo "$*" | tee -a "$OUT/summary.txt"; }
left() { echo $((195 - ($(date +%s) - START))); }
step() { # log name timeout command...
    local log=$1 name=$2 t=$3 s rc
    shift 3
    s=$(date +%s)
    echo "== $name" >>"$OUT/$log"
    timeout "$t" "$@" >>"$OUT/$log" 2>&1
    rc=$?
    say "step $name: $(($(date +%s) - s)) s, exit $rc (timeout $t s)"
}
say "gpu-ccm-dense-request: $(date -u +%FT%TZ), $(nproc) cores, binaries of $(cat "$BIN/COMMIT" 2>/dev/null || echo '?')"
command -v nvidia-smi >/dev/null &&
    say "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -1)"

# 1. Answers against SFF's, plainly and under the sanitizers (about 20 s).
"$BIN/index_check" ptx >/tmp/ccm-dense.ptx
PTXAS=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
timeout 20 "$PTXAS" -arch=sm_90 -v /tmp/ccm-dense.ptx -o /tmp/ccm-dense.cubin >"$OUT/ptxas.txt" 2>&1
grep -A3 -E "entry function '(ccm_index_lists|ccm_index_answers|ccm_index_dense|ccm_index_dense_narrow)'" "$OUT/ptxas.txt" |
    grep -E "entry|registers|stack" | tee -a "$OUT/summary.txt"
step check.txt index_check 30 "$BIN/index_check" 1
step check.txt memcheck 30 compute-sanitizer --tool memcheck --print-limit 20 "$BIN/index_check" 2 small
step check.txt racecheck 40 compute-sanitizer --tool racecheck --print-limit 20 "$BIN/index_check" 3 small
grep -E "differ|equal|SUMMARY|rror" "$OUT/check.txt" | sort | uniq -c | sort -rn | head -12 | tee -a "$OUT/summary.txt"

# 2. Before and after at 1M filters, against the hybrid index (about 60 s).
step lists.txt dense_lists 70 "$BIN/dense_lists" 1000000 1
grep -E "hybrid all cores|gpu index|equal|differ from" "$OUT/lists.txt" | tee -a "$OUT/summary.txt" >/dev/null

# 3. The harness's dense experiments, the GPU index and the best CPU (hybrid), one seed.
export GPU_MATCH_INDEX_SPLIT=1
t=$(left)
t=$((t - 40 > 20 ? t - 40 : 20))
step dense.txt dense "$t" "$BIN/harness" run ccm dense --seeds 1 --engines gpu-index,hybrid --out "$R"
t=$(left)
t=$((t > 10 ? t : 10))
step dense10.txt dense10 "$t" "$BIN/harness" run ccm dense10 --seeds 1 --engines gpu-index,hybrid --out "$R"
grep -hE "index split|speedup|agree|disagree" "$OUT/dense.txt" "$OUT/dense10.txt" | head -40 >>"$OUT/summary.txt"
tar czf "$OUT/results.tgz" -C "$R" . 2>/dev/null
say "done in $(($(date +%s) - START)) s"
