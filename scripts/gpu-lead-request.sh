#!/usr/bin/env bash
# The lead's mid-session look on the GPU machine (run by .carry/mid/run.sh from an empty
# directory; binaries in $BIN: harness, dense_bench; results under $OUT):
#   1. dense_bench on the HEM suite's dense model (20 names; events of 3-5, 10, 20 and
#      5-10 Zipf-drawn names), 100k and 1M filters, the hybrid alone: one core, all cores
#      with each thread's scratch kept between calls, and all cores with a fresh scratch
#      per thread and call (what every call paid before);
#   2. CLCB Figs. 3a-3d and 4a recorded (one seed each, every engine; the harness times
#      the grid on all cores and the cell index by passes), under $OUT/results;
# or, with PART=split (binaries in $BIN: cells_split, harness), the cell index's split at
# 1M subscriptions on the workloads of Figs. 3a, 3d, 4a and 4d (`cells_split uniform|zipf
# AREA%`), launches of 32768 and 8192 events, then the figures named in FIGS (default
# fig3a fig3d fig4a fig4d) recorded with SEEDS seeds (default 1) under $OUT/results.
set -uo pipefail
BIN=${BIN:?}; OUT=${OUT:?}
mkdir -p "$OUT"
. "$(dirname "${BASH_SOURCE[0]}")/step-lib.sh"
if [ "${PART:-look}" = split ]; then
    [ -x "$BIN/cells_split" ] && for w in "uniform 0.001" "uniform 1" "zipf 0.001" "zipf 1"; do
        CELLS_LAUNCH=32768,8192 step "split-${w/ /-}" 60 "$BIN/cells_split" $w > "$OUT/split-${w/ /-}.txt" 2>&1
    done
    for fig in ${FIGS:-fig3a fig3d fig4a fig4d}; do
        step "clcb-$fig" 150 "$BIN/harness" run clcb "$fig" --seeds "${SEEDS:-1}" --out "$OUT/results" \
            > "$OUT/clcb-$fig.txt" 2>&1
    done
    exit 0
fi
for f in 100000 1000000; do
    step "dense-$f" 100 "$BIN/dense_bench" --filters "$f" --events 2000 --only 3-5,10,20,zipf \
        --matchers hybrid > "$OUT/dense-$f.txt" 2>&1
done
for fig in fig3a fig3b fig3c fig3d fig4a; do
    step "clcb-$fig" 70 "$BIN/harness" run clcb "$fig" --seeds 1 --out "$OUT/results" \
        > "$OUT/clcb-$fig.txt" 2>&1
done
