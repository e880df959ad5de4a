#!/usr/bin/env bash
# The parse helper's GPU request (H200, 16 host cores): the events parsers made faster
# per core (ccm::flat_json's scanner, clcb's events read by it), `new` = $BIN/harness
# (branch h-parse), `base` = $BIN/harness-base (main). No kernel is changed.
#   1. `ccm match` (default GPU engine, hybrid) and `clcb match` (gpu-cells, grid) at the
#      e2e sizes (1M events), new and base alternating, three rounds each, md5 of the
#      outputs: scripts/e2e-cut.sh with ONLY=ccm,clcb (e2e/e2e.csv, e2e/e2e.txt).
#   2. The events parsers alone on 1 and 16 threads, new and base by turns
#      ($BIN/{ccm,clcb}-parse-events[-base]: the examples ccm/examples/parse_events.rs and
#      clcb/examples/clcb_parse_events.rs (parse_events.rs when this ran), the
#      text path `ccm match` and `clcb match` take): parse.txt.
#
#     BIN=/dir/with/binaries OUT=/dir/for/results bash scripts/gpu-events-parse-request.sh
#
# Writes under $OUT: info.txt, times.txt (step, seconds, exit code; 124 = cut by its
# timeout), e2e-run.txt, e2e/ and parse.txt. Every step under `timeout`, the whole within about 140 s.
set -uo pipefail
BIN=${BIN:?BIN: the directory holding harness, harness-base and the parse examples}
OUT=${OUT:-out}
R=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUT"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
START=$(date +%s)
left() { echo $((${DEADLINE_S:-140} - ($(date +%s) - START))); }
# step NAME LIMIT_S CMD...: CMD under timeout (cut to the time left), its time and exit
# code in times.txt.
step() {
    local name=$1 limit=$2 t0 rc
    shift 2
    local t
    t=$(left)
    if [ "$t" -lt 5 ]; then
        echo "$name skipped-$t-s-left 0" >> "$OUT/times.txt"
        return
    fi
    t0=$(date +%s.%N)
    timeout $((limit < t ? limit : t)) "$@"
    rc=$?
    echo "$name $(awk "BEGIN { print $(date +%s.%N) - $t0 }") $rc" >> "$OUT/times.txt"
}
{
    echo "gpu-request (parse): $(date -u +%FT%TZ), $(nproc) cores"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    ls -la "$BIN"
    lscpu | grep -E "Model name|MHz|^CPU\(s\)"
} > "$OUT/info.txt" 2>&1

# 1. The commands, end to end (about 90 s: generation ~10 s, 3 rounds x 4 commands x 2
#    binaries of 0.5-1.5 s, each command's output checksummed).
step e2e 105 env ONLY=ccm,clcb ROUNDS=3 DEADLINE_S=95 BIN="$BIN" OUT="$OUT/e2e" \
    bash "$R/scripts/e2e-cut.sh" > "$OUT/e2e-run.txt" 2>&1

# 2. The parsers alone: each events file in the page cache, base and new by turns.
step generate 20 bash -c "
    '$BIN/harness' ccm generate --out-subscriptions '$W/ccm-s.jsonl' --out-events '$W/ccm-e.jsonl' --events 1000000 &
    '$BIN/harness' clcb generate --out-subscriptions '$W/clcb-s.jsonl' --out-events '$W/clcb-e.jsonl' --subscriptions 1000 --events 1000000 &
    wait; cat '$W/ccm-e.jsonl' '$W/clcb-e.jsonl' > /dev/null; ls -la '$W'" > "$OUT/parse.txt" 2>&1
for threads in 1 16; do
    for kind in base new; do
        suffix=$([ $kind = base ] && echo -base)
        for cmd in ccm clcb; do
            echo "== $cmd $kind, $threads thread(s)" >> "$OUT/parse.txt"
            step "parse-$cmd-$threads-$kind" 12 env RAYON_NUM_THREADS=$threads \
                "$BIN/$cmd-parse-events$suffix" "$W/$cmd-e.jsonl" 65536 text \
                >> "$OUT/parse.txt" 2>&1
        done
    done
done
# The new parsers on the 14 threads `ccm match` parses on beside its 2 staging threads:
# their rate alone, against the parse time the command's --stats gives.
for cmd in ccm clcb; do
    echo "== $cmd new, 14 thread(s)" >> "$OUT/parse.txt"
    step "parse-$cmd-14-new" 12 env RAYON_NUM_THREADS=14 \
        "$BIN/$cmd-parse-events" "$W/$cmd-e.jsonl" 65536 text >> "$OUT/parse.txt" 2>&1
done
echo "done $(( $(date +%s) - START )) s" >> "$OUT/times.txt"
