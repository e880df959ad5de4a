#!/usr/bin/env bash
# The clcbup helper's GPU request (H200, 16 host cores): the paper kernel `loc` testing
# areas through the helper it now shares with the batched kernels
# (`in_area_of_launch`), and `clcb match`'s cell index copied to the device through
# page-locked parts on all cores (`Stager`). `new` is $BIN/harness (branch h-clcbup; its
# run of 2026-11-29 17:52 had 05de0ac's, results/gpu-logs/clcb-upload-H200-2026-11-29/),
# `base` $BIN/harness-base (main).
#   1. The paper's kernels and the cell index against the CPU engines (quick keywords,
#      circles and rectangles) under compute-sanitizer memcheck and racecheck, and
#      `clcb match --engine gpu-cells` on small files under memcheck (its answers'
#      md5 against the grid's).
#   2. `clcb match` at the e2e sizes (250k subscriptions, 1M events), gpu-cells and
#      grid, new and base alternating, three rounds (scripts/e2e-clcb-cut.sh).
#   3. keywords at 1M subscriptions (GPU_MATCH_CLCB_SIZES), engines gpu, gpu-cells,
#      grid, rtree, one seed: new, base, base, new (the last skipped when time is out).
#
#     BIN=/dir/with/binaries OUT=/dir/for/results bash scripts/gpu-clcb-upload-request.sh
#
# Writes under $OUT: times.txt (step, seconds, exit code; 124 = cut by its timeout),
# each step's output as STEP.txt, e2e/ (e2e.csv, e2e.txt), keywords-*/clcb/keywords.csv.
# Every step under `timeout`, the whole under DEADLINE_S (default 150). A dry run off
# the GPU machine: SUBS=2000 EVENTS=2000 KEYWORDS_SIZES=1000 (the GPU steps then fail).
set -uo pipefail
BIN=${BIN:?BIN: the directory holding harness and harness-base}
OUT=${OUT:-out}
R=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUT"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
H=$BIN/harness
B=$BIN/harness-base
START=$(date +%s)
left() { echo $((${DEADLINE_S:-150} - ($(date +%s) - START))); }
. "$R/scripts/step-lib.sh"
# run NAME NEED_S LIMIT_S CMD...: `step` (scripts/step-lib.sh), CMD's output in NAME.txt,
# if NEED_S seconds are left (its limit cut to what is left).
run() {
    local name=$1 need=$2 limit=$3 t
    shift 3
    t=$(left)
    if [ "$t" -lt "$need" ]; then
        echo "$name skipped-$t-s-left 0" >> "$OUT/times.txt"
        return
    fi
    step "$name" $((limit < t ? limit : t)) "$@" > "$OUT/$name.txt" 2>&1
}
{
    echo "gpu-request: $(date -u +%FT%TZ), $(nproc) cores"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    ls -la "$BIN"
} > "$OUT/info.txt" 2>&1
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2> /dev/null | head -1)

# The e2e files, generated while the sanitizers run.
timeout 60 "$H" clcb generate --out-subscriptions "$W/clcb-s.jsonl" --out-events "$W/clcb-e.jsonl" \
    --subscriptions "${SUBS:-250000}" --events "${EVENTS:-1000000}" > "$OUT/generate.txt" 2>&1 &
GEN=$!
"$H" clcb generate --out-subscriptions "$W/small-s.jsonl" --out-events "$W/small-e.jsonl" \
    --subscriptions 2000 --events 5000 --area-percent 1 >> "$OUT/generate.txt" 2>&1

# 1. Answers against the CPU under the sanitizers.
for tool in memcheck racecheck; do
    run "san-$tool-keywords" 10 45 "$CS" --tool "$tool" --error-exitcode 9 "$H" run clcb keywords \
        --quick --seeds 1 --engines gpu,gpu-grid,gpu-cells,grid,rtree --out "$W/san-$tool"
done
run san-memcheck-match 5 25 bash -c "'$CS' --tool memcheck --error-exitcode 9 --log-file '$OUT/san-memcheck-match-log.txt' '$H' clcb match \
    --subscriptions '$W/small-s.jsonl' --events '$W/small-e.jsonl' --engine gpu-cells --stats \
    > '$W/small-gpu.out'"
{
    "$H" clcb match --subscriptions "$W/small-s.jsonl" --events "$W/small-e.jsonl" --engine grid > "$W/small-grid.out"
    echo "gpu-cells under memcheck: $(md5sum < "$W/small-gpu.out")"
    echo "grid:                     $(md5sum < "$W/small-grid.out")"
    echo "lines: $(wc -l < "$W/small-gpu.out"), answers: $(tr -cd ',' < "$W/small-grid.out" | wc -c) commas"
} > "$OUT/san-match-md5.txt" 2>&1

# 2. clcb match's start-up, new against base.
wait "$GEN"
ls -la "$W" >> "$OUT/generate.txt"
run e2e-clcb 20 70 env BIN="$BIN" OUT="$OUT/e2e" CLCB_S="$W/clcb-s.jsonl" CLCB_E="$W/clcb-e.jsonl" \
    DEADLINE_S=55 bash "$R/scripts/e2e-clcb-cut.sh"
rm -f "$W"/clcb-*.jsonl

# 3. The paper's kernels at 1M, paired.
for v in new base base new; do
    h=$H
    [ "$v" = base ] && h=$B
    n=1
    [ -e "$OUT/keywords-$v-1.txt" ] && n=2
    run "keywords-$v-$n" 25 40 env GPU_MATCH_CLCB_SIZES="${KEYWORDS_SIZES:-1000000}" "$h" run clcb keywords --seeds 1 \
        --engines gpu,gpu-cells,grid,rtree --out "$OUT/keywords-$v-$n"
done
cat "$OUT/times.txt"
