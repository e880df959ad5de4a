#!/usr/bin/env bash
# One session's GPU runs for the flat event batch, in parts that each fit one call of the
# device tool (10 minutes). Run from the repository root with the release binaries
# carried in .carry/ (harness: this tree's; harness-base: the binary the e2e compares
# with); builds nothing:
#     PART=A OUT=$OUT bash scripts/gpu-batch-session.sh
# A (X: its XML part alone): CCM on the batch (scripts/gpu-ccm-batch.sh: sanitizers, table2, dense, dense10) and
#    XML paths (scripts/gpu-xml-paths.sh with one seed: sanitizers, paths, xml filter);
# B: CLCB on the batch (scripts/gpu-clcb-batch.sh, cut at 5 minutes) and every user
#    command end to end against the base binary (scripts/e2e.sh);
# C: the scaling experiments of CCM on every GPU of the machine (the 4-GPU kind);
# D: the HEM suite (its sources and the side-by-side driver carried in .carry/hem, built
#    here with g++) beside baselines' dense_bench (.carry/dense_bench) on the suite's
#    dense model, SIZES filters (100000), one core and 16 threads.
# E: the CCM index's check and Table 2 (scripts/gpu-ccm-request.sh), XML paths with one
#    seed (scripts/gpu-xml-paths.sh) and every user command end to end against the base
#    binary (scripts/e2e.sh);
# F: CCM's yardstick against the HEM suite and the `hem` experiment (scripts/gpu-hem.sh,
#    .carry/hem and .carry/dense_bench);
# G: clcb/table2 with one seed.
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
    # One archive a step (the device tool brings back a limited number of files).
    tar czf "$OUT/$name.tgz" -C "$OUT" "$name" && rm -rf "${OUT:?}/$name"
}
case "$PART" in
A)
    step ccm bash scripts/gpu-ccm-batch.sh
    step xml env SEEDS=1 bash scripts/gpu-xml-paths.sh
    ;;
X)
    step xml env SEEDS=1 bash scripts/gpu-xml-paths.sh
    ;;
B)
    step clcb env DEADLINE_S=300 bash scripts/gpu-clcb-batch.sh
    step e2e env BINS="new=.carry/harness base=.carry/harness-base" bash scripts/e2e.sh
    ;;
E)
    step ccm bash scripts/gpu-ccm-request.sh
    step xml env SEEDS=1 bash scripts/gpu-xml-paths.sh
    step e2e env BINS="new=.carry/harness base=.carry/harness-base" bash scripts/e2e.sh
    ;;
F)
    step hem env DEADLINE_S=${DEADLINE_S:-500} bash scripts/gpu-hem.sh
    ;;
G)
    step clcb-table2 env GPU_MATCH_INDEX_SPLIT=1 timeout 120 ./.carry/harness run clcb table2 --seeds 1 \
        --out /tmp/clcb-table2
    tar czf "$OUT/clcb-table2-csv.tgz" -C /tmp/clcb-table2 .
    ;;
C)
    nvidia-smi -L | tee "$OUT/gpus.txt"
    step scaling ./.carry/harness run ccm scaling --devices all --seeds 2 --out /tmp/scaling
    tar czf "$OUT/scaling.tgz" -C /tmp/scaling .
    ;;
D)
    O=$OUT/hem
    mkdir -p "$O"
    command -v g++ >/dev/null || { echo "no g++ on this machine" | tee "$O/none.txt"; exit 0; }
    for N in ${SIZES:-100000}; do
        sh .carry/hem/driver/build.sh .carry/hem "$N" "$O" >"$O/build.txt" 2>&1 || { tail "$O/build.txt"; exit 1; }
        ./.carry/dense_bench --filters "$N" --events 2000 --dump "$O/dumps" >"$O/gpu-match-$N.txt" 2>&1
        for W in 3-5 10 20 zipf; do
            for V in dd avx; do
                for BE in 4 6; do
                    for L in 0 1; do
                        printf "workload=%s " $W >>"$O/hem-$N.txt"
                        HEM_LIST=$L "$O/hem-$V-$N" "$O/dumps/dense-$W-$N.txt" "$(nproc)" $BE >>"$O/hem-$N.txt" 2>&1
                    done
                done
            done
        done
    done
    ;;
esac
