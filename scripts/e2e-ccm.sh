#!/usr/bin/env bash
# End-to-end throughput of `harness ccm match` on the GPU machine:
# the CCM default scenario (Table 1: 10 interfaces x 25,000 filters, 100 names), 1M events
# streamed from standard input through `ccm match --engine gpu`, JSON in and JSON out.
#
# Run from the repository root with the binary built here and carried to .carry/harness:
#     OUT=/some/dir bash scripts/e2e-ccm.sh
# Writes to $OUT: e2e-ccm-runs.tgz (each run's --stats and /usr/bin/time -v output, as
# e2e-ccm-NAME.txt) and e2e-ccm-summary.txt (the figures the end-to-end targets are read
# from):
#   - events/s end to end with the subscriptions loaded (targets: >= 1M events/s for the
#     paper's engines, >= 5M for ENGINE=gpu-index, the pruning index): the
#     "stream (end to end)" line of --stats;
#   - subscriptions (26 MB JSON Lines) loaded and indexed (target <= 0.3 s): "load +
#     index" (parsing and laying out overlap; then "upload tables" to the GPU);
#   - peak RSS (target <= 2x the subscriptions' in-memory size, whatever the number of
#     events): --stats' "peak RSS" (VmHWM) and time -v's maximum resident set, for 100k
#     and 1M events, against the "MB in memory" the parsed subscriptions take as a list
#     (the kernels' path never holds them all at once: they are laid out window by window).
# The GPU's answers on the first 20,000 events are compared with the CPU engine's (sff).
set -euo pipefail

H=${H:-.carry/harness}
OUT=${OUT:-out}
EVENTS=${EVENTS:-1000000}
# ENGINE=sff EVENTS=3000 H=target/release/harness: a dry run of this script without a GPU.
ENGINE=${ENGINE:-gpu}
mkdir -p "$OUT"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT

say() { echo "$*" | tee -a "$OUT/e2e-ccm-summary.txt"; }
: > "$OUT/e2e-ccm-summary.txt"
say "e2e-ccm: $(date -u +%FT%TZ), $(nproc) cores, binary $H"
command -v nvidia-smi > /dev/null && say "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"

# The workload: the default scenario, $EVENTS events (generation is not timed).
t0=$(date +%s.%N)
"$H" ccm generate --out-subscriptions "$W/subs.jsonl" --out-events "$W/events.jsonl" \
    --events "$EVENTS" --seed 1
say "generated in $(awk "BEGIN { print $(date +%s.%N) - $t0 }") s: subscriptions $(wc -l < "$W/subs.jsonl") lines," \
    "$(( $(stat -c %s "$W/subs.jsonl") / 1000000 )) MB; events $(wc -l < "$W/events.jsonl") lines," \
    "$(( $(stat -c %s "$W/events.jsonl") / 1000000 )) MB"
head -n 100000 "$W/events.jsonl" > "$W/events-100k.jsonl"
head -n 20000 "$W/events.jsonl" > "$W/events-20k.jsonl"

TIME=()
if [ -x /usr/bin/time ]; then TIME=(/usr/bin/time -v); fi

# run NAME ARGS...: harness ccm match with --stats, events on stdin from $IN, answers
# to $W/NAME.out, stderr (stats, time -v) to $OUT/e2e-ccm-NAME.txt.
run() {
    local name=$1; shift
    "${TIME[@]}" "$H" ccm match --stats --subscriptions "$W/subs.jsonl" --events - "$@" \
        < "$IN" > "$W/$name.out" 2> "$OUT/e2e-ccm-$name.txt" || {
        echo "run $name failed:"; cat "$OUT/e2e-ccm-$name.txt"; return 1; }
    local stream load inmem build upload rss maxrss
    local f="$OUT/e2e-ccm-$name.txt"
    stream=$(sed -n 's/^stats: stream (end to end) *//p' "$f")
    load=$(awk '/^stats: load \+ index/ {print $5}' "$f")
    inmem=$(grep -o '[0-9.]* MB in memory' "$f" | head -1 | awk '{print $1}')
    build=$(sed -n 's/^stats: build[^0-9]*\([0-9.]*\) s.*/\1/p' "$f")
    upload=$(awk '/^stats: upload tables/ {print $4}' "$f")
    rss=$(awk '/peak RSS/ {print $4}' "$f")
    maxrss=$(awk '/Maximum resident set size/ {print $NF}' "$f")
    say "$name: $stream | load + index ${load:-?} s (build ${build:-?} s), upload ${upload:-n/a} s |" \
        "peak RSS ${rss:-?} MB (time -v: ${maxrss:-n/a} kB), subscriptions ${inmem:-?} MB in memory"
}

# Loading and indexing alone (no events).
IN=/dev/null run load --engine "$ENGINE"

# The stream, at the default window and others.
IN="$W/events.jsonl" run gpu-1m --engine "$ENGINE"
IN="$W/events-100k.jsonl" run gpu-100k --engine "$ENGINE"
for win in 2048 32768 131072; do
    IN="$W/events.jsonl" run "gpu-1m-window$win" --engine "$ENGINE" --window "$win"
done

# The GPU's answers against the CPU engine's on a prefix.
IN="$W/events-20k.jsonl" run sff-20k --engine sff
if cmp -s <(head -n 20000 "$W/gpu-1m.out") "$W/sff-20k.out"; then
    say "check: $ENGINE answers = sff answers on the first $(wc -l < "$W/sff-20k.out") events"
else
    say "check: MISMATCH between gpu and sff on the first 20000 events"
    exit 1
fi
say "answers: $(wc -l < "$W/gpu-1m.out") lines, $(grep -c '^\[\]$' "$W/gpu-1m.out" || true) empty"

# The device tool returns at most 8 files: the runs' logs go back as one tarball beside the
# summary.
tar czf "$OUT/e2e-ccm-runs.tgz" -C "$OUT" $(cd "$OUT" && ls e2e-ccm-*.txt | grep -v summary) \
    && (cd "$OUT" && ls e2e-ccm-*.txt | grep -v summary | xargs rm -f)
