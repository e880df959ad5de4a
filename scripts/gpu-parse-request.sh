#!/usr/bin/env bash
# One run on the GPU machine (16 cores, one H200) of the users' streaming commands with
# --stats, on this branch's binary ($BIN/harness, `new`) and on main's before it
# ($BIN/harness-base, `base`, if present): `ccm match` (Table 1's default scenario, 1M
# events) and `clcb match` (250k subscriptions, 1M events), each on its GPU engine and its
# strongest CPU engine, new and base alternating, three rounds; then the same GPU commands
# with other windows, and the parsing's ceiling (one subscription). Outputs compared by
# md5 (every run of one command must print the same answers).
#
#     BIN=/dir/with/binaries OUT=/dir/for/results bash gpu-parse-request.sh
#
# Needs scripts/e2e-lib.sh beside it (the recording of a run, as scripts/e2e-cut.sh). Writes
# $OUT/parse.txt (each run's --stats), $OUT/parse.csv (binary,command,engine,run,phase,
# seconds,note) and $OUT/md5.txt (the answers' md5 per command and binary). Finishes
# within about 190 s (every step under `timeout`; late runs are skipped, not cut).
set -uo pipefail
. "$(dirname "$0")/e2e-lib.sh"
BIN=${BIN:?BIN: the directory holding harness (and harness-base)}
OUT=${OUT:-out}
mkdir -p "$OUT"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
CSV="$OUT/parse.csv"
LOG="$OUT/parse.txt"
echo "binary,command,engine,run,phase,seconds,note" > "$CSV"
: > "$LOG"
say() { echo "$*" | tee -a "$LOG"; }
T0=$(date +%s)
left() { echo $(( 185 - ($(date +%s) - T0) )); }
say "gpu-parse-request: $(date -u +%FT%TZ), $(nproc) cores"
command -v nvidia-smi > /dev/null &&
    say "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
H=$BIN/harness
BINS="new=$BIN/harness"
[ -x "$BIN/harness-base" ] && BINS="$BINS base=$BIN/harness-base"
# SMALL=1: a dry run off the GPU machine (small files; the GPU engines then fail and say so).
if [ -n "${SMALL:-}" ]; then
    CCM_EV=3000; CLCB_SUBS=3000; CLCB_EV=3000
else
    CCM_EV=1000000; CLCB_SUBS=250000; CLCB_EV=1000000
fi
t0=$(date +%s.%N)
timeout 60 "$H" ccm generate --out-subscriptions "$W/ccm-s.jsonl" --out-events "$W/ccm-e.jsonl" --events $CCM_EV &
timeout 60 "$H" clcb generate --out-subscriptions "$W/clcb-s.jsonl" --out-events "$W/clcb-e.jsonl" \
    --subscriptions $CLCB_SUBS --events $CLCB_EV &
wait
head -1 "$W/ccm-s.jsonl" > "$W/ccm-s1.jsonl"
say "generated in $(awk "BEGIN { print $(date +%s.%N) - $t0 }") s:"
for f in "$W"/ccm-s.jsonl "$W"/ccm-e.jsonl "$W"/clcb-s.jsonl "$W"/clcb-e.jsonl; do
    say "  $(basename "$f"): $(wc -l < "$f") lines, $(( $(stat -c %s "$f") / 1000000 )) MB"
done
cat "$W"/*.jsonl > /dev/null

# run NAME BIN CMD ENGINE RUN ARGS...: one command with --stats (ENGINE `default` adds no
# --engine), its stats into $LOG and $CSV, its answers' md5 into $CSV.
run() {
    local name=$1 bin=$2 cmd=$3 engine=$4 runno=$5; shift 5
    if [ "$(left)" -lt 15 ]; then
        echo "skipped (time): $name $cmd $engine $runno" >> "$LOG"
        return
    fi
    local eng=()
    [ "$engine" = default ] || eng=(--engine "$engine")
    local t s tv=()
    [ -x /usr/bin/time ] && tv=(/usr/bin/time -f "%U %S %M" -o "$W/time")
    rm -f "$W/time"
    t=$(date +%s.%N)
    "${tv[@]}" timeout 30 "$bin" "$@" "${eng[@]}" --stats > "$W/out" 2> "$W/err" || echo "exit $? ($name $cmd $engine)" >> "$W/err"
    s=$(awk "BEGIN { print $(date +%s.%N) - $t }")
    if [ -s "$W/time" ]; then
        read -r u sy m < <(tail -1 "$W/time")
        echo "cpu: user $u s, sys $sy s, max RSS $m kB" >> "$W/err"
        echo "$name,$cmd,$engine,$runno,user,$u," >> "$CSV"
        echo "$name,$cmd,$engine,$runno,sys,$sy," >> "$CSV"
    fi
    e2e_record "$name" "$cmd" "$engine" "$runno" "$s"
    local sum
    sum=$(md5sum < "$W/out")
    echo "$cmd $engine $name ${sum:0:12} $(wc -l < "$W/out") lines" >> "$W/md5"
}

CCM=(--subscriptions "$W/ccm-s.jsonl" --events "$W/ccm-e.jsonl")
CLCB=(--subscriptions "$W/clcb-s.jsonl" --events "$W/clcb-e.jsonl")
# A first GPU run warms the driver's JIT cache (not recorded as a round).
run new "$H" ccm-warm default 0 ccm match "${CCM[@]}"
for r in 1 2 3; do
    for pair in $BINS; do
        name=${pair%%=*}; bin=${pair#*=}
        run "$name" "$bin" ccm default $r ccm match "${CCM[@]}"
        run "$name" "$bin" ccm hybrid $r ccm match "${CCM[@]}"
    done
done
for r in 1 2; do
    for pair in $BINS; do
        name=${pair%%=*}; bin=${pair#*=}
        run "$name" "$bin" clcb gpu-cells $r clcb match "${CLCB[@]}"
        run "$name" "$bin" clcb grid $r clcb match "${CLCB[@]}"
    done
done
# The parsing's ceiling: one subscription (next to nothing to match), every binary.
for pair in $BINS; do
    name=${pair%%=*}; bin=${pair#*=}
    run "$name" "$bin" ccm-parse sff 1 ccm match --subscriptions "$W/ccm-s1.jsonl" --events "$W/ccm-e.jsonl"
done
# Does the stream scale with the cores? The same on 8 of them (new binary).
RAYON_NUM_THREADS=8 run new "$H" ccm-parse-8t sff 1 ccm match --subscriptions "$W/ccm-s1.jsonl" --events "$W/ccm-e.jsonl"
RAYON_NUM_THREADS=8 run new "$H" ccm-8t default 1 ccm match "${CCM[@]}"
# Other windows on the GPU engines (new binary only): does a larger window help?
for w in 16384 262144; do
    run new "$H" "ccm-w$w" default 1 ccm match "${CCM[@]}" --window $w
    run new "$H" "clcb-w$w" gpu-cells 1 clcb match "${CLCB[@]}" --window $w
done
for r in 4 5; do
    for pair in $BINS; do
        name=${pair%%=*}; bin=${pair#*=}
        run "$name" "$bin" ccm default $r ccm match "${CCM[@]}"
        run "$name" "$bin" clcb gpu-cells $r clcb match "${CLCB[@]}"
    done
done
# Answers: one md5 per command over all binaries and engines (a command whose runs differ
# is listed with every md5 seen).
{
    echo "answers' md5 per command (all engines, binaries and runs):"
    awk '{ k = $1; if (k ~ /^ccm-parse/) k = "ccm-parse"; else if (k ~ /^ccm/) k = "ccm"; if (k ~ /^clcb/) k = "clcb";
           seen[k] = seen[k] (index(seen[k], $4) ? "" : " " $4) }
         END { for (k in seen) { n = split(seen[k], a, " "); print k ":" seen[k] (n == 1 ? "  (all equal)" : "  DIFFER") } }' "$W/md5" | sort
    echo
    sort "$W/md5" | uniq -c
} > "$OUT/md5.txt"
cat "$OUT/md5.txt" >> "$LOG"
say "done: $(date -u +%FT%TZ), $(( $(date +%s) - T0 )) s"
