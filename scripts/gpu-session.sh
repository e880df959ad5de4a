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
#                                           recorded into results/regress/, and a second run
#                                           of the same binary into results/regress/rerun/
#                                           (each series' run-to-run drift)
#   scripts/gpu-session.sh regress-check [TARGET]
#                                           harness regress against results/regress (quick,
#                                           5 samples per point): the table of what moved
#   scripts/gpu-session.sh regress-demo TARGET
#                                           does regress catch a genuine slowdown? TARGET's
#                                           regress twice: alone on the GPU (should pass), then
#                                           beside a second harness running DDM's GPU
#                                           engines at full size on the same GPU, as a
#                                           co-tenant would (should fail, exit 1)
#
# SEEDS (default 3) sets --seeds of full runs; RUN_ARGS adds arguments to each of them (e.g.
# RUN_ARGS="--devices all" for the scaling experiments on a machine of several GPUs).
# Everything it writes goes to $OUT (results as one tarball: the tool returns at most 8
# files), with times.txt listing each experiment's wall time and exit code (124: cut at the
# deadline, nothing recorded for it).
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
        # shellcheck disable=SC2086 # RUN_ARGS is a list of arguments
        timeout "$t" $H run ${e%/*} ${e#*/} --seeds "$SEEDS" ${RUN_ARGS:-} --out results >>"$OUT/run.txt" 2>&1
        rc=$?
        echo "$e $(($(date +%s) - s)) $rc" | tee -a "$OUT/times.txt"
    done
    tar czf "$OUT/results.tgz" results
    ;;
regress)
    # Emulator engines do not run beside a GPU; each experiment's CSVs are in the tarball
    # even when the deadline cuts the run.
    timeout "$(left)" $H run all --quick --seeds 5 --out results/regress 2>&1 | tee "$OUT/regress.txt"
    # The same binary again in another process: each series' run-to-run drift, which
    # `regress` allows for (results/regress/rerun).
    timeout "$(left)" $H run all --quick --seeds 5 --out results/regress/rerun 2>&1 | tee "$OUT/regress-rerun.txt"
    tar czf "$OUT/results-regress.tgz" results/regress
    ;;
regress-check)
    $H regress --baseline results/regress --out /tmp/regress-now "$@" 2>&1 | tee "$OUT/regress-check.txt"
    ;;
regress-demo)
    {
        echo "== regress $*, the GPU to itself"
        $H regress --baseline results/regress --out /tmp/regress-alone "$@" 2>&1
        echo "exit $?"
        echo "== regress $*, beside a co-tenant (harness run ddm density, GPU engines only, full size, in a loop)"
        (while :; do $H run ddm density --engines gpu-bisect,gpu-sweep --seeds 20 --out /tmp/cotenant >/dev/null 2>&1; done) &
        tenant=$!
        sleep 20
        nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv
        $H regress --baseline results/regress --out /tmp/regress-shared "$@" 2>&1
        echo "exit $?"
        kill -- -$tenant 2>/dev/null || kill $tenant
        pkill -f "cotenant" || true
    } 2>&1 | tee "$OUT/regress-demo.txt"
    ;;
esac
