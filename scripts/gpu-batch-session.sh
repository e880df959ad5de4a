#!/usr/bin/env bash
# One session's GPU runs for the flat event batch, in parts that each fit one call of the
# device tool (10 minutes). Run from the repository root with the release binaries
# carried in .carry/ (harness: this tree's; harness-base: the binary the e2e compares
# with); builds nothing:
#     PART=A OUT=$OUT bash scripts/gpu-batch-session.sh
# A: CCM on the batch (scripts/gpu-ccm-batch.sh: sanitizers, table2, dense, dense10) and
#    XML paths (scripts/gpu-xml-paths.sh with one seed: sanitizers, paths, xml filter);
# B: CLCB on the batch (scripts/gpu-clcb-batch.sh, cut at 5 minutes) and every user
#    command end to end against the base binary (scripts/e2e.sh);
# C: the scaling experiments of CCM on every GPU of the machine (the 4-GPU kind).
# Each part writes under $OUT/<part name>/ and a times.txt of its steps (seconds, exit).
set -uo pipefail
OUT=${OUT:-/tmp/out}
PART=${PART:-A}
mkdir -p "$OUT"
step() { # name command...
    local name=$1 s rc
    shift
    s=$(date +%s)
    mkdir -p "$OUT/$name"
    OUT="$OUT/$name" "$@" >"$OUT/$name/stdout.txt" 2>&1
    rc=$?
    echo "$name $(($(date +%s) - s)) $rc" | tee -a "$OUT/times.txt"
}
case "$PART" in
A)
    step ccm bash scripts/gpu-ccm-batch.sh
    step xml env SEEDS=1 bash scripts/gpu-xml-paths.sh
    ;;
B)
    step clcb env DEADLINE_S=300 bash scripts/gpu-clcb-batch.sh
    step e2e env BINS="new=.carry/harness base=.carry/harness-base" bash scripts/e2e.sh
    ;;
C)
    nvidia-smi -L | tee "$OUT/gpus.txt"
    step scaling ./.carry/harness run ccm scaling --devices all --seeds 2 --out /tmp/scaling
    tar czf "$OUT/scaling.tgz" -C /tmp/scaling .
    ;;
esac
