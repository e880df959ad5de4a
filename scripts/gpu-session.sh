#!/usr/bin/env bash
# One GPU-machine session, run by the device tool from the repository root with the
# release binary carried in .carry/harness (the GPU machine has no Rust toolchain).
#
#   scripts/gpu-session.sh check        selftest + compute-sanitizer on the self-tests and on
#                                       every paper's quick GPU run (GPU vs CPU checked inside)
#   scripts/gpu-session.sh run PAPER..  the full experiments of PAPER(s) into results/
#   scripts/gpu-session.sh regress      a quick GPU run recorded into results/regress/
#
# Everything it writes goes to $OUT (results as one tarball: the tool returns few files).
set -uo pipefail
H=./.carry/harness
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/gpu.txt"
phase=${1:-check}; shift || true
case "$phase" in
check)
    $H selftest 2>&1 | tee "$OUT/selftest.txt"
    compute-sanitizer --tool memcheck $H selftest 2>&1 | tail -3 | tee -a "$OUT/sanitizer.txt"
    compute-sanitizer --tool racecheck $H selftest 2>&1 | tail -2 | tee -a "$OUT/sanitizer.txt"
    compute-sanitizer --tool synccheck $H selftest 2>&1 | tail -2 | tee -a "$OUT/sanitizer.txt"
    for p in ccm clcb xml ddm; do
        echo "== memcheck: $p quick (gpu vs cpu)" | tee -a "$OUT/sanitizer.txt"
        timeout 240 compute-sanitizer --tool memcheck --print-limit 20 \
            $H run $p --quick --seeds 1 --out /tmp/sanitized 2>&1 | grep -v "^ " | tail -12 | tee -a "$OUT/sanitizer.txt"
    done
    ;;
run)
    for p in "$@"; do
        $H run $p 2>&1 | tee "$OUT/run-$p.txt"
    done
    tar czf "$OUT/results-$(echo "$@" | tr ' ' '-').tgz" results
    ;;
regress)
    $H run all --quick --seeds 3 --out results/regress 2>&1 | tee "$OUT/regress.txt"
    tar czf "$OUT/results-regress.tgz" results/regress
    ;;
esac
