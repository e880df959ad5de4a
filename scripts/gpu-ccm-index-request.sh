#!/usr/bin/env bash
# GPU check of the CCM index on Table 2's default workload (branch h-ccm-table2): triple
# partitions (an event of at most 5 names visits only the filters whose three rarest names
# it has: ~8 an event instead of ~330 on Table 1's model); the partition walk's filter test
# loading a passing filter's records in two rounds, capped at 56 registers; the walk's
# count of the groups of filters each warp tried, over 32 counters; launches of 131,072
# events copied whole (copies by slices measured slower).
# Runs on the GPU host from any directory, with the stripped release binaries in $BIN:
# harness, index_check, index_pipeline (built by `cargo build --release -p harness` and
# `cargo build --release -p ccm --example index_check --example index_pipeline`).
# Builds nothing; writes under $OUT; at most ~195 s (each step has a timeout):
#   1. ptxas -v on the kernels' PTX (registers, spills);
#   2. index_check: the index's answers against SFF's, plainly, then on a fifth of the
#      size under compute-sanitizer memcheck and racecheck;
#   3. ccm/table2 at full size, one seed: the GPU index and the CPU engines for the best
#      CPU (sff, index, hybrid), with the index's split (GPU_MATCH_INDEX_SPLIT=1);
#   4. index_pipeline table2: Table 2's rows 1 and 4 timed as the harness times the index
#      for several tunings (triples or pairs, launch sizes, copy slices, ramp), the dense
#      model's walked events at 100k filters, then the walk's registers capped otherwise;
#   5. ncu on the partition walk (one launch of 131,072 of Table 2's row 1), if the profiler runs.
# Writes under $OUT: gpu.txt, ptxas.txt, check.txt, sanitize.txt, run.txt, tune.txt,
# ncu.txt, times.txt, summary.txt, table2/.
set -uo pipefail
BIN=${BIN:?the folder of the binaries}
OUT=${OUT:-/tmp/out}
R="$OUT/table2"
mkdir -p "$OUT" "$R"
export CUDA_MODULE_LOADING=EAGER
{
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv
    echo "branch h-ccm-table2; binaries:"
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
"$BIN/index_check" ptx >"$OUT/ccm.ptx" 2>/dev/null
PTXAS=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
for f in "$OUT/ccm.ptx"; do
    echo "== $f" >>"$OUT/ptxas.txt"
    timeout 5 "$PTXAS" -arch=sm_90 -v "$f" -o /tmp/ccm-request.cubin 2>&1 |
        grep -A2 "for ccm_index_route\|for ccm_encode" >>"$OUT/ptxas.txt"
done
rm -f "$OUT/ccm.ptx"
step check.txt index_check 20 "$BIN/index_check" 1
step sanitize.txt memcheck 20 compute-sanitizer --tool memcheck --print-limit 20 "$BIN/index_check" 2 small
step sanitize.txt racecheck 30 compute-sanitizer --tool racecheck --print-limit 20 "$BIN/index_check" 3 small
export GPU_MATCH_INDEX_SPLIT=1
step run.txt table2 40 "$BIN/harness" run ccm table2 --seeds 1 \
    --engines gpu-index,sff,index,hybrid --out "$R"
unset GPU_MATCH_INDEX_SPLIT
step tune.txt index_pipeline 60 "$BIN/index_pipeline" 1 table2
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
step ncu.txt ncu 20 "$NCU" --kernel-name ccm_index_route --launch-skip 10 --launch-count 1 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    --section SchedulerStats --section MemoryWorkloadAnalysis "$BIN/index_pipeline" 1 profile
{
    cat "$OUT/ptxas.txt"
    grep -hE "differ|equal|SUMMARY|rror" "$OUT/check.txt" "$OUT/sanitize.txt" | sort | uniq -c | sort -rn | head -30
    grep -hE "index split|row \(|speedup|agree|recorded|this run" "$OUT/run.txt"
    grep -hE "row [14],|F=100k" "$OUT/tune.txt"
    grep -hE "Duration|Achieved Occupancy|Theoretical Occupancy|Registers Per|Issued Ipc|No Eligible|Memory Throughput|L2 Hit|Warp Cycles Per Issued" "$OUT/ncu.txt" | head -20
} >"$OUT/summary.txt" 2>&1
cat "$OUT/summary.txt"
