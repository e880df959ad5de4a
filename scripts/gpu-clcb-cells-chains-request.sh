#!/usr/bin/env bash
# GPU request of branch h-clcb (second form, for a run after the first at 12:33 UTC, whose
# results are in results/gpu-logs/cells-chains-H200-2026-11-29/): the branch's cell index
# (`cells_split`, `harness`: the kernels checked in that run) against a candidate not yet
# on the branch (`cells_split-next`: built from a81f442, the branch's commits d110a52 and
# a81f442, since reverted: the encoding hashes each string equality's key so that
# `cells_match` reads keys instead of strings' bytes; the batch dictionaries in one
# page-locked run and one queued copy), and `clcb match` in smaller windows.
#
#     BIN=/dir/with/binaries OUT=/dir/for/results bash scripts/gpu-request.sh
#
# Steps, most important first, each under `timeout`, the whole within 150 s:
#   1. `cells_split-next uniform 0.001` and `cells_split uniform 0.001`: Fig. 3a's
#      workload at 1M subscriptions, the stream of 65,536 events, its phases, and whether
#      the answers equal the grid's;
#   2. compute-sanitizer memcheck (Fig. 3a's workload at 3000 subscriptions and
#      `keywords 1` at 2000) and racecheck (Fig. 3a's, 3000) of `cells_split-next`;
#   3. `clcb match --stats` on generated files (250k subscriptions, 1M events; as
#      scripts/e2e-cut.sh makes them): `gpu-cells` in windows of 262,144 (the default),
#      131,072 and 65,536 events, `grid` once, md5 of the outputs;
#   4. `cells_split-next keywords 0.01` and `cells_split keywords 0.01` (1M subscriptions).
# Everything goes into $OUT/out.tgz.
set -uo pipefail
BIN=${BIN:?BIN: the directory holding harness, cells_split and cells_split-next}
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

# 1. Fig. 3a's workload at 1M subscriptions: the candidate, then the branch.
step fig3a-cells_split-next 40 "$BIN/cells_split-next" uniform 0.001
step fig3a-cells_split 40 "$BIN/cells_split" uniform 0.001

# 3's files, generated while the sanitizers run.
(timeout 50 "$BIN/harness" clcb generate --out-subscriptions "$W/s.jsonl" --out-events "$W/e.jsonl" \
    --subscriptions 250000 --events 1000000 > "$R/generate.txt" 2>&1; echo "exit $?" >> "$R/generate.txt") &
GEN=$!

# 2. Sanitizers on small workloads, the candidate's kernels.
if [ -n "$CS" ]; then
    step memcheck-uniform-next 15 env CELLS_ROUND=1024 "$CS" --tool memcheck --error-exitcode 9 "$BIN/cells_split-next" uniform 0.001 3000
    step memcheck-keywords-next 12 env CELLS_ROUND=1024 "$CS" --tool memcheck --error-exitcode 9 "$BIN/cells_split-next" keywords 1 2000
    step racecheck-uniform-next 15 env CELLS_ROUND=512 "$CS" --tool racecheck --error-exitcode 9 "$BIN/cells_split-next" uniform 0.001 3000
fi
wait $GEN
say "generated: $(cat "$R/generate.txt" | tail -1); $(wc -l < "$W/e.jsonl" 2> /dev/null) events"
cat "$W"/*.jsonl > /dev/null 2>&1

# 3. `clcb match` end to end. RUN: ENGINE-N or ENGINE-wWINDOW.
for run in gpu-cells-1 gpu-cells-w131072 gpu-cells-w65536 grid-1; do
    engine=${run%-*}
    win=()
    case "$run" in *-w*) win=(--window "${run##*-w}") ;; esac
    # The answers to a file, the --stats lines to $R/match-RUN.txt.
    step "match-$run" 20 bash -c 'out=$1; shift; "$@" > "$out"' _ "$W/$run.out" \
        "$BIN/harness" clcb match --subscriptions "$W/s.jsonl" --events "$W/e.jsonl" --engine "$engine" --stats "${win[@]}"
    [ -f "$W/$run.out" ] && say "   $run md5 $(md5sum < "$W/$run.out" | cut -c1-12)"
done

# 4. `keywords` with 0.01% regions at 1M subscriptions: the candidate, then the branch.
step keywords-cells_split-next 30 "$BIN/cells_split-next" keywords 0.01
step keywords-cells_split 30 "$BIN/cells_split" keywords 0.01

say "done $(date -u +%T), $(( $(date +%s) - T0 )) s"
tar czf "$OUT/out.tgz" -C "$OUT" clcb && rm -rf "$R"
