#!/usr/bin/env bash
# Mid-session GPU check of the CCM index's value cells (ccm_index_cells: per name, cells of
# values with a bitset of the filters failing in each, a block's slice of 1024 filters kept
# in shared memory, a warp per event; the device form of the CPU bit index) for the dense
# model's dense events, against the filter-major kernel (ccm_index_dense_narrow).
#
# Binaries (stripped, release, built from branch h-ccm-dense; $BIN/COMMIT names the commit):
#     $BIN/index_check  cargo build --release -p ccm --example index_check
#     $BIN/dense_lists  cargo build --release -p ccm --example dense_lists
# Runs from any directory (nothing of the repository needed), under 200 s in all (each
# step has a timeout; the later ones share what is left):
#     BIN=/path/to/bins OUT=/some/dir bash gpu-ccm-cells-request.sh
#
# Writes to $OUT:
#   summary.txt  the lines to read first (every step's time and exit status, the kernels'
#                registers and spills, the sanitizers' summaries, every timing line);
#   ptxas.txt    ptxas -v of the crate's PTX for sm_90 (registers, spills, shared memory);
#   check.txt    index_check on the dense model with an interface per filter (1600 filters:
#                two slices; x = 20 and 3-5; every event on the value cells; answers against
#                SFF's) under compute-sanitizer memcheck, then racecheck;
#   lists-1M.txt, lists-100k.txt  dense_lists at 1M and 100k filters: dense and dense10
#                at x = 20, 4 (3-5), 10: the hybrid index on all cores, then the GPU index:
#                for dense the filter-major kernel (cells off, the path before), the value
#                cells (default: 512 threads, 112 KiB of shared memory, 1024 events per block,
#                every event on the cells, the lists from the cells' counts per slice:
#                ccm_cells_spans + ccm_cells_lists), the cells with the lists from the rows
#                (ccm_index_lists, as before), with the walk kept below an eighth of the
#                filters, with 1024 threads and 200 KiB, with 256 events per block; for
#                dense10 the default (no cells: interfaces of many filters). Each: time per
#                event, ratio to the hybrid, device split (walk, dense kernel, lists), and
#                every answer checked against the hybrid index's;
#   ncu.txt      (if time is left) Nsight Compute on a few launches of the cells' kernels
#                (ccm_index_cells, ccm_cells_spans, ccm_cells_lists) at 1M filters, x = 20
#                (speed of light, occupancy, stalls).
set -uo pipefail
BIN=${BIN:-.}
OUT=${OUT:-out}
mkdir -p "$OUT"
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
say "gpu-request (ccm-dense): $(date -u +%FT%TZ), $(nproc) cores, binaries of $(cat "$BIN/COMMIT" 2>/dev/null || echo '?')"
command -v nvidia-smi >/dev/null &&
    say "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -1)"

# 1. Registers and spills of the kernels (a few seconds).
"$BIN/index_check" ptx >/tmp/ccm-cells.ptx
PTXAS=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
timeout 20 "$PTXAS" -arch=sm_90 -v /tmp/ccm-cells.ptx -o /tmp/ccm-cells.cubin >"$OUT/ptxas.txt" 2>&1
grep -A3 -E "entry function '(ccm_index_cells|ccm_cells_spans|ccm_cells_lists|ccm_index_lists|ccm_index_dense_narrow|ccm_index_route)'" "$OUT/ptxas.txt" |
    grep -E "entry|registers|stack" | tee -a "$OUT/summary.txt"

# 2. The value cells under the sanitizers, answers against SFF's (about 60 s).
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
step check.txt memcheck 30 "$CS" --tool memcheck --print-limit 20 "$BIN/index_check" 2 small cells
step check.txt racecheck 45 "$CS" --tool racecheck --print-limit 20 "$BIN/index_check" 3 small cells
grep -E "differ|equal|SUMMARY|rror" "$OUT/check.txt" | sort | uniq -c | sort -rn | head -12 | tee -a "$OUT/summary.txt"

# 3. Old path against new at 1M and 100k filters, against the hybrid index (about 100 s).
t=$(left)
t=$((t - 40 > 75 ? 75 : (t - 40 > 20 ? t - 40 : 20)))
step lists-1M.txt dense_lists-1M "$t" "$BIN/dense_lists" 1000000 1
t=$(left)
t=$((t - 15 > 40 ? 40 : (t - 15 > 10 ? t - 15 : 10)))
step lists-100k.txt dense_lists-100k "$t" "$BIN/dense_lists" 100000 1
grep -hE "hybrid all cores|gpu index|equal|differ from" "$OUT/lists-1M.txt" "$OUT/lists-100k.txt" >>"$OUT/summary.txt"

# 4. A profile of the two kernels, if there is time.
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
t=$(left)
if [ "$t" -gt 15 ] && [ -x "$NCU" ]; then
    step ncu.txt ncu "$t" "$NCU" --kernel-name regex:'ccm_(index_cells|cells_spans|cells_lists)' --launch-skip 6 --launch-count 6 \
        --section SpeedOfLight --section Occupancy --section WarpStateStats "$BIN/dense_lists" 1000000 1 profile
fi
say "done in $(($(date +%s) - START)) s"
