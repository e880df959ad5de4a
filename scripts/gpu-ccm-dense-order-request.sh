#!/usr/bin/env bash
# Mid-session GPU check of the CCM index on the dense models at 1M filters (branch
# h-dense): the value cells in name order (ccm_index_cells_sorted: a slice skipped by an
# event that lacks a name all its filters constrain; answers set by rank) as a third path
# of each launch's choice, against the paths before it (`default, no name order`, `cells
# every event, interface order`), on `dense` x = 4 (3-5 names); and, on `dense10`, the
# shared cells' blocks that return at once when every event of the launch has their
# slice's interface (a count per interface and launch).
#
# Binaries (stripped, release, built from branch h-dense; $BIN/COMMIT names the commit):
#     $BIN/harness      cargo build --release -p harness
#     $BIN/dense_lists  cargo build --release -p ccm --example dense_lists
#     $BIN/index_check  cargo build --release -p ccm --example index_check
# Runs from any directory (nothing of the repository needed), under 150 s in all (each
# step has a timeout, cut to what is left; the most important first):
#     BIN=/path/to/bins OUT=/some/dir bash gpu-request.sh
#
# Writes $OUT/out.tgz (and the files in it):
#   summary.txt   the lines to read first (each step's time and exit status, registers,
#                 the sanitizer's summary, every timing line);
#   ptxas.txt     ptxas -v of the crate's PTX for sm_90;
#   dense4.txt    dense_lists 1M dense x = 4: the hybrid on all cores, then the GPU index's
#                 tunings (default: three paths; every event on the cells in name order;
#                 the default without the name order; every event on the cells in name
#                 order; every event on the cells in interface order; the walk; every event
#                 on the cells in name order with the answers counted by the cells
#                 (sorted_counts), in blocks of 2048 events, in blocks of 1024 threads with
#                 200 KiB of shared memory), each answer checked against the hybrid's;
#   dense10.txt   dense_lists 1M dense10 x = 10 (default, every event on the cells, walk,
#                 interface-major);
#   check.txt     index_check 2 small cells under compute-sanitizer memcheck (every cells
#                 kernel: interface order, name order, shared interfaces), then racecheck;
#   h-dense10.txt harness run ccm dense10 at 1M, x = 10, one seed, gpu-index and hybrid
#                 (GPU_MATCH_INDEX_SPLIT: the index's device split);
#   dense-more.txt dense_lists 1M dense x = 20 and 10 (the other points, not to be slower;
#                 what the time left allows).
set -uo pipefail
BIN=${BIN:-.}
OUT=${OUT:-out}
mkdir -p "$OUT"
START=$(date +%s)
export CUDA_MODULE_LOADING=EAGER
say() { echo "$*" | tee -a "$OUT/summary.txt"; }
left() { echo $((146 - ($(date +%s) - START))); }
step() { # log name timeout command... (the timeout cut to what is left)
    local log=$1 name=$2 t=$3 s rc l
    shift 3
    l=$(left)
    [ "$t" -gt "$l" ] && t=$l
    if [ "$t" -lt 3 ]; then
        say "step $name: skipped (no time left)"
        return
    fi
    s=$(date +%s)
    echo "== $name" >>"$OUT/$log"
    timeout "$t" "$@" >>"$OUT/$log" 2>&1
    rc=$?
    say "step $name: $(($(date +%s) - s)) s, exit $rc (timeout $t s)"
}
say "gpu-request (dense): $(date -u +%FT%TZ), $(nproc) cores, binaries of $(cat "$BIN/COMMIT" 2>/dev/null || echo '?')"
command -v nvidia-smi >/dev/null &&
    say "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -1)"

# 1. Registers and spills of the cells' kernels (a few seconds).
timeout 10 "$BIN/index_check" ptx >/tmp/ccm-dense.ptx
PTXAS=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
timeout 20 "$PTXAS" -arch=sm_90 -v /tmp/ccm-dense.ptx -o /tmp/ccm-dense.cubin >"$OUT/ptxas.txt" 2>&1
grep -A3 -E "entry function '(ccm_index_cells|ccm_index_cells_sorted|ccm_index_cells_shared|ccm_cells_counts)'" "$OUT/ptxas.txt" |
    grep -E "entry|registers|stack" | tee -a "$OUT/summary.txt"

# 2. dense x = 4 at 1M: the name order against the paths before it.
step dense4.txt dense_lists-dense-4 60 "$BIN/dense_lists" 1000000 1 dense 4
# 3. dense10 x = 10 at 1M: the blocks that return at once.
step dense10.txt dense_lists-dense10 25 "$BIN/dense_lists" 1000000 1 dense10 10
# 4. The cells' kernels under memcheck, answers against SFF's.
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
step check.txt memcheck 25 "$CS" --tool memcheck --print-limit 20 "$BIN/index_check" 2 small cells
# 5. The harness's own measure of dense10 at 1M, x = 10 (one seed).
step h-dense10.txt harness-dense10 25 env GPU_MATCH_DENSE_SIZES=1000000 GPU_MATCH_DENSE_XS=10 GPU_MATCH_INDEX_SPLIT=1 \
    "$BIN/harness" run ccm dense10 --seeds 1 --engines gpu-index,hybrid --out "$OUT/rec"
# 6. The other dense points (not to be slower), then racecheck, with what is left.
step dense-more.txt dense_lists-dense-20-10 40 "$BIN/dense_lists" 1000000 1 dense 20,10
step check.txt racecheck 25 "$CS" --tool racecheck --print-limit 20 "$BIN/index_check" 3 small cells

grep -E "differ|equal|SUMMARY|rror" "$OUT/check.txt" | sort | uniq -c | sort -rn | head -12 | tee -a "$OUT/summary.txt"
grep -hE "hybrid all cores|gpu index|equal|differ from|index split|best CPU|speedup" \
    "$OUT/dense4.txt" "$OUT/dense10.txt" "$OUT/h-dense10.txt" "$OUT/dense-more.txt" >>"$OUT/summary.txt" 2>/dev/null
say "done in $(($(date +%s) - START)) s"
(cd "$OUT" && tar czf out.tgz --exclude=out.tgz ./*.txt rec 2>/dev/null)
