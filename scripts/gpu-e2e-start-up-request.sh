#!/usr/bin/env bash
# The users' commands on one GPU (16 host cores) with --stats, for the device's start-up
# and the first count: `new` ($BIN/harness, this branch: the GPU's opening thread takes
# `ddm match`'s engine memory into the allocator's pool and runs a count of a few regions,
# makes `clcb match`'s first answers and takes its tables' memory; `ccm match` and `clcb
# match` lay out their index on the host while the GPU opens; `ddm match` copies the
# regions from the set's own memory; `ccm match` makes its staging before the stream)
# against `base` ($BIN/harness-base, main before it), several rounds alternating (round 0
# a warm-up), every output's md5 kept. Variants of `new` by environment:
# HARNESS_NO_WARM=1 (no warm-up on the opening thread), HARNESS_NO_WARM_COUNT=1 (`ddm
# match`'s warm-up without its count). Then the SM clock sampled every few ms around one
# `ddm match` (does the first count run before the GPU's clocks are up?), and
# compute-sanitizer over the new paths on small files.
#
#     BIN=/dir/with/binaries OUT=/dir/for/results bash scripts/gpu-request.sh
#
# Self-contained (nothing else of the repository needed). Writes $OUT/runs.txt (each
# run's --stats), $OUT/runs.csv (label,round,wall_s,rc,md5,phase,seconds),
# $OUT/clocks.txt, $OUT/info.txt and $OUT/sanitizer.txt. About 90 s; every step under
# `timeout`, the whole under 150 s.
set -uo pipefail
BIN=${BIN:?BIN: the directory holding harness and harness-base}
OUT=${OUT:-out}
mkdir -p "$OUT"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
H=$BIN/harness
B=$BIN/harness-base
LOG=$OUT/runs.txt
CSV=$OUT/runs.csv
: > "$LOG"
echo "label,round,wall_s,rc,md5,phase,seconds" > "$CSV"
T0=$(date +%s)
left() { echo $((145 - ($(date +%s) - T0))); }
{
    echo "gpu-request: $(date -u +%FT%TZ), $(nproc) cores"
    command -v nvidia-smi > /dev/null &&
        nvidia-smi --query-gpu=name,driver_version,persistence_mode --format=csv,noheader
    ls -la "$BIN"
} > "$OUT/info.txt" 2>&1

# SMALL=1: a dry run off the GPU machine (small files).
if [ -n "${SMALL:-}" ]; then
    DDM=2000; CCM_EV=2000; CLCB_SUBS=2000; CLCB_EV=2000; XML_KB=500; Q=(--quick)
else
    DDM=1000000; CCM_EV=1000000; CLCB_SUBS=250000; CLCB_EV=1000000; XML_KB=100000; Q=()
fi
t=$(date +%s.%N)
timeout 40 "$H" ddm generate --out "$W/ddm.csv" --regions $DDM &
timeout 40 "$H" ccm generate --out-subscriptions "$W/ccm-s.jsonl" --out-events "$W/ccm-e.jsonl" --events $CCM_EV &
timeout 40 "$H" clcb generate --out-subscriptions "$W/clcb-s.jsonl" --out-events "$W/clcb-e.jsonl" \
    --subscriptions $CLCB_SUBS --events $CLCB_EV &
timeout 40 "$H" xml generate --out "$W/xml-big" --queries 256 --docs 1 --doc-kb $XML_KB > /dev/null &
timeout 40 "$H" xml generate --figure fig10b --queries 2000 "${Q[@]}" --out "$W/xml-10b" > /dev/null &
wait
echo "generated in $(awk "BEGIN { print $(date +%s.%N) - $t }") s" >> "$OUT/info.txt"
cat "$W"/*.jsonl "$W"/*.csv "$W"/xml-big/* "$W"/xml-10b/* > /dev/null

# run LABEL ROUND SORT ENV BINARY ARGS...: one command with --stats (ENV: VAR=value
# words, or -), its answers' md5 (SORT=1: of the sorted lines, for pairs).
run() {
    local label=$1 round=$2 sorted=$3 envs=$4 bin=$5
    shift 5
    if [ "$(left)" -lt 10 ]; then
        echo "skipped (time): $label $round" >> "$LOG"
        return
    fi
    [ "$envs" = - ] && envs=
    local t s rc sum
    t=$(date +%s.%N)
    # shellcheck disable=SC2086
    env $envs timeout 30 "$bin" "$@" --stats > "$W/out" 2> "$W/err"
    rc=$?
    s=$(awk "BEGIN { print $(date +%s.%N) - $t }")
    if [ "$sorted" = 1 ]; then sum=$(sort "$W/out" | md5sum); else sum=$(md5sum < "$W/out"); fi
    sum=${sum:0:12}
    {
        echo "== $label round $round: wall $s s, exit $rc, md5 $sum"
        grep -v '^stats:' "$W/err" | head -5
        grep '^stats:' "$W/err"
    } >> "$LOG"
    echo "$label,$round,$s,$rc,$sum,wall,$s" >> "$CSV"
    sed -n 's/^stats: //p' "$W/err" | awk -v pre="$label,$round,$s,$rc,$sum" '{
        n = split($0, f, /  +/); val = f[2]; sub(/ .*/, "", val);
        printf "%s,\"%s\",%s\n", pre, f[1], val }' >> "$CSV"
}

D=(ddm match --regions "$W/ddm.csv")
# 1. `ddm match`, 1M 2-D regions: the first count after the load.
for r in 0 1 2 3 4 5; do
    run ddm-new "$r" 0 - "$H" "${D[@]}" --engine gpu-bisect
    run ddm-new-nowarm "$r" 0 HARNESS_NO_WARM=1 "$H" "${D[@]}" --engine gpu-bisect
    run ddm-new-nocount "$r" 0 HARNESS_NO_WARM_COUNT=1 "$H" "${D[@]}" --engine gpu-bisect
    run ddm-base "$r" 0 - "$B" "${D[@]}" --engine gpu-bisect
    run ddm-sbm "$r" 0 - "$H" "${D[@]}" --engine sbm
done
for r in 1 2; do
    run ddm-pairs-new "$r" 1 - "$H" "${D[@]}" --engine gpu-bisect --pairs
    run ddm-pairs-base "$r" 1 - "$B" "${D[@]}" --engine gpu-bisect --pairs
done
run ddm-pairs-bisect 1 1 - "$H" "${D[@]}" --engine bisect --pairs

# The SM clock around one `ddm match` (idle before, the command, idle after).
if command -v nvidia-smi > /dev/null; then
    nvidia-smi --query-gpu=timestamp,pstate,clocks.sm,clocks.mem,utilization.gpu \
        --format=csv,noheader -lms 5 > "$OUT/clocks.txt" 2>&1 &
    smi=$!
    sleep 0.5
    echo "ddm match starts: $(date +%T.%N)" >> "$OUT/info.txt"
    run ddm-clock 1 0 - "$H" "${D[@]}" --engine gpu-bisect
    echo "ddm match ended: $(date +%T.%N)" >> "$OUT/info.txt"
    sleep 0.3
    kill "$smi" 2> /dev/null
    wait "$smi" 2> /dev/null
fi

# 2. Start-up beside the load: the whole command against its load and stream.
C=(ccm match --subscriptions "$W/ccm-s.jsonl" --events "$W/ccm-e.jsonl")
L=(clcb match --subscriptions "$W/clcb-s.jsonl" --events "$W/clcb-e.jsonl")
XB=(xml filter --queries "$W/xml-big/queries.txt" "$W"/xml-big/doc-*.xml)
XT=(xml filter --queries "$W/xml-10b/queries.txt" "$W"/xml-10b/doc-*.xml)
for r in 0 1 2 3 4; do
    run ccm-new "$r" 0 - "$H" "${C[@]}"
    run ccm-new-nowarm "$r" 0 HARNESS_NO_WARM=1 "$H" "${C[@]}"
    run ccm-base "$r" 0 - "$B" "${C[@]}"
    run clcb-new "$r" 0 - "$H" "${L[@]}" --engine gpu-cells
    run clcb-new-nowarm "$r" 0 HARNESS_NO_WARM=1 "$H" "${L[@]}" --engine gpu-cells
    run clcb-base "$r" 0 - "$B" "${L[@]}" --engine gpu-cells
    run xml-big-new "$r" 0 - "$H" "${XB[@]}" --engine gpu-seg
    run xml-big-base "$r" 0 - "$B" "${XB[@]}" --engine gpu-seg
    run xml-10b-new "$r" 0 - "$H" "${XT[@]}" --engine gpu
    run xml-10b-base "$r" 0 - "$B" "${XT[@]}" --engine gpu
done
run ccm-hybrid 1 0 - "$H" "${C[@]}" --engine hybrid
run clcb-grid 1 0 - "$H" "${L[@]}" --engine grid
run xml-big-lazy 1 0 - "$H" "${XB[@]}" --engine lazy-dfa --threads "$(nproc)"
run xml-10b-lazy 1 0 - "$H" "${XT[@]}" --engine lazy-dfa --threads "$(nproc)"
# 3. compute-sanitizer (memcheck) over the new paths on small files: ddm's warm-up (a
# throwaway engine's count and pairs) and its load from the set's memory, clcb's answers
# made on the opening thread, ccm's staging made before the stream.
if command -v compute-sanitizer > /dev/null && [ "$(left)" -gt 40 ]; then
    S=$OUT/sanitizer.txt
    timeout 20 "$H" ddm generate --out "$W/ddm-s.csv" --regions 100000
    timeout 20 "$H" ccm generate --out-subscriptions "$W/ccm-ss.jsonl" --out-events "$W/ccm-se.jsonl" --events 20000
    timeout 20 "$H" clcb generate --out-subscriptions "$W/clcb-ss.jsonl" --out-events "$W/clcb-se.jsonl" \
        --subscriptions 5000 --events 20000
    for args in "ddm match --regions $W/ddm-s.csv --engine gpu-bisect" \
        "ddm match --regions $W/ddm-s.csv --engine gpu-bisect --pairs" \
        "ccm match --subscriptions $W/ccm-ss.jsonl --events $W/ccm-se.jsonl --engine gpu-index" \
        "clcb match --subscriptions $W/clcb-ss.jsonl --events $W/clcb-se.jsonl --engine gpu-cells"; do
        [ "$(left)" -lt 15 ] && break
        echo "== $args" >> "$S"
        # shellcheck disable=SC2086
        timeout 25 compute-sanitizer --tool memcheck --error-exitcode 9 "$H" $args > "$W/out" 2>> "$S"
        echo "exit $?, output md5 $(md5sum < "$W/out" | cut -c1-12)" >> "$S"
    done
    tail -c 20000 "$S" > "$S.tmp" && mv "$S.tmp" "$S"
fi
echo "done: $(date -u +%FT%TZ), $(($(date +%s) - T0)) s" >> "$OUT/info.txt"
