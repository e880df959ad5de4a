#!/usr/bin/env bash
# The GPU request of branch h-ddm2d (the bisect engine's 2-D count in strips, `ddm match
# --pairs` written on all cores, `ddm match`'s warm-up removed), for one H200 with 16 host
# cores, about 150 s:
#   1. `count_split 20`: the 2-D count of 1M regions warm (20 reps, median) on five
#      workloads, bisect in strips against bisect over the whole space (main's
#      algorithm) and sweep, every count checked against the CPU's sbm;
#   2. `ddm match --stats` on 1M 2-D regions (the e2e file), with and without --pairs,
#      new ($BIN/harness) and base ($BIN/harness-base, main), twice each, sbm and bisect
#      on the CPU beside them; outputs' md5 (pairs sorted) in e2e.csv's `answers` rows;
#   3. compute-sanitizer memcheck and racecheck on `sweep_check` (20k regions a set:
#      counts and pairs in strips and whole, after removals too, checked against the
#      CPU);
#   4. if time is left, `harness run ddm density_2d --engines gpu-bisect` new and base
#      (1M regions, degrees 1-1000, each checked against sbm).
#
#     BIN=/dir/with/binaries OUT=/dir/for/results bash scripts/gpu-ddm-strips-request.sh
set -uo pipefail
. "$(dirname "$0")/e2e-lib.sh"

BIN=${BIN:?BIN: the directory holding harness, harness-base, count_split, sweep_check}
OUT=${OUT:-out}
mkdir -p "$OUT"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
T0=$(date +%s)
# SMALL=1: a dry run off the GPU machine (20k regions; no density_2d).
REGIONS=1000000
[ -n "${SMALL:-}" ] && REGIONS=20000
left() { echo $(( 150 - ($(date +%s) - T0) )); }
say() { echo "$*" | tee -a "$OUT/summary.txt"; }
say "gpu-request h-ddm2d: $(date -u +%FT%TZ), $(nproc) cores"
command -v nvidia-smi > /dev/null &&
    say "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"

# 1. The warm 2-D count.
t=$(date +%s.%N)
timeout 45 "$BIN/count_split" 20 > "$OUT/count_split.txt" 2>&1
say "count_split: exit $? in $(awk "BEGIN { print $(date +%s.%N) - $t }") s"
grep -E "count best|equals|panicked|Error" "$OUT/count_split.txt" | sed 's/^/  /' | tee -a "$OUT/summary.txt" > /dev/null

# 2. ddm match, as scripts/e2e-cut.sh runs it (its ddm part).
CSV="$OUT/e2e.csv"
LOG="$OUT/e2e.txt"
echo "binary,command,engine,run,phase,seconds,note" > "$CSV"
: > "$LOG"
timeout 30 "$BIN/harness" ddm generate --out "$W/ddm.csv" --regions $REGIONS
say "ddm.csv: $(wc -l < "$W/ddm.csv") lines, $(( $(stat -c %s "$W/ddm.csv") / 1000000 )) MB"
cat "$W/ddm.csv" > /dev/null
run() {
    local name=$1 bin=$2 cmd=$3 engine=$4 runno=$5; shift 5
    if [ "$(left)" -lt 60 ]; then
        echo "skipped (time): $name $cmd $engine $runno" >> "$LOG"
        return
    fi
    local t s
    t=$(date +%s.%N)
    local tv=()
    [ -x /usr/bin/time ] && tv=(/usr/bin/time -f "%U %S %M" -o "$W/time")
    rm -f "$W/time"
    "${tv[@]}" timeout 20 "$bin" "$@" --engine "$engine" --stats > "$W/out" 2> "$W/err" || echo "exit $? ($name $cmd $engine)" >> "$W/err"
    s=$(awk "BEGIN { print $(date +%s.%N) - $t }")
    if [ -s "$W/time" ]; then
        read -r u sy m < <(tail -1 "$W/time")
        echo "$name,$cmd,$engine,$runno,user,$u," >> "$CSV"
        echo "$name,$cmd,$engine,$runno,sys,$sy," >> "$CSV"
        echo "cpu: user $u s, sys $sy s, max RSS $m kB" >> "$W/err"
    fi
    e2e_record "$name" "$cmd" "$engine" "$runno" "$s"
}
for r in 1 2; do
    for pair in "new=$BIN/harness" "base=$BIN/harness-base"; do
        name=${pair%%=*}; bin=${pair#*=}
        run "$name" "$bin" ddm gpu-bisect $r ddm match --regions "$W/ddm.csv"
        run "$name" "$bin" ddm-pairs gpu-bisect $r ddm match --pairs --regions "$W/ddm.csv"
    done
    run new "$BIN/harness" ddm sbm $r ddm match --regions "$W/ddm.csv"
    run new "$BIN/harness" ddm-pairs bisect $r ddm match --pairs --regions "$W/ddm.csv"
done
say "e2e (phase seconds; answers md5):"
grep -E ',"?(load|upload|match|write|allocate the engine|waiting for the GPU|wall|answers)"?,' "$CSV" | sed 's/^/  /' | tee -a "$OUT/summary.txt" > /dev/null

# 3. compute-sanitizer on the changed kernels, answers checked against the CPU.
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
for tool in memcheck racecheck; do
    if [ -z "$CS" ]; then say "compute-sanitizer: not found"; break; fi
    t=$(date +%s.%N)
    timeout 40 "$CS" --tool "$tool" --error-exitcode 9 "$BIN/sweep_check" 0 20000 > "$OUT/sanitizer-$tool.txt" 2>&1
    say "compute-sanitizer $tool: exit $? in $(awk "BEGIN { print $(date +%s.%N) - $t }") s; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|equals the CPU|differs' "$OUT/sanitizer-$tool.txt" | tr '\n' ' ')"
done

# 4. The harness's density_2d, new and base, while time is left.
for pair in "new=$BIN/harness" "base=$BIN/harness-base"; do
    name=${pair%%=*}; bin=${pair#*=}
    l=$(left)
    if [ "$l" -lt 15 ] || [ -n "${SMALL:-}" ]; then say "density_2d $name: skipped (time)"; continue; fi
    t=$(date +%s.%N)
    timeout $(( l - 5 )) "$bin" run ddm density_2d --engines gpu-bisect --seeds 1 --out "$OUT/density-$name" > "$OUT/density-$name.txt" 2>&1
    say "density_2d $name: exit $? in $(awk "BEGIN { print $(date +%s.%N) - $t }") s"
done
say "done: $(date -u +%FT%TZ), $(( $(date +%s) - T0 )) s"
