#!/usr/bin/env bash
# The XML `paths` experiment: `gpu-dfa`'s lean walk on linear paths planned on the
# device (a thread per unit, walk_dfa_lanes; events, starts, points between the roots'
# children and unit counts in one page-locked copy; rows back into page-locked memory:
# one wait a call), its walk ahead skipped after a batch that handed no document back;
# and `xml filter --engine gpu-dfa` end to end against `gpu` and `lazy-dfa` (one long
# document now parsed in parts on all cores). One call on the GPU machine, about 5
# minutes.
#
# Run from the repository root with a release harness binary built here and carried
# (this script builds nothing):
#     cargo build --release -p harness && mkdir -p .carry && cp target/release/harness .carry/
#     OUT=/some/dir bash scripts/gpu-xml-paths.sh          (device tool: carry .carry)
#
# Writes to $OUT:
#   check.txt     compute-sanitizer memcheck and racecheck on quick runs of the changed
#                 kernels (walk_dfa_lanes: xml/paths; filter_dfa, close_roots: whole
#                 documents and cut;
#                 xml/fig7, one document cut into segments; xml/fig10a, a batch of twigs);
#   paths.txt     `harness run xml paths` at full size (SEEDS seeds, default 3): every
#                 answer checked against the NFA; per point, gpu-dfa's phases of its best
#                 run (plan, upload, kernels by the device's clock, wait + read, decode;
#                 the walk ahead, the CPU's share) on standard error;
#   results/xml/paths.csv  the recording (copy it to results/xml/ to keep it);
#   e2e.csv, e2e.txt  `xml filter` with gpu-dfa, gpu (gpu-seg on one document) and
#                 lazy-dfa (every core) on the files scripts/e2e.sh makes (one 100 MB
#                 document with 256 twigs; Fig. 10b's 1000 documents with 2000 twigs),
#                 and Fig. 9's linear paths (8000 documents, 2048 paths of 5 steps), each
#                 with --stats, wall time and the output's md5 (must agree per workload).
#                 gpu-dfa's --stats say how many windows ran on the CPU before its
#                 automaton was learned, and how many documents it handed back.
set -uo pipefail

OUT=${OUT:-out}
H=${H:-.carry/harness}
SEEDS=${SEEDS:-3}
mkdir -p "$OUT"
START=$(date +%s)
say() { echo "$*" | tee -a "$OUT/summary.txt"; }
say "gpu-xml-paths: $(date -u +%FT%TZ), $(nproc) cores, $($H --version 2>/dev/null | head -1), $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
command -v nvidia-smi > /dev/null &&
    say "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"

# 1. Sanitizers on small runs of every changed kernel (about 40 s).
{
    for e in paths fig7 fig10a; do
        for tool in memcheck racecheck; do
            echo "== $tool: xml/$e quick (gpu checked against the cpu engines)"
            timeout 120 compute-sanitizer --tool $tool --print-limit 20 \
                $H run xml $e --quick --seeds 1 --engines gpu-dfa,lazy-dfa-mc,yfilter \
                --out /tmp/sanitized 2>&1 | grep -v "^ " | tail -8
            echo "exit ${PIPESTATUS[0]}"
        done
    done
} > "$OUT/check.txt" 2>&1
mem=$(grep -c 'ERROR SUMMARY: 0 errors' "$OUT/check.txt")
race=$(grep -c 'RACECHECK SUMMARY: 0 hazards' "$OUT/check.txt")
say "sanitizers: memcheck clean on $mem of 3, racecheck on $race of 3 ($(( $(date +%s) - START )) s)"

# 2. The paths experiment at full size (about 170 s with 3 seeds on an H100's host).
s=$(date +%s)
timeout 330 $H run xml paths --seeds "$SEEDS" --out "$OUT/results" > "$OUT/paths.txt" 2>&1
say "paths: exit $? in $(( $(date +%s) - s )) s"
grep "number of queries = 2048" "$OUT/paths.txt" | tee -a "$OUT/summary.txt"
grep "gpu-dfa phases" "$OUT/paths.txt" | tail -4 | tee -a "$OUT/summary.txt"

# 3. xml filter end to end (files in the page cache).
W=$(mktemp -d)
$H xml generate --out "$W/xml-big" --queries 256 --docs 1 --doc-kb 100000 &
$H xml generate --figure fig10b --queries 2000 --out "$W/xml-10b" &
# A stream long enough for gpu-dfa's learner to finish while it flows (it filters on the
# CPU until then): Fig. 9's linear paths, 8000 documents of 25 kB (200 MB).
$H xml generate --out "$W/xml-paths" --queries 2048 --length 5 --p 0.3 --splits 0 --docs 8000 --doc-kb 25 --seed 1 &
wait
cat "$W"/xml-*/* > /dev/null
CSV="$OUT/e2e.csv"
echo "workload,engine,run,phase,seconds,note" > "$CSV"
: > "$OUT/e2e.txt"
run() {
    local wl=$1 engine=$2 runno=$3; shift 3
    local t s
    t=$(date +%s.%N)
    $H xml filter --engine "$engine" --stats "$@" > "$W/out" 2> "$W/err" || echo "exit $? ($wl $engine)" >> "$W/err"
    s=$(awk "BEGIN { print $(date +%s.%N) - $t }")
    { echo "== $wl $engine run $runno: wall $s s"; grep -v '^stats:' "$W/err" | head -5; grep '^stats:' "$W/err"; } >> "$OUT/e2e.txt"
    sed -n 's/^stats: //p' "$W/err" | awk -v pre="$wl,$engine,$runno" '{
        n = split($0, f, /  +/); phase = f[1]; val = f[2]; sub(/ .*/, "", val);
        note = ""; for (i = 3; i <= n; i++) note = note (i > 3 ? " " : "") f[i];
        gsub(/"/, "\"\"", note);
        printf "%s,\"%s\",%s,\"%s\"\n", pre, phase, val, note }' >> "$CSV"
    echo "$wl,$engine,$runno,wall,$s," >> "$CSV"
    local sum; sum=$(md5sum < "$W/out")
    echo "$wl,$engine,$runno,answers,0,${sum:0:12}" >> "$CSV"
    say "  $wl $engine run $runno: wall $s s, answers ${sum:0:12}"
}
for wl in xml-10b xml-paths xml-big; do
    q="$W/$wl/queries.txt"
    for r in 1 2; do
        run $wl gpu-dfa $r --queries "$q" "$W/$wl"/doc-*.xml
    done
    if [ $wl = xml-big ]; then
        run $wl gpu-seg 1 --queries "$q" "$W/$wl"/doc-*.xml
    else
        run $wl gpu 1 --queries "$q" "$W/$wl"/doc-*.xml
    fi
    run $wl lazy-dfa 1 --threads "$(nproc)" --queries "$q" "$W/$wl"/doc-*.xml
done
rm -rf "$W"
say "done in $(( $(date +%s) - START )) s: $(date -u +%FT%TZ)"
