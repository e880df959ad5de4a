#!/usr/bin/env bash
# One run on the GPU machine (16 cores, one H200) for `clcb match` loading subscriptions
# as columns on all cores (branch h-clcb-load), on the e2e files (250k subscriptions,
# 1M events, generated here by the carried harness):
#   1. `clcb match --stats`, gpu-cells and grid alternating, 3 runs each (files in the
#      page cache): every phase, wall, user/sys CPU and peak RSS (/usr/bin/time), answers'
#      md5 (identical across engines and runs);
#   2. the same with --window 262144 (one run each): the stream's rate against the
#      window's size;
#   3. the same with mimalloc's purging of freed memory off (MIMALLOC_PURGE_DELAY=-1, one
#      run each): how much of the load and the stream is the kernel zeroing pages that
#      the allocator gave back and took again (2-core machine: 13% of the events' parse);
#   4. load_split (this branch's example): the load as the model and as columns, the cell
#      index (host build, emulator upload) and the grid from columns, the events' parse,
#      on all cores.
#
#     BIN=/dir/with/binaries OUT=/dir/for/results bash scripts/gpu-clcb-load-request.sh
#
# $BIN holds harness and load_split. Self-contained (nothing of the repository needed);
# every step under `timeout`, within about 200 s in all (a step is skipped when too little
# time is left). SMALL=1: a dry run off the GPU machine (small files; --engine emu-cells).
set -uo pipefail
BIN=${BIN:?BIN: the directory holding harness and load_split}
OUT=${OUT:-out}
mkdir -p "$OUT"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
LOG="$OUT/log.txt"
CSV="$OUT/clcb.csv"
: > "$LOG"
echo "command,engine,run,phase,seconds,note" > "$CSV"
T0=$(date +%s)
left() { echo $(( 195 - ($(date +%s) - T0) )); }
say() { echo "$*" | tee -a "$LOG"; }
say "gpu-request (clcb-load): $(date -u +%FT%TZ), $(nproc) cores, commit $(cat "$BIN/COMMIT" 2>/dev/null)"
command -v nvidia-smi > /dev/null &&
    say "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
say "transparent huge pages: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>&1)"

if [ -n "${SMALL:-}" ]; then
    SUBS=5000; EVENTS=20000; GPU=emu-cells
else
    SUBS=250000; EVENTS=1000000; GPU=gpu-cells
fi

PRE=(env)

# record ENGINE RUN WALL: the --stats of $W/err as CSV rows, wall, cpu, answers' md5.
record() {
    local engine=$1 runno=$2 s=$3
    {
        echo "== clcb match --engine $engine run $runno: wall $s s"
        grep -v '^stats:' "$W/err" | head -5 || true
        grep '^stats:' "$W/err" || true
    } >> "$LOG"
    sed -n 's/^stats: //p' "$W/err" | awk -v pre="clcb,$engine,$runno" '{
        n = split($0, f, /  +/); phase = f[1]; val = f[2]; sub(/ .*/, "", val);
        note = ""; for (i = 3; i <= n; i++) note = note (i > 3 ? " " : "") f[i];
        gsub(/"/, "\"\"", note);
        printf "%s,\"%s\",%s,\"%s\"\n", pre, phase, val, note }' >> "$CSV"
    echo "clcb,$engine,$runno,wall,$s," >> "$CSV"
    if [ -s "$W/time" ]; then
        read -r u sy m < <(tail -1 "$W/time")
        echo "clcb,$engine,$runno,user,$u," >> "$CSV"
        echo "clcb,$engine,$runno,sys,$sy," >> "$CSV"
        echo "clcb,$engine,$runno,max RSS (kB),$m," >> "$CSV"
        echo "cpu: user $u s, sys $sy s, max RSS $m kB" >> "$LOG"
    fi
    local sum
    sum=$(md5sum < "$W/out")
    echo "clcb,$engine,$runno,answers,0,${sum:0:12}" >> "$CSV"
    say "clcb match --engine $engine run $runno: wall $s s, answers ${sum:0:12}, $(grep -E '^stats: (load subscriptions|build|stream)' "$W/err" | sed 's/^stats: //; s/  */ /g' | tr '\n' ';')"
}

# run ENGINE RUN ARGS...
run() {
    local engine=$1 runno=$2; shift 2
    if [ "$(left)" -lt 15 ]; then
        say "skipped (time): $engine $runno"
        return
    fi
    local tv=()
    [ -x /usr/bin/time ] && tv=(/usr/bin/time -f "%U %S %M" -o "$W/time")
    rm -f "$W/time"
    local t s
    t=$(date +%s.%N)
    "${tv[@]}" timeout 30 "${PRE[@]}" "$BIN/harness" clcb match --engine "$engine" --stats \
        --subscriptions "$W/s.jsonl" --events "$W/e.jsonl" "$@" > "$W/out" 2> "$W/err" ||
        echo "exit $? ($engine run $runno)" >> "$W/err"
    s=$(awk "BEGIN { print $(date +%s.%N) - $t }")
    record "$engine" "$runno" "$s"
}

t=$(date +%s.%N)
timeout 60 "$BIN/harness" clcb generate --out-subscriptions "$W/s.jsonl" --out-events "$W/e.jsonl" \
    --subscriptions $SUBS --events $EVENTS 2>> "$LOG"
say "generated in $(awk "BEGIN { print $(date +%s.%N) - $t }") s: $(wc -l < "$W/s.jsonl") subscription lines ($(( $(stat -c %s "$W/s.jsonl") / 1000000 )) MB), $(wc -l < "$W/e.jsonl") events ($(( $(stat -c %s "$W/e.jsonl") / 1000000 )) MB)"
cat "$W/s.jsonl" "$W/e.jsonl" > /dev/null

# 1. Three runs each, alternating.
for r in 1 2 3; do
    run "$GPU" "$r"
    run grid "$r"
done
# 2. A larger window.
run "$GPU" w262144 --window 262144
run grid w262144 --window 262144

# 3. Freed memory kept by the allocator.
PRE=(env MIMALLOC_PURGE_DELAY=-1)
run "$GPU" nopurge
run grid nopurge
PRE=(env)

# 4. The host's split.
if [ -x "$BIN/load_split" ] && [ "$(left)" -gt 40 ]; then
    say "== load_split (3 reps)"
    timeout "$(( $(left) - 5 ))" "$BIN/load_split" "$W/s.jsonl" "$W/e.jsonl" 3 2>&1 | tee -a "$LOG"
    say "rc ${PIPESTATUS[0]}"
else
    say "skipped load_split"
fi
# The answers must agree across engines and runs.
say "distinct answer md5s: $(grep ',answers,' "$CSV" | cut -d, -f6 | sort -u | tr '\n' ' ')"
say "done in $(( $(date +%s) - T0 )) s"
