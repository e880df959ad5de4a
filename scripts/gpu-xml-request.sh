#!/usr/bin/env bash
# Mid-session check of gpu-dfa's lean walk on the XML `paths` workload (linear paths):
# the units planned on the device (no list of units from the host), events and plan in
# one page-locked copy, the answers listed on the device (compact_rows) and read back
# into page-locked memory (one wait a call), and a thread per unit (walk_dfa_lanes)
# against a warp per unit (walk_dfa).
#
# Binaries (stripped, release, built here and carried):
#     .carry/harness       cargo build --release -p harness
#     .carry/xml_gpu_dfa   cargo build --release -p baselines --example xml_gpu_dfa
# Run from the repository root:  OUT=/some/dir bash scripts/gpu-xml-request.sh  (under 240 s)
#
# Writes to $OUT:
#   summary.txt   the lines below, the last of them the table to read first;
#   check.txt     compute-sanitizer memcheck and racecheck on quick runs of xml/paths
#                 (walk_dfa_lanes on the device's plan, compact_rows) and xml/fig10a (filter_dfa,
#                 whose parameters grew);
#   paths.txt     `harness run xml paths`, one seed, full size (every answer checked
#                 against the NFA), gpu-dfa's phases of its best run at every point;
#   results/xml/paths.csv  that run's recording;
#   bigdoc-*.txt  `xml filter --stats` on one generated 100 MB document (256 twigs), lazy-dfa
#                 on every core and gpu-seg: the document now parsed in parts on all cores;
#   walk-*.txt    the example on the paths workload (500 documents, 2048 linear paths
#                 of 5 and 10 nodes): each form of the lean walk (lanes; rows: lanes with
#                 the answers decoded from rows of bits on the host; warp; host's plan),
#                 the engine's choice of segments and a few fixed ones, the phases of
#                 each, against the lazy DFA on all cores.
set -uo pipefail

OUT=${OUT:-out}
H=${H:-.carry/harness}
X=${X:-.carry/xml_gpu_dfa}
mkdir -p "$OUT"
START=$(date +%s)
say() { echo "$*" | tee -a "$OUT/summary.txt"; }
say "gpu-request (xml paths): $(date -u +%FT%TZ), $(nproc) cores, $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
command -v nvidia-smi > /dev/null &&
    say "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"

# 1. Sanitizers on quick runs (about 30 s).
{
    for e in paths fig10a; do
        for tool in memcheck racecheck; do
            echo "== $tool: xml/$e quick"
            timeout 60 compute-sanitizer --tool $tool --print-limit 20 \
                $H run xml $e --quick --seeds 1 --engines gpu-dfa,lazy-dfa-ahead-mc,yfilter \
                --out /tmp/sanitized 2>&1 | grep -v "^ " | tail -8
            echo "exit ${PIPESTATUS[0]}"
        done
    done
} > "$OUT/check.txt" 2>&1
mem=$(grep -c 'ERROR SUMMARY: 0 errors' "$OUT/check.txt")
race=$(grep -c 'RACECHECK SUMMARY: 0 hazards' "$OUT/check.txt")
say "sanitizers: memcheck clean on $mem of 2, racecheck on $race of 2 ($(( $(date +%s) - START )) s)"

# 2. The paths experiment, one seed (about 50 s).
s=$(date +%s)
timeout 120 $H run xml paths --seeds 1 --out "$OUT/results" > "$OUT/paths.txt" 2>&1
say "paths: exit $? in $(( $(date +%s) - s )) s"
grep "number of queries = 2048" "$OUT/paths.txt" | tee -a "$OUT/summary.txt"
grep "gpu-dfa phases" "$OUT/paths.txt" | tee -a "$OUT/summary.txt"

# 3. `xml filter` on one 100 MB document: parsed in parts on all cores now (about 25 s).
W=$(mktemp -d)
s=$(date +%s)
$H xml generate --out "$W/big" --queries 256 --docs 1 --doc-kb 100000 > /dev/null 2>&1
cat "$W"/big/* > /dev/null
for engine in lazy-dfa gpu-seg; do
    t=$(date +%s.%N)
    timeout 40 $H xml filter --engine $engine --stats --queries "$W/big/queries.txt" "$W"/big/doc-*.xml \
        > "$W/out" 2> "$OUT/bigdoc-$engine.txt"
    rc=$?
    w=$(awk "BEGIN { print $(date +%s.%N) - $t }")
    say "bigdoc $engine: exit $rc, wall $w s, answers $(md5sum < "$W/out" | cut -c1-12)"
    grep -iE "read|parse|stream|filter" "$OUT/bigdoc-$engine.txt" | head -6 | sed 's/^/    /' | tee -a "$OUT/summary.txt"
done
rm -rf "$W"
say "bigdoc: $(( $(date +%s) - s )) s"

# 4. The forms of the lean walk, 2048 linear paths of 5 and 10 nodes (about 60 s).
for walk in lanes rows warp host; do
    for len in 5 10; do
        f="$OUT/walk-L$len-$walk.txt"
        left=$(( 232 - ($(date +%s) - START) ))
        [ $left -lt 15 ] && { say "walk L=$len $walk: skipped (time)"; continue; }
        XML_SPLITS=0 XML_P=0.3 DFA_WALK=$walk timeout $(( left < 40 ? left : 40 )) $X $len > "$f" 2>&1
        say "walk L=$len $walk: exit $?"
        grep -E "engine's choice|segments of (8|32|128)\+|whole documents|lazy DFA on" "$f" | sed 's/^/    /' | tee -a "$OUT/summary.txt"
    done
done
say "done in $(( $(date +%s) - START )) s: $(date -u +%FT%TZ)"
