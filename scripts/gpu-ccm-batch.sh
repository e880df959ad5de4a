#!/usr/bin/env bash
# The CCM pruning index on the event batch (`GpuIndex::match_batch`: the batch's
# dictionaries translated once per call, the launch's attributes and starts staged as they
# are, the events encoded on the device by `ccm_encode_batch`), on the GPU machine. Run by
# the device tool from the repository root with the release binary carried in
# .carry/harness; builds nothing; about 4 minutes, at most 9 (each step has a timeout):
#   1. compute-sanitizer memcheck and racecheck on quick runs of ccm/table2 (partition
#      walk, interface-major kernel; the paper's kernels and the batched one, which takes
#      the batch too) and ccm/dense10 (filter-major kernel) with the GPU index (answers
#      checked against SFF's);
#   2. ccm/table2 at full size, one seed: the GPU index, the paper's kernels (`gpu`, with
#      `gpu batched` on the batch) and the CPU engines (sff, index, hybrid), with the
#      index's time split per workload (GPU_MATCH_INDEX_SPLIT=1: dictionaries, staging,
#      copy in, kernels with the device's encoding, answers);
#   3. ccm/dense and ccm/dense10 at full size, one seed: the GPU index series only (SFF
#      still answers every event, for the check).
# Everything goes to $OUT: check.txt (sanitizers), run.txt (the runs' output and splits),
# times.txt (wall time and exit code per run; 124: cut by its timeout, nothing recorded),
# and results.tgz (the CSVs, under ccm/; not written into results/: the lead decides).
set -uo pipefail
H=./.carry/harness
OUT=${OUT:-/tmp/out}
R=/tmp/ccm-batch
mkdir -p "$OUT" "$R"
export CUDA_MODULE_LOADING=EAGER
{
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
    git log -1 --format='commit %h %s' 2>/dev/null | cut -c1-100
    nproc
} | tee "$OUT/gpu.txt"
{
    for e in ccm/table2:gpu,gpu-index,sff ccm/dense10:gpu-index,sff; do
        engines=${e#*:} e=${e%%:*}
        for tool in memcheck racecheck; do
            echo "== $tool: $e quick, $engines (answers checked against sff)"
            timeout 60 compute-sanitizer --tool $tool --print-limit 20 \
                $H run ${e%/*} ${e#*/} --quick --seeds 1 --engines $engines --out /tmp/sanitized 2>&1 |
                grep -v "^ " | tail -8
            echo "exit ${PIPESTATUS[0]}"
        done
    done
} 2>&1 | tee "$OUT/check.txt"
run() { # timeout experiment engines
    local s rc
    s=$(date +%s)
    echo "== $2 --engines $3" >>"$OUT/run.txt"
    GPU_MATCH_INDEX_SPLIT=1 timeout "$1" $H run ${2%/*} ${2#*/} --seeds 1 --engines "$3" \
        --out "$R" >>"$OUT/run.txt" 2>&1
    rc=$?
    echo "$2 $(($(date +%s) - s)) $rc" | tee -a "$OUT/times.txt"
}
run 120 ccm/table2 gpu,gpu-index,sff,index,hybrid
run 110 ccm/dense gpu-index
run 80 ccm/dense10 gpu-index
grep -h "index split" "$OUT/run.txt"
tar czf "$OUT/results.tgz" -C "$R" .
