#!/usr/bin/env bash
# One run on the GPU machine (16 cores, one H200) for the cell index's and the grid's
# builds on all cores and the spilled answers of Fig. 4d's events (branch h-clcb-build):
#   1. `clcb match --stats` on 250k subscriptions and 1M events (the e2e files), gpu-cells
#      and grid, twice each: the builds' phases in the notes, answers' md5;
#   2. cells_split on Fig. 4d's workload (1M subscriptions, Zipf, 1% areas) with this
#      branch's library (`cells_split`) and main's before it (`cells_split-base`, the same
#      example less the new split lines): the build and the time per event split;
#   3. `harness run clcb fig4d --seeds 1 --engines gpu-cells,grid` with the split
#      (GPU_MATCH_INDEX_SPLIT=1), its CSV under $OUT/fig4d.
#
#     BIN=/dir/with/binaries OUT=/dir/for/results bash scripts/gpu-clcb-build-request.sh
#
# $BIN holds harness, cells_split and cells_split-base. Every step under `timeout`;
# within about 200 s in all (steps are skipped when too little time is left).
# SMALL=1: a dry run off the GPU machine (small sizes, the emulator).
set -uo pipefail
BIN=${BIN:?BIN: the directory holding harness, cells_split, cells_split-base}
OUT=${OUT:-out}
mkdir -p "$OUT"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
LOG="$OUT/log.txt"
: > "$LOG"
T0=$(date +%s)
left() { echo $(( 195 - ($(date +%s) - T0) )); }
say() { echo "$*" | tee -a "$LOG"; }
say "gpu-clcb-build-request: $(date -u +%FT%TZ), $(nproc) cores, commit $(cat "$BIN/COMMIT" 2>/dev/null)"
command -v nvidia-smi > /dev/null &&
    say "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
say "transparent huge pages: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>&1)"

if [ -n "${SMALL:-}" ]; then
    SUBS=2000; EVENTS=2000; SPLIT_SUBS=(2000); Q=(--quick)
else
    SUBS=250000; EVENTS=1000000; SPLIT_SUBS=(); Q=()
fi

# 1. The users' command on the e2e files.
t=$(date +%s.%N)
timeout 60 "$BIN/harness" clcb generate --out-subscriptions "$W/s.jsonl" --out-events "$W/e.jsonl" \
    --subscriptions $SUBS --events $EVENTS 2>> "$LOG"
say "generated in $(awk "BEGIN { print $(date +%s.%N) - $t }") s: $(wc -l < "$W/s.jsonl") subscription lines, $(wc -l < "$W/e.jsonl") events"
cat "$W/s.jsonl" "$W/e.jsonl" > /dev/null
for run in 1 2; do
    for engine in gpu-cells grid; do
        [ "$(left)" -lt 20 ] && { say "skipped clcb match $engine run $run: time"; continue; }
        t=$(date +%s.%N)
        timeout 30 "$BIN/harness" clcb match --engine "$engine" --stats \
            --subscriptions "$W/s.jsonl" --events "$W/e.jsonl" > "$W/out" 2> "$W/err"
        rc=$?
        say "== clcb match --engine $engine run $run: rc $rc, wall $(awk "BEGIN { print $(date +%s.%N) - $t }") s, answers md5 $(md5sum < "$W/out" | cut -c1-12)"
        grep -v '^stats:' "$W/err" | head -5 | tee -a "$LOG"
        grep '^stats:' "$W/err" | tee -a "$LOG"
    done
done
rm -f "$W/s.jsonl" "$W/e.jsonl" "$W/out"

# 2. Fig. 4d's workload: this branch, then main before it.
for b in cells_split cells_split-base; do
    [ "$(left)" -lt 45 ] && { say "skipped $b: time"; continue; }
    say "== $b zipf 1 (1M subscriptions)"
    timeout 50 "$BIN/$b" zipf 1 "${SPLIT_SUBS[@]}" 2>&1 | tee -a "$LOG"
    say "rc ${PIPESTATUS[0]}"
done

# 3. The harness's Fig. 4d, the cell index against the grid on all cores.
if [ "$(left)" -gt 30 ]; then
    say "== harness run clcb fig4d --seeds 1 --engines gpu-cells,grid"
    GPU_MATCH_INDEX_SPLIT=1 timeout "$(( $(left) - 3 ))" "$BIN/harness" run clcb fig4d --seeds 1 "${Q[@]}" \
        --engines gpu-cells,grid --out "$OUT/fig4d" 2>&1 | tee -a "$LOG"
    say "rc ${PIPESTATUS[0]}"
else
    say "skipped harness fig4d: time"
fi
say "done in $(( $(date +%s) - T0 )) s"
