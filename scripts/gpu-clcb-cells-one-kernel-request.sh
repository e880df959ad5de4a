#!/usr/bin/env bash
# GPU request of branch h-cells (second form; the first, at 629b0f8, ran at 14:54 UTC:
# results/gpu-logs/cells-one-kernel-H200-2026-11-29/). The cell index with one kernel per
# launch (`cells_match` stages each event from the batch's columns, its last block hands
# the counts to the host; a key's slot in a directory stretch found in two rounds of
# loads; each lane's first attribute read with the cell's head) and the driving thread
# queuing launch k while the pool stages launch k+1, against the branch's start
# (`cells_split-base`, main at 9c50c9b: `cells_encode`, `cells_match`, `cells_counts` per
# launch, queuing before staging).
#
#     BIN=/dir/with/binaries OUT=/dir/for/results bash scripts/gpu-request.sh
#
# $BIN holds `harness` and `cells_split` (h-cells) and `cells_split-base` (9c50c9b), and,
# optionally, `harness-old` (main at 76cfabc, before rectangles) for step 5's pairs.
# Steps, most important first, each under `timeout`, the whole within 150 s:
#   1. Fig. 3a's workload at 1M subscriptions (`cells_split uniform 0.001`), new and base
#      alternated (new with launches of 65536 tapered, 65536 full, 131072 tapered; new
#      with `CELLS_BLOCK_WRITES=1`, each block writing its events' starts and lengths at
#      once); each prints its rounds' ns per event, the device's clock and whether every
#      answer equals the grid's;
#   2. compute-sanitizer memcheck (Fig. 3a's workload at 3000 subscriptions, the defaults
#      and both switches set; `keywords 1` at 2000) and racecheck (Fig. 3a's, 3000) of the
#      new kernels;
#   3. `harness run clcb fig3a` at 1M subscriptions, three seeds, engines grid and
#      gpu-cells;
#   4. the other workloads, new then base: `keywords` 0.01% and 1%, Table 2 (250k),
#      Figs. 3b (uniform 0.01%), 4d (Zipf 1%), 3d (uniform 1%);
#   5. `harness run clcb keywords` at 1M subscriptions, one seed, engine gpu (the paper's
#      kernels, which test circles alone again while an engine holds no rectangle): with
#      `harness-old` beside it when $BIN has one (old, new), else the new one alone.
# Steps past the 150 s are skipped.
# Everything goes into $OUT/out.tgz; $OUT/cells/summary.txt holds the rounds' lines.
set -uo pipefail
BIN=${BIN:?BIN: the directory holding harness, cells_split and cells_split-base}
OUT=${OUT:?OUT: the directory for the results}
R="$OUT/cells"
mkdir -p "$R"
T0=$(date +%s)
left() { echo $((150 - ($(date +%s) - T0))); }
LOG="$R/log.txt"
say() { echo "$*" | tee -a "$LOG"; }

# step NAME LIMIT COMMAND...: COMMAND under `timeout` (LIMIT seconds, less when the time
# left is shorter), its output in $R/NAME.txt with its exit status.
step() {
    local name=$1 limit=$2 l
    shift 2
    l=$(left)
    if [ "$l" -lt 8 ]; then
        say "skipped (time): $name"
        return
    fi
    [ "$limit" -gt $((l - 4)) ] && limit=$((l - 4))
    say "== $name ($(date -u +%T), limit $limit s): $*"
    local t=$(date +%s.%N)
    timeout "$limit" "$@" > "$R/$name.txt" 2>&1
    local rc=$?
    say "   exit $rc after $(awk "BEGIN { print $(date +%s.%N) - $t }") s"
}

say "gpu-request cells: $(date -u +%FT%TZ), $(nproc) cores"
command -v nvidia-smi > /dev/null &&
    say "gpu: $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | head -1)"
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer /opt/nvidia/*/compute-sanitizer 2> /dev/null | head -1)
say "compute-sanitizer: ${CS:-none}"
NEW="$BIN/cells_split"
BASE="$BIN/cells_split-base"

# 1. Fig. 3a's workload at 1M subscriptions, alternated.
step u-new-1 25 env CELLS_LAUNCH=65536,65536-,131072 "$NEW" uniform 0.001
step u-base-1 25 "$BASE" uniform 0.001
step u-new-block 25 env CELLS_BLOCK_WRITES=1 "$NEW" uniform 0.001
step u-base-2 25 "$BASE" uniform 0.001
step u-new-2 25 "$NEW" uniform 0.001

# 2. Sanitizers on small workloads, the new kernels.
if [ -n "$CS" ]; then
    step memcheck-uniform 15 env CELLS_ROUND=1024 "$CS" --tool memcheck --error-exitcode 9 "$NEW" uniform 0.001 3000
    step memcheck-uniform-switches 15 env CELLS_ROUND=1024 CELLS_COUNTS_LAUNCH=1 CELLS_BLOCK_WRITES=1 "$CS" \
        --tool memcheck --error-exitcode 9 "$NEW" uniform 0.001 3000
    step memcheck-keywords 12 env CELLS_ROUND=1024 "$CS" --tool memcheck --error-exitcode 9 "$NEW" keywords 1 2000
    step racecheck-uniform 15 env CELLS_ROUND=512 CELLS_BLOCK_WRITES=1 "$CS" --tool racecheck --error-exitcode 9 \
        "$NEW" uniform 0.001 3000
fi

# 3. The harness's Fig. 3a at 1M, three seeds.
step fig3a-harness 40 env GPU_MATCH_CLCB_SIZES=1000000 "$BIN/harness" run clcb fig3a --seeds 3 \
    --engines grid,gpu-cells --out "$R/rec"

# 4. The other workloads, new then base.
for w in "keywords 0.01" "keywords 1" "table2" "uniform 0.01"; do
    tag=${w// /-}
    args=()
    [ "$w" != table2 ] && read -ra args <<< "$w"
    step "$tag-new" 20 "$NEW" "${args[@]}"
    step "$tag-base" 20 "$BASE" "${args[@]}"
done

# 5. The paper's kernels on `keywords` at 1M: old then new when the old harness is there.
if [ -x "$BIN/harness-old" ]; then
    step keywords-paper-old 30 env GPU_MATCH_CLCB_SIZES=1000000 "$BIN/harness-old" run clcb keywords --seeds 1 \
        --engines gpu --out "$R/rec-old"
fi
step keywords-paper 30 env GPU_MATCH_CLCB_SIZES=1000000 "$BIN/harness" run clcb keywords --seeds 1 \
    --engines gpu --out "$R/rec"

{
    for f in "$R"/*.txt; do
        case "$f" in */log.txt | */summary.txt) continue ;; esac
        echo "== $(basename "$f")"
        grep -E "^GPU|^launches|round [2-5]|answers equal|ok in|gpu cells batched=|gpu=|disagree|ERROR SUMMARY|RACECHECK SUMMARY" "$f"
    done
} > "$R/summary.txt" 2>&1
say "done $(date -u +%T), $(($(date +%s) - T0)) s"
tar czf "$OUT/out.tgz" -C "$OUT" cells && rm -rf "$R"
