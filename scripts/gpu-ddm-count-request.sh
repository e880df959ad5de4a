#!/usr/bin/env bash
# `ddm match` on 1M 2-D regions: the GPU count (gpu-bisect) and the CPU's (sbm), ROUNDS
# rounds alternating (default 4), each run's --stats in $OUT/ddm.txt and its md5 in
# $OUT/ddm.csv; then `harness run ddm scaleup_a1 --seeds 1` (every count checked against
# the CPU's, counts repeated) into a scratch directory, its output in $OUT/scaleup.txt.
# Binary: $BIN/harness.
set -uo pipefail
BIN=${BIN:?}; OUT=${OUT:?}; mkdir -p "$OUT"
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
timeout 60 "$BIN/harness" ddm generate --out "$W/ddm.csv" --regions 1000000 > /dev/null
cat "$W/ddm.csv" > /dev/null
echo "engine,round,load_s,match_s,md5" > "$OUT/ddm.csv"
for r in $(seq 1 "${ROUNDS:-4}"); do
    for engine in gpu-bisect sbm; do
        timeout 20 "$BIN/harness" ddm match --regions "$W/ddm.csv" --engine "$engine" --stats > "$W/out" 2> "$W/err"
        l=$(sed -n 's/^stats: load *\([0-9.]*\) s.*/\1/p' "$W/err")
        m=$(sed -n 's/^stats: match *\([0-9.]*\) s.*/\1/p' "$W/err")
        { echo "== $engine round $r"; grep '^stats:' "$W/err"; } >> "$OUT/ddm.txt"
        echo "$engine,$r,$l,$m,$(md5sum < "$W/out" | cut -c1-12)" >> "$OUT/ddm.csv"
    done
done
timeout 90 "$BIN/harness" run ddm scaleup_a1 --seeds 1 --out "$W/rec" > "$OUT/scaleup.txt" 2>&1
echo "scaleup exit $?" >> "$OUT/scaleup.txt"
