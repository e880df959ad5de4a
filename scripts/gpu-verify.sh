#!/usr/bin/env bash
# End-of-session verification on the GPU machine (run from the repository root with the
# release binary in .carry/harness; writes to $OUT, results as one tarball):
#   1. scripts/gpu-session.sh check: self-tests and compute-sanitizer (memcheck, racecheck,
#      synccheck on the self-tests; memcheck and racecheck on one quick GPU-vs-CPU
#      experiment per paper);
#   2. memcheck on ccm/fig5 (the CCM kernels on parameter structs), memcheck and racecheck
#      on the persistent mode (ccm/latency, clcb/latency quick);
#   3. every experiment quick, one seed: each GPU answer checked against the CPU engines
#      (a mismatch fails the experiment);
#   4. the persistent mode's experiments at full size into results/ (one seed).
set -uo pipefail
H=./.carry/harness
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export CUDA_MODULE_LOADING=EAGER
START=$(date +%s)
left() { echo $((${DEADLINE_S:-570} - ($(date +%s) - START))); }
bash scripts/gpu-session.sh check >/dev/null 2>&1
{
    for te in memcheck:ccm/fig5 memcheck:ccm/latency memcheck:clcb/latency \
        racecheck:ccm/latency racecheck:clcb/latency; do
        tool=${te%%:*} e=${te#*:}
        echo "== $tool: $e quick (gpu checked against the cpu engines)"
        timeout 120 compute-sanitizer --tool $tool --print-limit 20 \
            $H run ${e%/*} ${e#*/} --quick --seeds 1 --out /tmp/verify 2>&1 | grep -v "^ " | tail -4
        echo "exit ${PIPESTATUS[0]}"
    done
    echo "== every experiment, quick, one seed (gpu checked against the cpu)"
    timeout "$(( $(left) - 150 ))" $H run all --quick --seeds 1 --out /tmp/quick 2>&1 | grep -v "^ " | tail -45
    echo "exit ${PIPESTATUS[0]}"
} 2>&1 | tee "$OUT/verify.txt"
for e in ccm/latency ccm/inflight clcb/latency clcb/inflight; do
    t=$(left)
    [ "$t" -lt 20 ] && { echo "$e skipped" | tee -a "$OUT/times.txt"; continue; }
    s=$(date +%s)
    timeout "$t" $H run ${e%/*} ${e#*/} --seeds 1 --out results >>"$OUT/run.txt" 2>&1
    echo "$e $(($(date +%s) - s)) $?" | tee -a "$OUT/times.txt"
done
tar czf "$OUT/results.tgz" results/ccm results/clcb
