#!/usr/bin/env bash
# `ccm match` on Table 1's default scenario, 1M events (~50 MB), on the GPU machine (16
# cores, one H200): this branch's harness ($BIN/harness, `new`: the events scanned line
# after line straight from the window's bytes, a window's parts begun from the last
# window's names and strings, the mapped pages let go by the reading thread) against
# main's before it ($BIN/harness-base, `base`, if present), the GPU index (the default
# engine) and the strongest CPU engine (hybrid), three runs each, alternating, with
# --stats; answers compared by md5. Then the events parser alone on 16, 14, 8 and 1
# threads ($BIN/parse_events, the `text` path of `ccm match`; $BIN/parse_events-base
# too), under /usr/bin/time (user and system CPU); `perf` of one thread if the machine
# has it; then `new` under other splits of the host's threads between parsing and the
# index's staging. Self-contained: the files are generated with $BIN/harness.
#
#     BIN=/dir/with/binaries OUT=/dir/for/results bash scripts/gpu-request.sh
#
# Writes $OUT/ccm.txt (each run's --stats), $OUT/ccm.csv
# (binary,engine,config,run,phase,seconds,note), $OUT/parse.txt, $OUT/answers.txt, and
# all of them again in $OUT/out.tgz. Finishes within 150 s (every step under `timeout`,
# each run skipped when too little time is left). SMALL=1: a dry run off the GPU machine.
set -uo pipefail
BIN=${BIN:?BIN: the directory holding harness (and harness-base, parse_events)}
OUT=${OUT:-out}
mkdir -p "$OUT"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
CSV="$OUT/ccm.csv"
LOG="$OUT/ccm.txt"
PARSE="$OUT/parse.txt"
echo "binary,engine,config,run,phase,seconds,note" > "$CSV"
: > "$LOG"
: > "$PARSE"
say() { echo "$*" | tee -a "$LOG"; }
T0=$(date +%s)
left() { echo $(( 140 - ($(date +%s) - T0) )); }
pack() { tar -czf "$OUT/out.tgz" -C "$OUT" $(cd "$OUT" && ls | grep -v '^out.tgz$') 2> /dev/null; }
say "gpu-request: $(date -u +%FT%TZ), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
command -v nvidia-smi > /dev/null &&
    say "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
EV=1000000
[ -n "${SMALL:-}" ] && EV=20000
t0=$(date +%s.%N)
timeout 40 "$BIN/harness" ccm generate --out-subscriptions "$W/s.jsonl" --out-events "$W/e.jsonl" --events $EV
say "generated in $(awk "BEGIN { print $(date +%s.%N) - $t0 }") s: $(wc -l < "$W/e.jsonl") events, $(( $(stat -c %s "$W/e.jsonl") / 1000000 )) MB"
cat "$W"/*.jsonl > /dev/null
HAVE_BASE=
[ -x "$BIN/harness-base" ] && HAVE_BASE=1

# run NAME BIN ENGINE CONFIG RUN [ENV=... ...] -- [ARGS...]: one `ccm match` under timeout.
run() {
    local name=$1 bin=$2 engine=$3 config=$4 runno=$5; shift 5
    local envs=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    if [ "$(left)" -lt 8 ]; then
        echo "skipped (time): $name $engine $config $runno" >> "$LOG"
        return
    fi
    local eng=()
    [ "$engine" = default ] || eng=(--engine "$engine")
    local t s
    t=$(date +%s.%N)
    env "${envs[@]}" timeout 20 "$bin" ccm match --subscriptions "$W/s.jsonl" --events "$W/e.jsonl" \
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
[ -n "$HAVE_BASE" ] && run base "$BIN/harness-base" default warm-up 0 --
for r in 1 2 3; do
    run new "$BIN/harness" default as-is $r --
    [ -n "$HAVE_BASE" ] && run base "$BIN/harness-base" default as-is $r --
    run new "$BIN/harness" hybrid as-is $r --
    [ -n "$HAVE_BASE" ] && run base "$BIN/harness-base" hybrid as-is $r --
done
pack

# The events parser alone (no device): best of five rounds, and the CPU it took.
parse() {
    local bin=$1 t=$2
    [ -x "$bin" ] || return
    if [ "$(left)" -lt 10 ]; then
        echo "skipped (time): $(basename "$bin") $t threads" >> "$PARSE"
        return
    fi
    echo "== $(basename "$bin") $t threads" >> "$PARSE"
    local tv=()
    [ -x /usr/bin/time ] && tv=(/usr/bin/time -f "cpu: user %U s, sys %S s, max RSS %M kB, wall %e s")
    RAYON_NUM_THREADS=$t timeout 15 "${tv[@]}" "$bin" "$W/e.jsonl" 65536 text >> "$PARSE" 2>&1
}
for t in 16 14 8 1; do
    parse "$BIN/parse_events" $t
    parse "$BIN/parse_events-base" $t
done
pack

# Where one thread's time goes, if `perf` is there.
if command -v perf > /dev/null && [ -x "$BIN/parse_events" ] && [ "$(left)" -gt 30 ]; then
    RAYON_NUM_THREADS=1 timeout 20 perf record -o "$W/perf.data" "$BIN/parse_events" "$W/e.jsonl" 65536 text \
        > /dev/null 2> "$OUT/perf-record.txt"
    timeout 20 perf report -i "$W/perf.data" --no-children --percent-limit 0.5 --stdio 2>&1 | head -60 > "$OUT/perf.txt"
fi

# Other splits of the host's threads between parsing (rayon's pool) and staging (new).
for r in 1 2; do
    run new "$BIN/harness" default p13-s3 $r RAYON_NUM_THREADS=13 -- --stage-threads 3
    run new "$BIN/harness" default p12-s4 $r RAYON_NUM_THREADS=12 -- --stage-threads 4
    run new "$BIN/harness" default p15-s1 $r RAYON_NUM_THREADS=15 -- --stage-threads 1
done
# The answers of every run, by md5: one line per distinct sum (all should agree).
grep -o 'wall .*, answers [0-9a-f]*' "$LOG" | sed 's/.*, //' | sort | uniq -c > "$OUT/answers.txt"
say "answers: $(tr '\n' ' ' < "$OUT/answers.txt")"
say "done: $(date -u +%FT%TZ), $(( $(date +%s) - T0 )) s"
pack
