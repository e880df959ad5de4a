#!/usr/bin/env bash
# The persistent-kernel low-latency mode on the GPU machine: run from the
# repository root with the release binary carried in .carry/harness; writes to $OUT.
#
#   scripts/gpu-persistent.sh check     selftest (its persistent_sum self-test included),
#                                       then compute-sanitizer memcheck and racecheck on
#                                       quick runs of the persistent mode (ccm and clcb
#                                       latency: every answer checked against the CPU)
#   scripts/gpu-persistent.sh full      the new experiments at full size (100k events) and
#                                       both Table 2s, into results/, one seed each
#                                       (SEEDS to change), each bounded so that the whole
#                                       command ends before $DEADLINE_S (default 560 s)
#   scripts/gpu-persistent.sh all       check, then full
#
# The persistent kernel busy-waits on the GPU while an engine in that mode lives; each
# run stops it when the engine is dropped. Lazy module loading is turned off so that no
# kernel load waits for the device while a persistent kernel runs.
set -uo pipefail
H=./.carry/harness
OUT=${OUT:-/tmp/out}
START=$(date +%s)
DEADLINE_S=${DEADLINE_S:-560}
SEEDS=${SEEDS:-1}
export CUDA_MODULE_LOADING=EAGER
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/gpu.txt"
left() { echo $((DEADLINE_S - ($(date +%s) - START))); }

check() {
    {
        echo "== selftest"
        timeout 120 $H selftest
        echo "exit $?"
        for e in ccm/latency clcb/latency ccm/inflight; do
            for tool in memcheck racecheck; do
                echo "== $tool: $e quick (gpu engines, checked against the cpu)"
                timeout 150 compute-sanitizer --tool $tool --print-limit 20 \
                    $H run ${e%/*} ${e#*/} --quick --seeds 1 --engines gpu --out /tmp/sanitized 2>&1 |
                    grep -v "^ " | tail -8
                echo "exit ${PIPESTATUS[0]}"
            done
        done
    } 2>&1 | tee "$OUT/check-persistent.txt"
}

full() {
    for e in ccm/latency ccm/inflight clcb/latency clcb/inflight ccm/table2 clcb/table2; do
        t=$(left)
        if [ "$t" -lt 20 ]; then
            echo "$e skipped 0" | tee -a "$OUT/times-persistent.txt"
            continue
        fi
        s=$(date +%s)
        timeout "$t" $H run ${e%/*} ${e#*/} --seeds "$SEEDS" --out results \
            >>"$OUT/run-persistent.txt" 2>&1
        rc=$?
        echo "$e $(($(date +%s) - s)) $rc" | tee -a "$OUT/times-persistent.txt"
    done
    tail -40 "$OUT/run-persistent.txt"
    tar czf "$OUT/results-persistent.tgz" results/ccm results/clcb
}

case "${1:-check}" in
check) check ;;
full) full ;;
all)
    check
    full
    ;;
*)
    echo "usage: $0 check|full|all" >&2
    exit 2
    ;;
esac
