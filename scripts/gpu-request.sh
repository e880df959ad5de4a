#!/usr/bin/env bash
# GPU request of branch h-clcb: the cell index's kernels after their changes (the event's
# cell head, signature and key flags written by the encoding; the directory searched by
# fences across the warp; one 8-byte answer word per event; encode blocks of 64) and
# `clcb match` with its page-locked answers made before the stream.
#
#     BIN=/dir/with/binaries OUT=/dir/for/results bash scripts/gpu-request.sh
#
# $BIN holds `harness`, `cells_split` (this branch) and `cells_split-base` (the clcb
# example at d4eeb8b, before the changes). Steps, most important first, each under
# `timeout`, the whole within 150 s:
#   1. `cells_split uniform 0.001`: Fig. 3a's workload at 1M subscriptions, the stream of
#      65,536 events, its phases, and whether its answers equal the grid's;
#   2. compute-sanitizer memcheck (Fig. 3a's workload at 3000 subscriptions and
#      `keywords 1` at 2000, whose events answer many) and racecheck (Fig. 3a's, 3000);
#   3. `clcb match --stats` on generated files (250k subscriptions, 1M events; as
#      scripts/e2e-cut.sh makes them): `gpu-cells` twice, `grid` once, `gpu-cells` with
#      windows of 131,072 and 65,536 events, md5 of the outputs;
#   4. `harness run clcb fig3a --seeds 1` at 1M subscriptions, grid and gpu-cells only;
#   5. `cells_split-base uniform 0.001`: the same as step 1 before the changes, if time is
#      left.
# Everything goes into $OUT/out.tgz.
set -uo pipefail
BIN=${BIN:?BIN: the directory holding harness, cells_split and cells_split-base}
OUT=${OUT:?OUT: the directory for the results}
R="$OUT/clcb"
mkdir -p "$R"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
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
    if [ "$l" -lt 10 ]; then
        say "skipped (time): $name"
        return
    fi
    [ "$limit" -gt $((l - 6)) ] && limit=$((l - 6))
    say "== $name ($(date -u +%T), limit $limit s): $*"
    local t=$(date +%s.%N)
    timeout "$limit" "$@" > "$R/$name.txt" 2>&1
    local rc=$?
    say "   exit $rc after $(awk "BEGIN { print $(date +%s.%N) - $t }") s"
}

say "gpu-request clcb: $(date -u +%FT%TZ), $(nproc) cores"
command -v nvidia-smi > /dev/null &&
    say "gpu: $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | head -1)"
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer /opt/nvidia/*/compute-sanitizer 2> /dev/null | head -1)
say "compute-sanitizer: ${CS:-none}"

# 1. Fig. 3a's workload at 1M subscriptions.
step fig3a-cells_split 45 "$BIN/cells_split" uniform 0.001

# 3's files, generated while the sanitizers run.
(timeout 50 "$BIN/harness" clcb generate --out-subscriptions "$W/s.jsonl" --out-events "$W/e.jsonl" \
    --subscriptions 250000 --events 1000000 > "$R/generate.txt" 2>&1; echo "exit $?" >> "$R/generate.txt") &
GEN=$!

# 2. Sanitizers on small workloads.
if [ -n "$CS" ]; then
    step memcheck-uniform 15 env CELLS_ROUND=1024 "$CS" --tool memcheck --error-exitcode 9 "$BIN/cells_split" uniform 0.001 3000
    step memcheck-keywords 12 env CELLS_ROUND=1024 "$CS" --tool memcheck --error-exitcode 9 "$BIN/cells_split" keywords 1 2000
    step racecheck-uniform 15 env CELLS_ROUND=512 "$CS" --tool racecheck --error-exitcode 9 "$BIN/cells_split" uniform 0.001 3000
fi
wait $GEN
say "generated: $(cat "$R/generate.txt" | tail -1); $(wc -l < "$W/e.jsonl" 2> /dev/null) events"
cat "$W"/*.jsonl > /dev/null 2>&1

# 3. `clcb match` end to end.
# RUN: ENGINE-N or ENGINE-wWINDOW.
for run in gpu-cells-1 gpu-cells-2 grid-1 gpu-cells-w131072 gpu-cells-w65536; do
    engine=${run%-*}
    win=()
    case "$run" in *-w*) win=(--window "${run##*-w}") ;; esac
    # The answers to a file, the --stats lines to $R/match-RUN.txt.
    step "match-$run" 20 bash -c 'out=$1; shift; "$@" > "$out"' _ "$W/$run.out" \
        "$BIN/harness" clcb match --subscriptions "$W/s.jsonl" --events "$W/e.jsonl" --engine "$engine" --stats "${win[@]}"
    [ -f "$W/$run.out" ] && say "   $run md5 $(md5sum < "$W/$run.out" | cut -c1-12)"
done

# 4. The harness's Fig. 3a at 1M subscriptions.
step fig3a-harness 55 env GPU_MATCH_CLCB_SIZES=1000000 GPU_MATCH_INDEX_SPLIT=1 \
    "$BIN/harness" run clcb fig3a --seeds 1 --engines grid,gpu-cells --out "$R/results"

# 5. The same workload before the changes.
step fig3a-cells_split-base 45 "$BIN/cells_split-base" uniform 0.001

say "done $(date -u +%T), $(( $(date +%s) - T0 )) s"
tar czf "$OUT/out.tgz" -C "$OUT" clcb && rm -rf "$R"
