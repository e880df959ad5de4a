#!/usr/bin/env bash
# Today's strong CPU methods as yardsticks, on the GPU machine: run from the
# repository root with the release binaries carried in .carry/; writes to $OUT.
#
# Build here (no GPU needed) and carry:
#   cargo build --release -p harness
#   cargo build --release -p baselines --example ddm_scaling --example ccm_index_scaling
#   mkdir -p .carry && cp target/release/harness target/release/examples/ddm_scaling \
#       target/release/examples/ccm_index_scaling .carry/
#
#   scripts/gpu-yardsticks.sh scaling   the thread-scaling tables (1, 2, 4, 8, 16 threads) of
#                                       the new CPU matchers: DDM sort, sbm, itm, grid at 32768
#                                       and 1M regions (counting), CCM sff and the content index
#                                       on the default scenario (uniform and Zipf names); every
#                                       answer checked (about 3 minutes)
#   scripts/gpu-yardsticks.sh full      the affected experiments re-recorded with the new series
#                                       into results/ (SEEDS, default 3), each bounded so the
#                                       command ends before $DEADLINE_S (default 560 s): ddm
#                                       scale-ups and fig5_7 / fig6_8 first, then ccm table2;
#                                       the rest with scripts/gpu-session.sh full EXP...
#   scripts/gpu-yardsticks.sh all       scaling, then full
set -uo pipefail
C=./.carry
OUT=${OUT:-/tmp/out}
START=$(date +%s)
DEADLINE_S=${DEADLINE_S:-560}
SEEDS=${SEEDS:-3}
mkdir -p "$OUT"
{
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
    echo "cpus: $(nproc)"
    grep -m1 "model name" /proc/cpuinfo
} | tee "$OUT/machine.txt"
left() { echo $((DEADLINE_S - ($(date +%s) - START))); }

scaling() {
    timeout 300 $C/ddm_scaling --threads 1,2,4,8,16 --reps 5 2>&1 | tee "$OUT/ddm-scaling.md"
    echo "exit ${PIPESTATUS[0]}" | tee -a "$OUT/ddm-scaling.md"
    timeout 240 $C/ccm_index_scaling --threads 1,2,4,8,16 --reps 5 2>&1 | tee "$OUT/ccm-scaling.md"
    echo "exit ${PIPESTATUS[0]}" | tee -a "$OUT/ccm-scaling.md"
}

full() {
    for e in ddm/scaleup_a1 ddm/scaleup_a100 ddm/fig5_7 ddm/fig6_8 ccm/table2; do
        t=$(left)
        if [ "$t" -lt 30 ]; then
            echo "$e skipped 0" | tee -a "$OUT/times-yardsticks.txt"
            continue
        fi
        s=$(date +%s)
        timeout "$t" $C/harness run ${e%/*} ${e#*/} --seeds "$SEEDS" --out results \
            >>"$OUT/run-yardsticks.txt" 2>&1
        rc=$?
        echo "$e $(($(date +%s) - s)) $rc" | tee -a "$OUT/times-yardsticks.txt"
    done
    tail -40 "$OUT/run-yardsticks.txt"
    tar czf "$OUT/results-yardsticks.tgz" results/ddm results/ccm
}

case "${1:-scaling}" in
scaling) scaling ;;
full) full ;;
all)
    scaling
    full
    ;;
*)
    echo "usage: $0 scaling|full|all" >&2
    exit 2
    ;;
esac
