#!/usr/bin/env bash
# One GPU-machine session, run by the device tool from the repository root with the
# release binary carried in .carry/harness (the GPU machine has no Rust toolchain).
#
#   scripts/gpu-session.sh check            selftest + compute-sanitizer (memcheck, racecheck,
#                                           synccheck) on the self-tests, memcheck and racecheck
#                                           on quick GPU-vs-CPU experiments of every paper
#   scripts/gpu-session.sh check EXP...     memcheck and racecheck on those quick experiments only
#                                           (EXP = paper/id), for the kernels a change touched
#   scripts/gpu-session.sh full EXP...      full-size experiments (EXP = paper/id, e.g.
#                                           ccm/table2) into results/, each one bounded so the
#                                           whole command ends before $DEADLINE_S (default 560 s)
#   scripts/gpu-session.sh regress          a quick GPU run (5 seeds, per-seed samples kept)
#                                           recorded into results/regress/
#   scripts/gpu-session.sh regress-check    harness regress against results/regress (quick,
#                                           5 samples per point): the table of what moved
#
# SEEDS (default 3) sets --seeds of full runs. Everything it writes goes to $OUT (results as
# one tarball: the tool returns at most 8 files), with times.txt listing each experiment's
# wall time and exit code (124: cut at the deadline, nothing recorded for it).
set -uo pipefail
H=./.carry/harness
OUT=${OUT:-/tmp/out}
START=$(date +%s)
DEADLINE_S=${DEADLINE_S:-560}
SEEDS=${SEEDS:-3}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/gpu.txt"
left() { echo $((DEADLINE_S - ($(date +%s) - START))); }
phase=${1:-check}
shift || true
case "$phase" in
check)
    {
        exps=("$@")
        if [ ${#exps[@]} -eq 0 ]; then
            $H selftest
            for tool in memcheck racecheck synccheck; do
                echo "== $tool: selftest"
                compute-sanitizer --tool $tool $H selftest 2>&1 | tail -3
            done
            # One quick experiment per paper, and the beyond-the-paper engines' kernels:
            # the CCM index's filter-major and interface-major kernels (dense with one
            # filter per interface, dense10 with many), DDM's sorting engines in 1-D and
            # 2-D (density, pairs_2d).
            exps=(ccm/table2 ccm/dense ccm/dense10 clcb/table2 xml/fig7 ddm/fig5_7 ddm/density ddm/pairs_2d)
        fi
        for e in "${exps[@]}"; do
            for tool in memcheck racecheck; do
                echo "== $tool: $e quick (gpu checked against the cpu engines)"
                timeout 100 compute-sanitizer --tool $tool --print-limit 20 \
                    $H run ${e%/*} ${e#*/} --quick --seeds 1 --out /tmp/sanitized 2>&1 |
                    grep -v "^ " | tail -8
                echo "exit ${PIPESTATUS[0]}"
            done
        done
    } 2>&1 | tee "$OUT/check.txt"
    ;;
full)
    for e in "$@"; do
        t=$(left)
        if [ "$t" -lt 20 ]; then
            echo "$e skipped 0" | tee -a "$OUT/times.txt"
            continue
        fi
        s=$(date +%s)
        timeout "$t" $H run ${e%/*} ${e#*/} --seeds "$SEEDS" --out results >>"$OUT/run.txt" 2>&1
        rc=$?
        echo "$e $(($(date +%s) - s)) $rc" | tee -a "$OUT/times.txt"
    done
    tar czf "$OUT/results.tgz" results
    ;;
regress)
    $H run all --quick --seeds 5 --out results/regress 2>&1 | tee "$OUT/regress.txt"
    tar czf "$OUT/results-regress.tgz" results/regress
    ;;
regress-check)
    $H regress --baseline results/regress --out /tmp/regress-now 2>&1 | tee "$OUT/regress-check.txt"
    ;;
esac
