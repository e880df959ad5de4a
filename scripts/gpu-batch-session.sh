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
# H: CLCB recorded: the cell index's sanitizers (.carry/cells_split: cells_encode,
#    cells_match, memcheck and racecheck on small workloads; the kernels with rectangles:
#    memcheck on quick keywords), then table2 and keywords with three seeds and Figs.
#    3a-4d with one, while DEADLINE_S (540 by default) lasts;
# I: CCM recorded: the index's check and sanitizers (.carry/index_check), table2 and
#    dense10 with three seeds, dense with one;
# J: every user command end to end against the base binary (scripts/e2e-cut.sh), the
#    HEM suite on the few-names model (scripts/gpu-hem.sh with ONLY=few HARNESS=0), and
#    XML paths with one seed while time is left.
# A part finding .carry/*.gz unpacks them first (the carried binaries, compressed).
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
for z in .carry/*.gz; do
    [ -e "$z" ] || continue
    gunzip -c "$z" > "${z%.gz}" && chmod +x "${z%.gz}" && rm -f "$z"
done
START=$(date +%s)
left() { echo $(( ${DEADLINE_S:-540} - ($(date +%s) - START) )); }
# record NAME TIMEOUT ARGS...: `harness run ARGS --out /tmp/rec`, if the time left allows.
record() {
    local name=$1 limit=$2 l
    shift 2
    l=$(left)
    [ "$l" -lt "$limit" ] && limit=$l
    [ "$limit" -gt 15 ] || { echo "$name 0 skipped" | tee -a "$OUT/times.txt"; return; }
    step "$name" timeout "$limit" ./.carry/harness run "$@" --out /tmp/rec
}
case "$PART" in
H)
    S=./.carry/cells_split
    step cells-memcheck env CELLS_ROUND=2048 CELLS_LAUNCH=512 timeout 40 compute-sanitizer \
        --tool memcheck --print-limit 20 $S keywords 1 2000
    step cells-racecheck env CELLS_ROUND=1024 CELLS_LAUNCH=512 timeout 40 compute-sanitizer \
        --tool racecheck --print-limit 20 $S keywords 1 2000
    step rect-memcheck timeout 60 compute-sanitizer --tool memcheck --print-limit 20 \
        ./.carry/harness run clcb keywords --quick --seeds 1 --out /tmp/sanitized
    record clcb-table2 150 clcb table2 --seeds 3
    record clcb-keywords 120 clcb keywords --seeds 3
    for f in fig3a fig3b fig3c fig3d fig4a fig4b fig4c fig4d; do
        record "clcb-$f" 40 clcb $f --seeds 1
    done
    tar czf "$OUT/rec.tgz" -C /tmp/rec .
    ;;
I)
    step index-check timeout 30 ./.carry/index_check 1
    step index-memcheck timeout 40 compute-sanitizer --tool memcheck --print-limit 20 \
        ./.carry/index_check 2 small
    step index-racecheck timeout 40 compute-sanitizer --tool racecheck --print-limit 20 \
        ./.carry/index_check 3 small
    record ccm-table2 90 ccm table2 --seeds 3
    record ccm-dense10 90 ccm dense10 --seeds 3
    record ccm-dense 150 ccm dense --seeds 1
    tar czf "$OUT/rec.tgz" -C /tmp/rec .
    ;;
J)
    step e2e timeout 210 env BIN="$PWD/.carry" bash scripts/e2e-cut.sh
    step hem-few env ONLY=few HARNESS=0 DEADLINE_S=140 bash scripts/gpu-hem.sh
    record xml-paths 60 xml paths --seeds 1
    [ -d /tmp/rec ] && tar czf "$OUT/rec.tgz" -C /tmp/rec .
    ;;
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
