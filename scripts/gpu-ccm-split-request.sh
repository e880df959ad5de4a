#!/usr/bin/env bash
# `ccm match` (Table 1's default scenario, 1M events) on the GPU index under splits of the
# host's threads between parsing (RAYON_NUM_THREADS) and the index's staging
# (--stage-threads), the default first, ROUNDS rounds (default 5) alternating; each run's
# --stats in $OUT/split.txt, its stream and md5 in $OUT/split.csv. Binary: $BIN/harness.
set -uo pipefail
BIN=${BIN:?}; OUT=${OUT:?}; mkdir -p "$OUT"
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
timeout 60 "$BIN/harness" ccm generate --out-subscriptions "$W/s.jsonl" --out-events "$W/e.jsonl" --events 1000000 > /dev/null
cat "$W"/*.jsonl > /dev/null
echo "split,round,stream_s,md5" > "$OUT/split.csv"
for r in $(seq 1 "${ROUNDS:-5}"); do
    for split in default 15/1 14/2 13/3 12/4; do
        if [ "$split" = default ]; then envs=(); args=(); else
            envs=(RAYON_NUM_THREADS=${split%/*}); args=(--stage-threads "${split#*/}"); fi
        env "${envs[@]}" timeout 20 "$BIN/harness" ccm match --subscriptions "$W/s.jsonl" --events "$W/e.jsonl" \
            --stats "${args[@]}" > "$W/out" 2> "$W/err"
        s=$(sed -n 's/^stats: stream (end to end) *\([0-9.]*\) s.*/\1/p' "$W/err")
        { echo "== $split round $r"; grep '^stats:' "$W/err"; } >> "$OUT/split.txt"
        echo "$split,$r,$s,$(md5sum < "$W/out" | cut -c1-12)" >> "$OUT/split.csv"
    done
done
