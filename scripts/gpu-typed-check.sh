#!/usr/bin/env bash
# Typed launches and parameter structs: GPU re-check, run by the device tool from
# the repository root with the release binary in .carry/harness.
#
# 1. `harness selftest`: the self-tests, now with `struct_params` (a #[repr(C)] struct
#    with device pointers, u32s, a u64 table and an f32 passed by value: checks that the
#    struct's bytes reach the kernel's `.param .align 8 .b8 [64]` as laid out on the host).
# 2. compute-sanitizer memcheck on the self-tests and on the CCM variants whose launches
#    moved to parameter structs (fig5 runs ccm_match, ccm_match_inline and
#    ccm_match_inline_mapped; latency runs the mapped path and the persistent kernel),
#    every GPU answer checked against SFF on the CPU by the harness.
# 3. The quick GPU-vs-CPU experiment of every paper (`gpu-session.sh check` does the
#    same under racecheck/synccheck too).
set -uo pipefail
H=./.carry/harness
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
{
    nvidia-smi --query-gpu=name,driver_version --format=csv
    echo "== selftest"
    $H selftest
    echo "exit $?"
    echo "== memcheck: selftest"
    compute-sanitizer --tool memcheck $H selftest 2>&1 | tail -3
    for e in ccm/fig5 ccm/latency ccm/table2 clcb/table2 xml/fig7 ddm/fig5_7; do
        echo "== memcheck: $e quick (gpu checked against the cpu engines)"
        timeout 120 compute-sanitizer --tool memcheck --print-limit 20 \
            $H run ${e%/*} ${e#*/} --quick --seeds 1 --out /tmp/typed 2>&1 |
            grep -v "^ " | tail -8
        echo "exit ${PIPESTATUS[0]}"
    done
} 2>&1 | tee "$OUT/typed-check.txt"
