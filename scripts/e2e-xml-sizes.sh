#!/usr/bin/env bash
# `xml filter` end to end on the GPU machine from 28 MB to 1 GB of documents: one long
# document (100 MB, 256 twigs), ten of them (1 GB), Fig. 10b's 1000 documents (28 MB,
# 2000 twigs) and 10,000 of its kind (about 280 MB). NEW_ENGINES (default: lazy-dfa on every
# core, gpu-dfa, gpu and, on the long documents, gpu-seg) run with $BIN/harness (`new`),
# BASE_ENGINES (default gpu-dfa) with $BIN/harness-base (`base`) when it is there; ROUNDS
# rounds (default 2), after one unrecorded run that fills the driver's JIT cache. Outputs
# compared by md5 (`answers` rows), the CSV and log as scripts/e2e-cut.sh writes them.
#
#     BIN=/dir/with/binaries OUT=/dir/for/results bash scripts/e2e-xml-sizes.sh
#
# No run starts after DEADLINE_S (default 400) seconds.
set -uo pipefail
. "$(dirname "$0")/e2e-lib.sh"

e2e_setup
e2e_begin "xml sizes" 400
GEN=$BIN/harness
if [ -n "${SMALL:-}" ]; then
    KB=500; X10=(--docs 40); B10=(--quick)
else
    KB=100000; X10=(--docs 10000); B10=()
fi
timeout 120 "$GEN" xml generate --out "$W/big" --queries 256 --docs 1 --doc-kb $KB &
timeout 120 "$GEN" xml generate --out "$W/big10" --queries 256 --docs 10 --doc-kb $KB --seed 2 &
timeout 120 "$GEN" xml generate --figure fig10b --queries 2000 "${B10[@]}" --out "$W/b10" &
# Fig. 10b's parameters (twigs of 5 nodes, p = 0.5, documents of 25 kB), ten times the documents.
timeout 120 "$GEN" xml generate --queries 2000 --length 5 --p 0.5 --doc-kb 25 "${X10[@]}" --out "$W/b10x10" &
wait
for s in big big10 b10 b10x10; do
    say "  $s: $(ls "$W/$s" | grep -c '^doc-') documents, $(du -sm "$W/$s" | cut -f1) MB"
    cat "$W/$s"/* > /dev/null
done
PRE=(env)
# Fills the driver's JIT cache (not recorded).
"$BIN/harness" xml filter --engine gpu --queries "$W/b10/queries.txt" "$W"/b10/doc-*.xml > /dev/null 2>&1

for r in $(seq "${ROUNDS:-2}"); do
    for s in big big10 b10 b10x10; do
        for engine in ${NEW_ENGINES:-lazy-dfa gpu-dfa gpu gpu-seg}; do
            case "$engine:$s" in gpu-seg:b10*) continue ;; esac
            e2e_run new "$BIN/harness" "xml-$s" "$engine" "$r" xml filter \
                --queries "$W/$s/queries.txt" "$W/$s"/doc-*.xml
        done
        [ -x "$BIN/harness-base" ] || continue
        for engine in ${BASE_ENGINES:-gpu-dfa}; do
            e2e_run base "$BIN/harness-base" "xml-$s" "$engine" "$r" xml filter \
                --queries "$W/$s/queries.txt" "$W/$s"/doc-*.xml
        done
    done
done
say "done: $(date -u +%FT%TZ), $(( $(date +%s) - T0 )) s"
