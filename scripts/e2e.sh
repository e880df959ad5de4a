#!/usr/bin/env bash
# End to end on the GPU machine: each user command (ccm match, clcb match, xml filter,
# ddm match) on generated files, with its default engine, its GPU engine and its strongest
# CPU engine, for each binary named in BINS; every phase of --stats kept. (The default of
# xml filter and ddm match is the CPU's on inputs under 100 MB and 64 MB.)
#
# Run from the repository root, binaries built here and carried:
#     OUT=/some/dir BINS="new=.carry/harness base=.carry/harness-base" bash scripts/e2e.sh
# A dry run without a GPU (small files; the default engines fall back to the CPU):
#     SMALL=1 OUT=/tmp/e2e BINS="new=target/release/harness" bash scripts/e2e.sh
#
# Writes to $OUT:
#   e2e.csv   binary,command,engine,run,phase,seconds,note (one row per --stats line,
#             plus `wall` from the shell and `answers` = the output's md5 prefix);
#   e2e.txt   the workloads' sizes, the machine, and each run's --stats as printed.
# Files are read once before the runs (so they are in the page cache). Each GPU command
# runs twice: run 1 after the driver's JIT cache was emptied (a machine's first run), run
# 2 with it warm.
set -euo pipefail
. "$(dirname "$0")/e2e-lib.sh"

OUT=${OUT:-out}
BINS=${BINS:-new=.carry/harness}
SMALL=${SMALL:-}
mkdir -p "$OUT"
W=${WORK:-$(mktemp -d)}
CSV="$OUT/e2e.csv"
LOG="$OUT/e2e.txt"
echo "binary,command,engine,run,phase,seconds,note" > "$CSV"
: > "$LOG"
say "e2e: $(date -u +%FT%TZ), $(nproc) cores, $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
command -v nvidia-smi > /dev/null &&
    say "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"

# The workloads (the sizes the end-to-end targets name; SMALL: a dry run).
GEN=${BINS%% *}; GEN=${GEN#*=}
if [ -n "$SMALL" ]; then
    CCM_EV=20000; CLCB_SUBS=5000; CLCB_EV=20000; XML_KB=2000; DDM=20000
else
    CCM_EV=1000000; CLCB_SUBS=250000; CLCB_EV=1000000; XML_KB=100000; DDM=1000000
fi
t0=$(date +%s.%N)
"$GEN" ccm generate --out-subscriptions "$W/ccm-s.jsonl" --out-events "$W/ccm-e.jsonl" --events $CCM_EV &
"$GEN" clcb generate --out-subscriptions "$W/clcb-s.jsonl" --out-events "$W/clcb-e.jsonl" \
    --subscriptions $CLCB_SUBS --events $CLCB_EV &
"$GEN" xml generate --out "$W/xml-big" --queries 256 --docs 1 --doc-kb $XML_KB &
"$GEN" xml generate --figure fig10b --queries 2000 ${SMALL:+--quick} --out "$W/xml-10b" &
"$GEN" ddm generate --out "$W/ddm.csv" --regions $DDM &
wait
say "generated in $(awk "BEGIN { print $(date +%s.%N) - $t0 }") s:"
for f in "$W"/ccm-s.jsonl "$W"/ccm-e.jsonl "$W"/clcb-s.jsonl "$W"/clcb-e.jsonl "$W"/ddm.csv; do
    say "  $(basename "$f"): $(wc -l < "$f") lines, $(( $(stat -c %s "$f") / 1000000 )) MB"
done
say "  xml-big: $(du -sm "$W/xml-big" | cut -f1) MB; xml-10b: $(ls "$W/xml-10b" | wc -l) files, $(du -sm "$W/xml-10b" | cut -f1) MB"
cat "$W"/*.jsonl "$W"/ddm.csv "$W"/xml-big/* "$W"/xml-10b/* > /dev/null

# run BIN_NAME BIN COMMAND ENGINE RUN ARGS...: one command with --stats; its phases and
# wall time to the CSV, its output's md5 (the answer check) as `answers`.
run() {
    local name=$1 bin=$2 cmd=$3 engine=$4 runno=$5; shift 5
    local eng=()
    case "$engine" in default*) ;; *) eng=(--engine "$engine") ;; esac
    local t s
    t=$(date +%s.%N)
    "$bin" "$@" "${eng[@]}" --stats > "$W/out" 2> "$W/err" || echo "exit $? ($name $cmd $engine)" >> "$W/err"
    s=$(awk "BEGIN { print $(date +%s.%N) - $t }")
    e2e_record "$name" "$cmd" "$engine" "$runno" "$s"
}

for pair in $BINS; do
    name=${pair%%=*}; bin=${pair#*=}
    for r in 1 2; do
        [ "$r" = 1 ] && rm -rf ~/.nv/ComputeCache
        run "$name" "$bin" ccm default $r ccm match --subscriptions "$W/ccm-s.jsonl" --events "$W/ccm-e.jsonl"
    done
    run "$name" "$bin" ccm default-w65536 1 ccm match --window 65536 --engine gpu-index --subscriptions "$W/ccm-s.jsonl" --events "$W/ccm-e.jsonl"
    run "$name" "$bin" ccm hybrid 1 ccm match --subscriptions "$W/ccm-s.jsonl" --events "$W/ccm-e.jsonl"
    for r in 1 2; do
        [ "$r" = 1 ] && rm -rf ~/.nv/ComputeCache
        run "$name" "$bin" clcb default $r clcb match --subscriptions "$W/clcb-s.jsonl" --events "$W/clcb-e.jsonl"
    done
    run "$name" "$bin" clcb gpu-cells 1 clcb match --subscriptions "$W/clcb-s.jsonl" --events "$W/clcb-e.jsonl"
    run "$name" "$bin" clcb default-w65536 1 clcb match --window 65536 --engine gpu --subscriptions "$W/clcb-s.jsonl" --events "$W/clcb-e.jsonl"
    run "$name" "$bin" clcb grid 1 clcb match --subscriptions "$W/clcb-s.jsonl" --events "$W/clcb-e.jsonl"
    for r in 1 2; do
        [ "$r" = 1 ] && rm -rf ~/.nv/ComputeCache
        run "$name" "$bin" xml-big gpu $r xml filter --queries "$W/xml-big/queries.txt" "$W"/xml-big/doc-*.xml
    done
    run "$name" "$bin" xml-big default 1 xml filter --queries "$W/xml-big/queries.txt" "$W"/xml-big/doc-*.xml
    run "$name" "$bin" xml-big gpu-seg 1 xml filter --queries "$W/xml-big/queries.txt" "$W"/xml-big/doc-*.xml
    run "$name" "$bin" xml-big lazy-dfa 1 xml filter --threads "$(nproc)" --queries "$W/xml-big/queries.txt" "$W"/xml-big/doc-*.xml
    run "$name" "$bin" xml-10b default 1 xml filter --queries "$W/xml-10b/queries.txt" "$W"/xml-10b/doc-*.xml
    run "$name" "$bin" xml-10b gpu 1 xml filter --queries "$W/xml-10b/queries.txt" "$W"/xml-10b/doc-*.xml
    run "$name" "$bin" xml-10b lazy-dfa 1 xml filter --threads "$(nproc)" --queries "$W/xml-10b/queries.txt" "$W"/xml-10b/doc-*.xml
    for r in 1 2; do
        [ "$r" = 1 ] && rm -rf ~/.nv/ComputeCache
        run "$name" "$bin" ddm gpu-bisect $r ddm match --regions "$W/ddm.csv"
    done
    run "$name" "$bin" ddm default 1 ddm match --regions "$W/ddm.csv"
    run "$name" "$bin" ddm bisect 1 ddm match --regions "$W/ddm.csv"
    run "$name" "$bin" ddm sbm 1 ddm match --regions "$W/ddm.csv"
    run "$name" "$bin" ddm-pairs default 1 ddm match --pairs --regions "$W/ddm.csv"
    run "$name" "$bin" ddm-pairs gpu-bisect 1 ddm match --pairs --regions "$W/ddm.csv"
    run "$name" "$bin" ddm-pairs bisect 1 ddm match --pairs --regions "$W/ddm.csv"
done
say "done: $(date -u +%FT%TZ)"
