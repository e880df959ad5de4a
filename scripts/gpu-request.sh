#!/usr/bin/env bash
# GPU request of branch h-cells: the cell index with one kernel per launch (`cells_match`
# stages each event from the batch's columns, its last block hands the counts to the host;
# a key's slot in a directory stretch found in two rounds of loads; optionally each block
# writes its events' starts and lengths at once) against the branch's start (`cells_split-base`, main at 9c50c9b: `cells_encode`, `cells_match`,
# `cells_counts` per launch).
#
#     BIN=/dir/with/binaries OUT=/dir/for/results bash scripts/gpu-request.sh
#
# $BIN holds `harness` and `cells_split` (h-cells) and `cells_split-base` (9c50c9b).
# Steps, most important first, each under `timeout`, the whole within 150 s:
#   1. Fig. 3a's workload at 1M subscriptions (`cells_split uniform 0.001`), new and base
#      alternated (new with launches of 65536 tapered, 65536 full, 131072 tapered; new
#      with `CELLS_BLOCK_WRITES=1`, each block writing its events' starts and lengths
#      at once; new with `CELLS_COUNTS_LAUNCH=1`, the counts handed over by
#      `cells_counts` as before);
#      each prints its rounds' ns per event, the device's clock and whether every answer
#      equals the grid's;
#   2. compute-sanitizer memcheck (Fig. 3a's workload at 3000 subscriptions, the
#      defaults and both switches set; `keywords 1` at 2000) and racecheck (Fig. 3a's, 3000) of
#      the new kernels;
#   3. `harness run clcb fig3a` at 1M subscriptions, one seed, engines grid and
#      gpu-cells (the device's split asked for);
#   4. the other workloads, new then base: `keywords` 0.01% and 1%, Table 2 (250k),
#      Figs. 3b (uniform 0.01%), 3d (uniform 1%), 4a (Zipf 0.001%), 4d (Zipf 1%);
#   5. `harness run clcb keywords` at 1M subscriptions, one seed, engine gpu (the paper's
#      kernels, which test circles alone again while an engine holds no rectangle), to
#      set beside results/gpu-logs/session-final-H200-2026-11-29-1317/paired-3seeds/;
#   6. Nsight Compute (if found) on two launches of the new `cells_match` (Fig. 3a, 1M).
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
step u-new-counts 25 env CELLS_COUNTS_LAUNCH=1 "$NEW" uniform 0.001
step u-base-2 25 "$BASE" uniform 0.001
step u-new-2 25 "$NEW" uniform 0.001

# 2. Sanitizers on small workloads, the new kernels.
if [ -n "$CS" ]; then
    step memcheck-uniform 15 env CELLS_ROUND=1024 "$CS" --tool memcheck --error-exitcode 9 "$NEW" uniform 0.001 3000
    step memcheck-uniform-switches 15 env CELLS_ROUND=1024 CELLS_COUNTS_LAUNCH=1 CELLS_BLOCK_WRITES=1 "$CS" --tool memcheck --error-exitcode 9 "$NEW" uniform 0.001 3000
    step memcheck-keywords 12 env CELLS_ROUND=1024 "$CS" --tool memcheck --error-exitcode 9 "$NEW" keywords 1 2000
    step racecheck-uniform 15 env CELLS_ROUND=512 "$CS" --tool racecheck --error-exitcode 9 "$NEW" uniform 0.001 3000
fi

# 3. The harness's Fig. 3a at 1M, three seeds.
step fig3a-harness 25 env GPU_MATCH_CLCB_SIZES=1000000 GPU_MATCH_INDEX_SPLIT=1 "$BIN/harness" run clcb fig3a \
    --seeds 1 --engines grid,gpu-cells --out "$R/rec"

# 4. The other workloads, new then base.
for w in "keywords 0.01" "keywords 1" "table2" "uniform 0.01" "zipf 1" "uniform 1" "zipf 0.001"; do
    tag=${w// /-}
    args=()
    [ "$w" != table2 ] && read -ra args <<< "$w"
    step "$tag-new" 20 "$NEW" "${args[@]}"
    step "$tag-base" 20 "$BASE" "${args[@]}"
done

# 5. The paper's kernels on `keywords` at 1M.
step keywords-paper 40 env GPU_MATCH_CLCB_SIZES=1000000 "$BIN/harness" run clcb keywords --seeds 1 \
    --engines gpu --out "$R/rec"

# 6. Nsight Compute on two launches of the new kernel.
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2> /dev/null | head -1)
if [ -n "$NCU" ]; then
    step ncu-uniform 30 env CELLS_LAUNCH=16384 "$NCU" -k cells_match -s 8 -c 2 --section SpeedOfLight \
        --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats \
        "$NEW" uniform 0.001
fi

{
    for f in "$R"/*.txt; do
        case "$f" in */log.txt | */summary.txt) continue ;; esac
        echo "== $(basename "$f")"
        grep -E "^GPU|^launches|round [2-5]|answers equal|ok in|gpu cells batched=|disagree|ERROR SUMMARY|RACECHECK SUMMARY|Duration|Achieved Occupancy|Registers Per" "$f"
    done
} > "$R/summary.txt" 2>&1
say "done $(date -u +%T), $(($(date +%s) - T0)) s"
tar czf "$OUT/out.tgz" -C "$OUT" cells && rm -rf "$R"
