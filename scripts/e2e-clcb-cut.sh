#!/usr/bin/env bash
# `clcb match` alone of `scripts/e2e-cut.sh`, for the cell index's start-up: the e2e
# sizes (250k subscriptions, 2.5M filters; 1M events), --stats, engines gpu-cells and
# grid, `new` ($BIN/harness, this branch) against `base` ($BIN/harness-base, main before
# it), ROUNDS rounds (default 3; round 1 pays each binary's PTX JIT where the driver's
# cache lacks it), new first in odd rounds and base first in even ones, every output's
# md5 kept (`answers` rows).
#
#     BIN=/dir/with/binaries OUT=/dir/for/results bash scripts/e2e-clcb-cut.sh
#
# Writes $OUT/e2e.csv (as scripts/e2e.sh) and $OUT/e2e.txt (each run's --stats). Uses
# files already generated when CLCB_S and CLCB_E name them. About 30 s; every step under
# `timeout`, the whole under DEADLINE_S (default 60).
set -uo pipefail
. "$(dirname "$0")/e2e-lib.sh"
e2e_setup
T0=$(date +%s)
left() { echo $((${DEADLINE_S:-60} + 10 - ($(date +%s) - T0))); }
echo "e2e-clcb-cut: $(date -u +%FT%TZ), $(nproc) cores" >> "$LOG"
S=${CLCB_S:-}
E=${CLCB_E:-}
if [ -z "$S" ] || [ -z "$E" ]; then
    S=$W/clcb-s.jsonl
    E=$W/clcb-e.jsonl
    # SMALL=1: a dry run off the GPU machine (small files; gpu-cells then fails to open).
    if [ -n "${SMALL:-}" ]; then SUBS=2000; EV=2000; else SUBS=250000; EV=1000000; fi
    timeout 60 "$BIN/harness" clcb generate --out-subscriptions "$S" --out-events "$E" \
        --subscriptions $SUBS --events $EV
fi
echo "files: $(wc -l < "$S") filter lines, $(wc -l < "$E") events" >> "$LOG"
cat "$S" "$E" > /dev/null
PRE=(env)
for r in $(seq 1 "${ROUNDS:-3}"); do
    # Odd rounds new first, even rounds base first.
    pairs=("new=$BIN/harness" "base=$BIN/harness-base")
    [ $((r % 2)) = 0 ] && pairs=("${pairs[1]}" "${pairs[0]}")
    for pair in "${pairs[@]}"; do
        name=${pair%%=*}; bin=${pair#*=}
        for engine in gpu-cells grid; do
            e2e_run "$name" "$bin" clcb "$engine" "$r" clcb match --subscriptions "$S" --events "$E"
        done
    done
done
echo "done: $(date -u +%FT%TZ), $(( $(date +%s) - T0 )) s" >> "$LOG"
