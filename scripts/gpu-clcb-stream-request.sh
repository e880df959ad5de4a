#!/usr/bin/env bash
# One run on the GPU machine (16 cores, one H200) for `clcb match`'s stream (branch
# h-clcb-stream: events read from the file's map and parsed on all cores by the tasks
# that cut them into lines, the cell index's answers lent to the writer where the device
# wrote them, the index's own phases in --stats), on the e2e files (250k subscriptions,
# 1M events, generated here by the carried harness as scripts/e2e-cut.sh does):
#   1. `clcb match --stats`, this branch (new) against main before it (base), gpu-cells
#      and grid, 3 runs each, alternating (files in the page cache): every phase, wall,
#      user/sys CPU and peak RSS (/usr/bin/time), the answers' md5 (identical across
#      binaries, engines and runs);
#   2. new, gpu-cells and grid, with --window 65536 (main's default), 131072 and 1048576
#      (the default is 262144; 2 runs each for gpu-cells, 1 for grid): the stream's rate
#      against the window's size;
#   3. (the run of 2026-11-29 10:03 also parsed on rayon's global pool instead of a pool
#      of the parser's own, CLCB_PARSE_POOL=global: no difference, and that pool is gone);
#   4. new and base, gpu-cells, --window 1 on the first 20,000 events: latency mode
#      still answers the same;
#   5. parse_events (this branch's example): the events file parsed window by window,
#      lines cut by a reader thread against text cut by the parsing tasks, on 1 and 16
#      threads.
#
#     BIN=/dir/with/binaries OUT=/dir/for/results bash scripts/gpu-clcb-stream-request.sh
#
# $BIN holds harness, harness-base and parse_events. Self-contained (nothing of the repository
# needed); every step under `timeout`, within about 200 s in all (a step is skipped when
# too little time is left). SMALL=1: a dry run off the GPU machine (small files;
# --engine emu-cells).
set -uo pipefail
BIN=${BIN:?BIN: the directory holding harness and harness-base}
OUT=${OUT:-out}
mkdir -p "$OUT"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
LOG="$OUT/log.txt"
CSV="$OUT/clcb.csv"
: > "$LOG"
echo "binary,command,engine,run,phase,seconds,note" > "$CSV"
T0=$(date +%s)
left() { echo $(( 195 - ($(date +%s) - T0) )); }
say() { echo "$*" | tee -a "$LOG"; }
say "gpu-request (clcb-stream): $(date -u +%FT%TZ), $(nproc) cores"
command -v nvidia-smi > /dev/null &&
    say "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
say "transparent huge pages: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>&1)"

if [ -n "${SMALL:-}" ]; then
    SUBS=2000; EVENTS=5000; GPU=emu-cells
else
    SUBS=250000; EVENTS=1000000; GPU=gpu-cells
fi

t0=$(date +%s.%N)
timeout 60 "$BIN/harness" clcb generate --out-subscriptions "$W/s.jsonl" --out-events "$W/e.jsonl" \
    --subscriptions $SUBS --events $EVENTS
head -n $(( EVENTS < 20000 ? EVENTS / 4 : 20000 )) "$W/e.jsonl" > "$W/e20k.jsonl"
say "generated in $(awk "BEGIN { print $(date +%s.%N) - $t0 }") s:"
for f in "$W"/s.jsonl "$W"/e.jsonl "$W"/e20k.jsonl; do
    say "  $(basename "$f"): $(wc -l < "$f") lines, $(( $(stat -c %s "$f") / 1000000 )) MB"
done
cat "$W"/*.jsonl > /dev/null

# record NAME CMD ENGINE RUN WALL: the --stats of $W/err as CSV rows, wall, cpu, md5.
record() {
    local name=$1 cmd=$2 engine=$3 runno=$4 s=$5
    {
        echo "== $name $cmd $engine run $runno: wall $s s"
        grep -v '^stats:' "$W/err" | head -5 || true
        grep '^stats:' "$W/err" || true
    } >> "$LOG"
    sed -n 's/^stats: //p' "$W/err" | awk -v pre="$name,$cmd,$engine,$runno" '{
        n = split($0, f, /  +/); phase = f[1]; val = f[2]; sub(/ .*/, "", val);
        note = ""; for (i = 3; i <= n; i++) note = note (i > 3 ? " " : "") f[i];
        gsub(/"/, "\"\"", note);
        printf "%s,\"%s\",%s,\"%s\"\n", pre, phase, val, note }' >> "$CSV"
    echo "$name,$cmd,$engine,$runno,wall,$s," >> "$CSV"
    if [ -s "$W/time" ]; then
        read -r u sy m < <(tail -1 "$W/time")
        echo "$name,$cmd,$engine,$runno,user,$u," >> "$CSV"
        echo "$name,$cmd,$engine,$runno,sys,$sy," >> "$CSV"
        echo "$name,$cmd,$engine,$runno,max RSS (kB),$m," >> "$CSV"
        echo "cpu: user $u s, sys $sy s, max RSS $m kB" >> "$LOG"
    fi
    local sum
    sum=$(md5sum < "$W/out")
    echo "$name,$cmd,$engine,$runno,answers,0,${sum:0:12}" >> "$CSV"
    echo "$cmd ${sum:0:12}" >> "$W/sums"
    say "$name $cmd $engine run $runno: wall $s s, answers ${sum:0:12}; $(sed -n 's/^stats: //p' "$W/err" |
        awk -F '  +' '/^(stream|match|parse events|read events|format|index: (stage|answers|kernels)|peak)/ {
            v = $2; if ($1 ~ /^stream/) v = v " " $3; printf "%s %s; ", $1, v }')"
}

# run NAME BIN CMD ENGINE RUN ARGS...: one `clcb match --stats` under timeout (the
# answers' md5 compared by CMD: one input each).
run() {
    local name=$1 bin=$2 cmd=$3 engine=$4 runno=$5; shift 5
    if [ "$(left)" -lt 12 ]; then
        say "skipped (time): $name $cmd $engine $runno"
        return
    fi
    local tv=()
    [ -x /usr/bin/time ] && tv=(/usr/bin/time -f "%U %S %M" -o "$W/time")
    rm -f "$W/time"
    local t s
    t=$(date +%s.%N)
    # ENGINE may carry the window as a label: gpu-cells-w262144 is gpu-cells.
    "${tv[@]}" timeout 30 "$bin" clcb match --engine "${engine%-w*}" --stats "$@" > "$W/out" 2> "$W/err" ||
        echo "exit $? ($name $cmd $engine)" >> "$W/err"
    s=$(awk "BEGIN { print $(date +%s.%N) - $t }")
    record "$name" "$cmd" "$engine" "$runno" "$s"
}

FILES=(--subscriptions "$W/s.jsonl" --events "$W/e.jsonl")
# 1. new against base, default window.
for r in 1 2 3; do
    for pair in "new=$BIN/harness" "base=$BIN/harness-base"; do
        name=${pair%%=*}; bin=${pair#*=}
        run "$name" "$bin" clcb "$GPU" $r "${FILES[@]}"
        run "$name" "$bin" clcb grid $r "${FILES[@]}"
    done
done
# 2. new, larger windows.
for w in 65536 131072 1048576; do
    for r in 1 2; do
        run new "$BIN/harness" clcb "$GPU-w$w" $r "${FILES[@]}" --window $w
    done
    run new "$BIN/harness" clcb "grid-w$w" 1 "${FILES[@]}" --window $w
done
# 4. latency mode, the first 20,000 events.
for pair in "new=$BIN/harness" "base=$BIN/harness-base"; do
    name=${pair%%=*}; bin=${pair#*=}
    run "$name" "$bin" clcb-20k "$GPU-w1" 1 --subscriptions "$W/s.jsonl" --events "$W/e20k.jsonl" --window 1
    run "$name" "$bin" clcb-20k "$GPU" 1 --subscriptions "$W/s.jsonl" --events "$W/e20k.jsonl"
done
# 5. the parser alone.
for t in 1 $(nproc); do
    if [ "$(left)" -gt 20 ] && [ -x "$BIN/parse_events" ]; then
        say "parse_events, $t thread(s):"
        RAYON_NUM_THREADS=$t timeout 20 "$BIN/parse_events" "$W/e.jsonl" 262144 2>&1 | tee -a "$LOG"
    fi
done
say "answers' md5 per command (one line each when every run agrees):"
sort "$W/sums" | uniq -c | tee -a "$LOG"
say "done: $(date -u +%FT%TZ), $(( $(date +%s) - T0 )) s"
