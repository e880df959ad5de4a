#!/usr/bin/env bash
# `ccm match` on Table 1's default scenario, 1M events, on the GPU machine (16 cores, one
# H200): this branch's harness ($BIN/harness, `new`) against main's ($BIN/harness-base,
# `base`), the GPU index (the default engine) and the strongest CPU engine (hybrid), three
# runs each, alternating, with --stats; answers compared by md5; `new` also as `base`
# splits the cores (`shared`: parsing and staging each on every thread, where `new` by
# default stages on an eighth of them and parses on the rest). Then `new` alone under
# other splits of the host's cores between parsing (RAYON_NUM_THREADS) and the index's
# staging (--stage-threads), and larger windows; and the events parser alone on 1 to 16
# threads ($BIN/parse_events, the `text` path of `ccm match`). Self-contained: the files
# are generated with $BIN/harness.
#
#     BIN=/dir/with/binaries OUT=/dir/for/results bash scripts/gpu-ccm-parse-request.sh
#
# Writes $OUT/ccm.txt (each run's --stats), $OUT/ccm.csv
# (binary,engine,config,run,phase,seconds,note) and $OUT/parse.txt. Finishes within about
# 200 s (every step under `timeout`). SMALL=1: a dry run off the GPU machine.
set -uo pipefail
BIN=${BIN:?BIN: the directory holding harness, harness-base and parse_events}
OUT=${OUT:-out}
mkdir -p "$OUT"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
CSV="$OUT/ccm.csv"
LOG="$OUT/ccm.txt"
echo "binary,engine,config,run,phase,seconds,note" > "$CSV"
: > "$LOG"
say() { echo "$*" | tee -a "$LOG"; }
T0=$(date +%s)
left() { echo $(( 190 - ($(date +%s) - T0) )); }
say "gpu-request: $(date -u +%FT%TZ), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
command -v nvidia-smi > /dev/null &&
    say "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
EV=1000000
[ -n "${SMALL:-}" ] && EV=20000
t0=$(date +%s.%N)
timeout 60 "$BIN/harness" ccm generate --out-subscriptions "$W/s.jsonl" --out-events "$W/e.jsonl" --events $EV
say "generated in $(awk "BEGIN { print $(date +%s.%N) - $t0 }") s: $(wc -l < "$W/e.jsonl") events, $(( $(stat -c %s "$W/e.jsonl") / 1000000 )) MB"
cat "$W"/*.jsonl > /dev/null

# run NAME BIN ENGINE CONFIG RUN [ENV=... ...] -- [ARGS...]: one `ccm match` under timeout.
run() {
    local name=$1 bin=$2 engine=$3 config=$4 runno=$5; shift 5
    local envs=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    if [ "$(left)" -lt 10 ]; then
        echo "skipped (time): $name $engine $config $runno" >> "$LOG"
        return
    fi
    local eng=()
    [ "$engine" = default ] || eng=(--engine "$engine")
    local t s
    t=$(date +%s.%N)
    env "${envs[@]}" timeout 30 "$bin" ccm match --subscriptions "$W/s.jsonl" --events "$W/e.jsonl" \
        "${eng[@]}" --stats "$@" > "$W/out" 2> "$W/err" || echo "exit $? ($name $engine $config)" >> "$W/err"
    s=$(awk "BEGIN { print $(date +%s.%N) - $t }")
    local sum
    sum=$(md5sum < "$W/out")
    {
        echo "== $name $engine $config run $runno: wall $s s, answers ${sum:0:12}"
        grep -v '^stats:' "$W/err" | head -5 || true
        grep '^stats:' "$W/err" || true
    } >> "$LOG"
    sed -n 's/^stats: //p' "$W/err" | awk -v pre="$name,$engine,$config,$runno" '{
        n = split($0, f, /  +/); phase = f[1]; val = f[2]; sub(/ .*/, "", val);
        note = ""; for (i = 3; i <= n; i++) note = note (i > 3 ? " " : "") f[i];
        gsub(/"/, "\"\"", note);
        printf "%s,\"%s\",%s,\"%s\"\n", pre, phase, val, note }' >> "$CSV"
    echo "$name,$engine,$config,$runno,wall,$s," >> "$CSV"
    echo "$name,$engine,$config,$runno,answers,0,${sum:0:12}" >> "$CSV"
}

# The first run pays the driver's JIT (if its cache is cold): not one of the three.
run new "$BIN/harness" default warm-up 0 --
for r in 1 2 3; do
    run base "$BIN/harness-base" default as-is $r --
    run new "$BIN/harness" default as-is $r --
    run new "$BIN/harness" default shared $r -- --stage-threads 0
    run base "$BIN/harness-base" hybrid as-is $r --
    run new "$BIN/harness" hybrid as-is $r --
done
# The host's cores split between parsing and staging, and larger windows (new only).
for r in 1 2; do
    run new "$BIN/harness" default p12-s4 $r RAYON_NUM_THREADS=12 -- --stage-threads 4
    run new "$BIN/harness" default p14-s2 $r RAYON_NUM_THREADS=14 -- --stage-threads 2
    run new "$BIN/harness" default p13-s3 $r RAYON_NUM_THREADS=13 -- --stage-threads 3
    run new "$BIN/harness" default p10-s6 $r RAYON_NUM_THREADS=10 -- --stage-threads 6
    run new "$BIN/harness" default p16-s4 $r -- --stage-threads 4
    run new "$BIN/harness" default p8 $r RAYON_NUM_THREADS=8 --
    run new "$BIN/harness" default w131072 $r -- --window 131072
    run new "$BIN/harness" default w262144 $r -- --window 262144
    run new "$BIN/harness" default p12-s4-w131072 $r RAYON_NUM_THREADS=12 -- --stage-threads 4 --window 131072
    run new "$BIN/harness" default p12-s4-w262144 $r RAYON_NUM_THREADS=12 -- --stage-threads 4 --window 262144
    run new "$BIN/harness" default p14-s4 $r RAYON_NUM_THREADS=14 -- --stage-threads 4
    run base "$BIN/harness-base" default w131072 $r -- --window 131072
    run base "$BIN/harness-base" default p8 $r RAYON_NUM_THREADS=8 --
done
# The events parser alone (no device), on 1 to 16 threads.
if [ -x "$BIN/parse_events" ]; then
    for t in 16 12 8 4 1; do
        [ "$(left)" -lt 15 ] && break
        RAYON_NUM_THREADS=$t timeout 20 "$BIN/parse_events" "$W/e.jsonl" 65536 text >> "$OUT/parse.txt" 2>&1
    done
fi
# The answers of every run, by md5: one line per distinct sum (all should agree).
grep -o 'answers [0-9a-f]*' "$LOG" | sort | uniq -c > "$OUT/answers.txt"
say "answers: $(tr '\n' ' ' < "$OUT/answers.txt")"
say "done: $(date -u +%FT%TZ), $(( $(date +%s) - T0 )) s"
