#!/usr/bin/env bash
# The DDM experiments on the GPU machine, run by the device tool from the repository root
# with the release binary carried in $H (default .carry-ddm/harness; the GPU machine has
# no Rust toolchain).
#
#   scripts/gpu-ddm-record.sh check        compute-sanitizer memcheck and racecheck on the
#                                          sorting engines (gpu-sweep, gpu-bisect) checked
#                                          against the CPU in quick density, pairs and
#                                          scale-up runs, and on the paper's engines (fig5_7)
#   scripts/gpu-ddm-record.sh full [EXP..] the experiments (default: every ddm one, the
#                                          beyond-the-paper density and pairs last) recorded
#                                          into results/ddm with $SEEDS seeds (default 3),
#                                          each bounded so that the whole command ends before
#                                          $DEADLINE_S (default 400 s); results as one tarball
#                                          in $OUT, with times.txt (experiment, seconds, exit
#                                          code; 124: cut at the deadline, nothing recorded)
#
# Where to record: the lead runs `full` in one final call, then unpacks results.tgz into the
# checkout and regenerates results/README.md (`harness report`).
set -uo pipefail
H=${H:-./.carry-ddm/harness}
OUT=${OUT:-/tmp/out}
START=$(date +%s)
DEADLINE_S=${DEADLINE_S:-400}
SEEDS=${SEEDS:-3}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/gpu.txt"
left() { echo $((DEADLINE_S - ($(date +%s) - START))); }
phase=${1:-check}
shift || true
case "$phase" in
check)
    {
        for e in density pairs_2d; do
            for tool in memcheck racecheck; do
                echo "== $tool: ddm/$e quick (gpu checked against the cpu engines)"
                timeout 25 compute-sanitizer --tool $tool --print-limit 20 \
                    $H run ddm $e --quick --seeds 1 --engines gpu-sweep,gpu-bisect,gpu-grid,sbm-par,itm-par,bisect-par \
                    --out /tmp/sanitized 2>&1 | grep -E "ERROR SUMMARY|ok in|disagree|error|Error" | tail -4
                echo "exit ${PIPESTATUS[0]}"
            done
        done
    } 2>&1 | tee "$OUT/check.txt"
    ;;
full)
    exps=("$@")
    if [ ${#exps[@]} -eq 0 ]; then
        exps=(fig5_7 fig6_8 fig9_11 fig10_12 scaleup_a1 scaleup_a100 density pairs density_2d pairs_2d)
    fi
    for e in "${exps[@]}"; do
        t=$(left)
        if [ "$t" -lt 20 ]; then
            echo "ddm/$e skipped 0" | tee -a "$OUT/times.txt"
            continue
        fi
        s=$(date +%s)
        timeout "$t" $H run ddm "$e" --seeds "$SEEDS" --out results >>"$OUT/run.txt" 2>&1
        rc=$?
        echo "ddm/$e $(($(date +%s) - s)) $rc" | tee -a "$OUT/times.txt"
    done
    grep -E "^\[|=|speedup" "$OUT/run.txt" | tail -60
    tar czf "$OUT/results.tgz" results/ddm
    ;;
esac
