#!/usr/bin/env bash
# Carried binaries: .carry/harness (target/release/harness) and .carry/index_check
# (target/release/examples/index_check, from `cargo build --release -p ccm --example index_check`).
# Mid-session GPU check of the CCM index's pipeline (two launch slots, copies on queues of
# their own beside the kernels' stream, no wait inside a launch) and its kernels. Run
# from the repository root with the release binaries carried in .carry/: harness (this
# tree's) and index_check (`cargo build --release -p ccm --example index_check`, from
# target/release/examples/index_check); builds nothing; at most ~235 s (each step has a timeout):
#   1. index_check: the index's answers against SFF's over many small launches (Table 1's
#      model uniform and Zipf, the dense model with 1 and 10 filters per interface; every
#      event on the walk, then every event dense on the filter-major and the
#      interface-major kernels), plainly, then (a fifth of the size) under
#      compute-sanitizer memcheck and racecheck;
#   (and the kernels' registers, spills and shared memory: ptxas -v on index_check's PTX);
#   2. ccm/table2 at full size, one seed: the GPU index and the CPU engines for the best
#      CPU (sff, index, hybrid), with the index's split (GPU_MATCH_INDEX_SPLIT=1);
#   3. ccm/dense10 and ccm/dense, one seed, the GPU index only (dense may be cut by its
#      timeout: the split lines of the workloads done are printed as they end).
# Writes under $OUT: gpu.txt, check.txt, run.txt, times.txt, results.tgz.
set -uo pipefail
H=./.carry/harness
C=./.carry/index_check
OUT=${OUT:-/tmp/out}
R=/tmp/ccm-request
mkdir -p "$OUT" "$R"
export CUDA_MODULE_LOADING=EAGER
{
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
    git log -1 --format='commit %h %s' 2>/dev/null | cut -c1-100
    nproc
} | tee "$OUT/gpu.txt"
step() { # name timeout command...
    local name=$1 t=$2 s rc
    shift 2
    s=$(date +%s)
    echo "== $name" >>"$OUT/$LOG"
    timeout "$t" "$@" >>"$OUT/$LOG" 2>&1
    rc=$?
    echo "$name $(($(date +%s) - s)) $rc" | tee -a "$OUT/times.txt"
}
$C ptx >/tmp/ccm.ptx
PTXAS=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
timeout 20 "$PTXAS" -arch=sm_90 -v /tmp/ccm.ptx -o /tmp/ccm.cubin >"$OUT/ptxas.txt" 2>&1
grep -E "entry function|registers|spill" "$OUT/ptxas.txt" | head -40
LOG=check.txt
step index_check 25 $C 1
step memcheck 40 compute-sanitizer --tool memcheck --print-limit 20 $C 2 small
step racecheck 40 compute-sanitizer --tool racecheck --print-limit 20 $C 3 small
grep -E "differ|equal|SUMMARY|rror" "$OUT/check.txt" | sort | uniq -c | sort -rn | head -30
LOG=run.txt
export GPU_MATCH_INDEX_SPLIT=1
step table2 45 $H run ccm table2 --seeds 1 --engines gpu-index,sff,index,hybrid --out "$R"
step dense10 25 $H run ccm dense10 --seeds 1 --engines gpu-index --out "$R"
step dense 40 $H run ccm dense --seeds 1 --engines gpu-index --out "$R"
grep -hE "index split|row \(|speedup|recorded|this run" "$OUT/run.txt"
tar czf "$OUT/results.tgz" -C "$R" .
