#!/usr/bin/env bash
# `ccm match` end to end on the GPU machine (16 cores, one H200), this branch's binary
# only ($BIN/harness): Table 1's default scenario, 1M events (about 51 MB of JSON Lines)
# generated here by the binary itself, files in the page cache. The default engine (the
# GPU index) and `hybrid` (the strongest CPU engine, the same parsing), three runs each,
# alternating, with --stats; then the parsing's ceiling (one subscription, `sff`), the
# events from standard input redirected from the file (mapped too) and through a pipe
# (read, not mapped), and two other windows. Every run's answers' md5 is recorded: all the
# runs over the full subscriptions must print the same answers.
#
#     BIN=/dir/with/harness OUT=/dir/for/results bash gpu-request.sh
#
# Writes $OUT/ccm-stream.txt (each run's --stats and its CPU time and peak memory from
# /usr/bin/time), $OUT/ccm-stream.csv (run,engine,round,phase,seconds,note) and
# $OUT/md5.txt. Self-contained (needs nothing of the repository). Finishes within about
# 150 s: every step under `timeout`, and runs are skipped, not cut, when time runs out.
set -uo pipefail
BIN=${BIN:?BIN: the directory holding harness}
OUT=${OUT:-out}
H=$BIN/harness
mkdir -p "$OUT"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
LOG="$OUT/ccm-stream.txt"
CSV="$OUT/ccm-stream.csv"
: > "$LOG"
echo "run,engine,round,phase,seconds,note" > "$CSV"
T0=$(date +%s)
left() { echo $(( 170 - ($(date +%s) - T0) )); }
say() { echo "$*" | tee -a "$LOG"; }
say "gpu-request (ccm-stream): $(date -u +%FT%TZ), $(nproc) cores, $("$H" --version 2>/dev/null | head -1)"
command -v nvidia-smi > /dev/null &&
    say "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
EV=${EVENTS:-1000000}
t=$(date +%s.%N)
timeout 60 "$H" ccm generate --out-subscriptions "$W/s.jsonl" --out-events "$W/e.jsonl" --events "$EV" --seed 1 ||
    say "generate failed: $?"
head -n 1 "$W/s.jsonl" > "$W/s1.jsonl"
say "generated in $(awk "BEGIN { print $(date +%s.%N) - $t }") s: subscriptions $(wc -l < "$W/s.jsonl") lines," \
    "$(( $(stat -c %s "$W/s.jsonl") / 1000000 )) MB; events $(wc -l < "$W/e.jsonl") lines, $(( $(stat -c %s "$W/e.jsonl") / 1000000 )) MB"
cat "$W"/*.jsonl > /dev/null

# run NAME ENGINE ROUND [MODE] -- ARGS...: `harness ccm match ARGS --stats` (ENGINE `default`
# adds no --engine); MODE `stdin` feeds the events file as standard input (`--events -`),
# `pipe` through `cat |`. Its stats into $LOG and $CSV, its answers' md5 into $W/md5.
run() {
    local name=$1 engine=$2 round=$3 mode=$4; shift 5
    if [ "$(left)" -lt 10 ]; then
        echo "skipped (time): $name $engine $round" >> "$LOG"
        return
    fi
    local eng=() tv=()
    [ "$engine" = default ] || eng=(--engine "$engine")
    [ -x /usr/bin/time ] && tv=(/usr/bin/time -f "%e %U %S %M" -o "$W/time")
    rm -f "$W/time"
    local t s
    t=$(date +%s.%N)
    case $mode in
        file) "${tv[@]}" timeout 30 "$H" ccm match "$@" "${eng[@]}" --stats > "$W/out" 2> "$W/err" ;;
        stdin) "${tv[@]}" timeout 30 "$H" ccm match "$@" --events - "${eng[@]}" --stats < "$W/e.jsonl" > "$W/out" 2> "$W/err" ;;
        pipe) cat "$W/e.jsonl" | "${tv[@]}" timeout 30 "$H" ccm match "$@" --events - "${eng[@]}" --stats > "$W/out" 2> "$W/err" ;;
    esac
    local rc=$?
    s=$(awk "BEGIN { print $(date +%s.%N) - $t }")
    {
        echo "== $name $engine round $round ($mode): exit $rc, wall $s s"
        [ -s "$W/time" ] && read -r e u sy m < <(tail -1 "$W/time") &&
            echo "time: wall $e s, user $u s, sys $sy s, max RSS $m kB"
        cat "$W/err"
    } >> "$LOG"
    echo "$name,$engine,$round,wall,$s," >> "$CSV"
    sed -n 's/^stats: //p' "$W/err" | awk -v pre="$name,$engine,$round" '{
        n = split($0, f, /  +/); phase = f[1]; val = f[2]; sub(/ .*/, "", val);
        note = ""; for (i = 3; i <= n; i++) note = note (i > 3 ? " " : "") f[i];
        gsub(/"/, "\"\"", note);
        printf "%s,\"%s\",%s,\"%s\"\n", pre, phase, val, note }' >> "$CSV"
    local sum
    sum=$(md5sum < "$W/out")
    echo "$name $engine $round ${sum:0:12} $(wc -l < "$W/out") lines" >> "$W/md5"
    say "$name $engine $round: wall $s s; $(sed -n 's/^stats: stream (end to end) *//p' "$W/err")"
}

S=(--subscriptions "$W/s.jsonl")
# A first GPU run warms the driver's JIT cache (recorded, not a round).
run warm default 0 file -- "${S[@]}" --events "$W/e.jsonl"
for r in 1 2 3; do
    run ccm default $r file -- "${S[@]}" --events "$W/e.jsonl"
    run ccm hybrid $r file -- "${S[@]}" --events "$W/e.jsonl"
done
# The parsing's ceiling: one subscription (next to nothing to match).
run ccm-parse sff 1 file -- --subscriptions "$W/s1.jsonl" --events "$W/e.jsonl"
run ccm-parse sff 2 file -- --subscriptions "$W/s1.jsonl" --events "$W/e.jsonl"
# Standard input: redirected from the file (mapped as the file is), through a pipe (read).
run ccm-stdin default 1 stdin -- "${S[@]}"
run ccm-pipe default 1 pipe -- "${S[@]}"
run ccm-pipe hybrid 1 pipe -- "${S[@]}"
# Other windows, and fewer threads.
for w in 16384 262144; do
    run "ccm-w$w" default 1 file -- "${S[@]}" --events "$W/e.jsonl" --window $w
done
RAYON_NUM_THREADS=8 run ccm-8t default 1 file -- "${S[@]}" --events "$W/e.jsonl"
# Two more rounds of the main comparison, if time is left.
for r in 4 5; do
    run ccm default $r file -- "${S[@]}" --events "$W/e.jsonl"
    run ccm hybrid $r file -- "${S[@]}" --events "$W/e.jsonl"
done
{
    echo "answers' md5 (every run over the full subscriptions must agree; ccm-parse has its own):"
    awk '{ k = ($1 ~ /^ccm-parse/) ? "ccm-parse" : "ccm"; if (index(seen[k], $4) == 0) seen[k] = seen[k] " " $4 }
         END { for (k in seen) { n = split(seen[k], a, " "); print k ":" seen[k] (n == 1 ? "  (all equal)" : "  DIFFER") } }' "$W/md5" | sort
    echo
    cat "$W/md5"
} > "$OUT/md5.txt"
cat "$OUT/md5.txt" >> "$LOG"
say "done: $(date -u +%FT%TZ), $(( $(date +%s) - T0 )) s"
