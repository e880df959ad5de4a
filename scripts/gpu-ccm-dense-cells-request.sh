#!/usr/bin/env bash
# Mid-session GPU check of the CCM index on the dense models (`dense`: an interface per
# filter; `dense10`: ten interfaces sharing the filters): the value cells for filters that
# share interfaces (ccm_index_cells with CellTables::shared: the interfaces' bits set per
# slice and event, answered events and blocks skipped, slices taken where interfaces begin
# first) against the interface-major kernel, and the per-launch choice between every event
# on the value cells and the partition walk (IndexConfig::cells_adaptive) against each
# path alone.
#
# Binaries (stripped, release, built from branch h-dense; $BIN/COMMIT names the commit):
#     $BIN/index_check  cargo build --release -p ccm --example index_check
#     $BIN/dense_lists  cargo build --release -p ccm --example dense_lists
# Runs from any directory (nothing of the repository needed), under 150 s in all (each
# step has a timeout; the later ones share what is left):
#     BIN=/path/to/bins OUT=/some/dir bash gpu-request.sh
#
# Writes $OUT/out.tgz (and the files in it):
#   summary.txt  the lines to read first (every step's time and exit status, the kernels'
#                registers and spills, the sanitizers' summaries, every timing line);
#   ptxas.txt    ptxas -v of the crate's PTX for sm_90;
#   check.txt    index_check (1600 filters: two slices; the dense model with an interface
#                per filter, ten and 500 interfaces; x = 20, 3-5 and 10; every event on the
#                value cells, then each launch on the cells or walked as the index chooses;
#                answers against SFF's) under compute-sanitizer memcheck, then racecheck;
#   dense-1M.txt, dense10-1M.txt, lists-100k.txt  dense_lists at 1M filters (dense, then
#                dense10) and at 100k (both): x = 20, 4 (3-5), 10: the hybrid index on all
#                cores, then the GPU index in each tuning (the default: each launch on the
#                cells or walked as measured; every event on the cells; every launch walked;
#                for dense also the cells with the absent names ORed by groups of four, and
#                with an answer bitmap of 1 GiB; for dense10 the interface-major kernel, the
#                path before, and the cells in blocks of 4096 events): time per event,
#                ratio to the hybrid, device split, host split, launches on the cells alone,
#                every answer checked against the hybrid index's.
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

# 1. Registers and spills of the kernels (a few seconds).
timeout 10 "$BIN/index_check" ptx >/tmp/ccm-dense.ptx
PTXAS=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
timeout 20 "$PTXAS" -arch=sm_90 -v /tmp/ccm-dense.ptx -o /tmp/ccm-dense.cubin >"$OUT/ptxas.txt" 2>&1
grep -A3 -E "entry function '(ccm_index_cells|ccm_cells_spans|ccm_cells_lists|ccm_index_lists|ccm_index_answers|ccm_index_route)'" "$OUT/ptxas.txt" |
    grep -E "entry|registers|stack" | tee -a "$OUT/summary.txt"

# 2. The value cells under the sanitizers, answers against SFF's.
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
step check.txt memcheck 20 "$CS" --tool memcheck --print-limit 20 "$BIN/index_check" 2 small cells

# 3. The paths at 1M filters against the hybrid index (dense, the longer, first).
step dense-1M.txt dense_lists-1M-dense 50 "$BIN/dense_lists" 1000000 1 dense
step check.txt racecheck 30 "$CS" --tool racecheck --print-limit 20 "$BIN/index_check" 3 small cells
step dense10-1M.txt dense_lists-1M-dense10 35 "$BIN/dense_lists" 1000000 1 dense10
step lists-100k.txt dense_lists-100k 20 "$BIN/dense_lists" 100000 1

grep -E "differ|equal|SUMMARY|rror" "$OUT/check.txt" | sort | uniq -c | sort -rn | head -12 | tee -a "$OUT/summary.txt"
grep -hE "hybrid all cores|gpu index|equal|differ from" "$OUT/dense-1M.txt" "$OUT/dense10-1M.txt" "$OUT/lists-100k.txt" \
    >>"$OUT/summary.txt" 2>/dev/null
say "done in $(($(date +%s) - START)) s"
(cd "$OUT" && tar czf out.tgz --exclude=out.tgz ./*.txt)
