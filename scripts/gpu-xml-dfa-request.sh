#!/usr/bin/env bash
# Mid-session check of gpu-dfa's call on the XML `paths` workload (Fig. 9's batch, 2048
# linear paths of 5 and 10 nodes): the batch encoded straight into page-locked memory
# (one copy as it lies, no staging), the answers' count zeroed by the walk (no memset of
# the answers), a query's bit set only after a load shows it unset, and the phase split
# of one call before and after (the example `dfa_split`: each way side by side in one
# binary, answers checked against the lazy DFA on the CPU).
#
# Binaries (stripped, release, built on the branch h-xml-dfa), in $BIN:
#     harness     cargo build --release -p harness
#     dfa_split   cargo build --release -p xml-twig --example dfa_split
# Run:  BIN=/dir/with/binaries OUT=/some/dir bash gpu-xml-dfa-request.sh   (under 200 s)
#
# Writes to $OUT:
#   summary.txt   the lines to read first;
#   paths.txt     `harness run xml paths --seeds 1 --engines gpu-dfa,lazy-dfa-ahead-mc`
#                 (full size, every answer checked against the NFA; gpu-dfa's phases of its
#                 best run at every point); results/xml/paths.csv its recording;
#   split.txt     dfa_split, 200 calls per way: median and best call, median phases;
#   memcheck.txt  compute-sanitizer memcheck on a small dfa_split (50 documents, 256
#                 paths, 2 calls per way: walk_dfa_lanes, compact_rows, both batch forms).
set -uo pipefail

BIN=${BIN:?set BIN to the directory holding harness and dfa_split}
OUT=${OUT:?set OUT to the directory for the results}
mkdir -p "$OUT"
START=$(date +%s)
say() { echo "$*" | tee -a "$OUT/summary.txt"; }
say "gpu-xml-dfa-request: $(date -u +%FT%TZ), $(nproc) cores"
command -v nvidia-smi > /dev/null &&
    say "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"

# 1. The paths experiment, one seed, gpu-dfa against the best CPU (about 40-60 s).
s=$(date +%s)
timeout 95 "$BIN/harness" run xml paths --seeds 1 --engines gpu-dfa,lazy-dfa-ahead-mc \
    --out "$OUT/results" > "$OUT/paths.txt" 2>&1
say "paths: exit $? in $(( $(date +%s) - s )) s"
grep "number of queries = 2048" "$OUT/paths.txt" | tee -a "$OUT/summary.txt"
grep -E "gpu-dfa phases|summary:|disagree" "$OUT/paths.txt" | tee -a "$OUT/summary.txt"

# 2. The phase split of one call, each way, L=5 and L=10 (about 30 s).
s=$(date +%s)
timeout 50 "$BIN/dfa_split" 200 > "$OUT/split.txt" 2>&1
say "split: exit $? in $(( $(date +%s) - s )) s"
tee -a "$OUT/summary.txt" < "$OUT/split.txt"

# 3. memcheck on a small run of every way (about 20 s).
s=$(date +%s)
timeout 45 compute-sanitizer --tool memcheck --print-limit 20 "$BIN/dfa_split" 2 50 256 \
    > "$OUT/memcheck.txt" 2>&1
say "memcheck: exit $? in $(( $(date +%s) - s )) s; $(grep -E 'ERROR SUMMARY' "$OUT/memcheck.txt" | tail -1)"
grep -cE "differs|Error" "$OUT/memcheck.txt" | sed 's/^/memcheck lines naming an error or a difference: /' | tee -a "$OUT/summary.txt"
say "total $(( $(date +%s) - START )) s"
