#!/usr/bin/env bash
# A cut-down `scripts/e2e.sh` for one run on the GPU machine (16 cores, one H200): the
# users' commands with --stats on generated files of the e2e sizes, the GPU engine named
# (the default of `ccm match`; the others default to the CPU at these sizes) against the
# strongest CPU engine, for two binaries: `new` ($BIN/harness, this
# branch) and `base` ($BIN/harness-base, main before it). Each command runs twice
# (r1, r2; new and base alternate); `xml filter --engine gpu-dfa` too where the binary
# offers it. Outputs compared by md5 (`answers` rows).
#
#     BIN=/dir/with/binaries OUT=/dir/for/results bash scripts/e2e-cut.sh
#
# Writes $OUT/e2e.csv (as scripts/e2e.sh), $OUT/e2e.txt (each run's --stats), and
# $OUT/cache.txt (whether the driver's JIT cache was written, and its size).
# Finishes within about 200 s (every step under `timeout`). ONLY=ccm,clcb (a comma list
# of ccm, clcb, xml, ddm) generates and runs those commands alone; DEADLINE_S (default
# 190) is the time after which no run starts; ROUNDS (default 2) the runs of each
# command and binary.
set -uo pipefail
. "$(dirname "$0")/e2e-lib.sh"

e2e_setup
e2e_begin gpu-request 190
# wanted CMD: whether ONLY (empty: everything) names CMD.
wanted() { [ -z "${ONLY:-}" ] || [[ ",$ONLY," == *",$1,"* ]]; }

say "transparent huge pages: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>&1), defrag $(cat /sys/kernel/mm/transparent_hugepage/defrag 2>&1)"
say "kernel: $(uname -r)"
GEN=$BIN/harness
# SMALL=1: a dry run off the GPU machine (small files; the default engines fall back).
if [ -n "${SMALL:-}" ]; then
    CCM_EV=2000; CLCB_SUBS=2000; CLCB_EV=2000; XML_KB=500; DDM=2000; DDM4=8000; Q=(--quick)
else
    CCM_EV=1000000; CLCB_SUBS=250000; CLCB_EV=1000000; XML_KB=100000; DDM=1000000; DDM4=4000000; Q=()
fi
t0=$(date +%s.%N)
wanted ccm &&
    timeout 60 "$GEN" ccm generate --out-subscriptions "$W/ccm-s.jsonl" --out-events "$W/ccm-e.jsonl" --events $CCM_EV &
wanted clcb &&
    timeout 60 "$GEN" clcb generate --out-subscriptions "$W/clcb-s.jsonl" --out-events "$W/clcb-e.jsonl" \
        --subscriptions $CLCB_SUBS --events $CLCB_EV &
wanted xml && timeout 60 "$GEN" xml generate --out "$W/xml-big" --queries 256 --docs 1 --doc-kb $XML_KB &
wanted xml && timeout 60 "$GEN" xml generate --figure fig10b --queries 2000 "${Q[@]}" --out "$W/xml-10b" &
wanted ddm && timeout 60 "$GEN" ddm generate --out "$W/ddm.csv" --regions $DDM &
wanted ddm && timeout 60 "$GEN" ddm generate --out "$W/ddm4.csv" --regions $DDM4 &
wait
say "generated in $(awk "BEGIN { print $(date +%s.%N) - $t0 }") s:"
for f in "$W"/ccm-s.jsonl "$W"/ccm-e.jsonl "$W"/clcb-s.jsonl "$W"/clcb-e.jsonl "$W"/ddm.csv "$W"/ddm4.csv; do
    [ -f "$f" ] && say "  $(basename "$f"): $(wc -l < "$f") lines, $(( $(stat -c %s "$f") / 1000000 )) MB"
done
wanted xml &&
    say "  xml-big: $(du -sm "$W/xml-big" | cut -f1) MB; xml-10b: $(ls "$W/xml-10b" | wc -l) files, $(du -sm "$W/xml-10b" | cut -f1) MB"
cat "$W"/*.jsonl "$W"/*.csv "$W"/xml-big/* "$W"/xml-10b/* > /dev/null 2>&1

BINS="new=$BIN/harness base=$BIN/harness-base"
PRE=(env)
# A machine's first run: the driver's JIT cache emptied, then written by this run?
rm -rf ~/.nv/ComputeCache
wanted ccm &&
    e2e_run new "$BIN/harness" ccm default-cold 1 ccm match --subscriptions "$W/ccm-s.jsonl" --events "$W/ccm-e.jsonl"
{ echo "after one run from an empty cache:"; du -sh ~/.nv/ComputeCache 2>&1; ls -la ~/.nv/ComputeCache 2>&1 | head; } > "$OUT/cache.txt"

for r in $(seq "${ROUNDS:-2}"); do
    for pair in $BINS; do
        name=${pair%%=*}; bin=${pair#*=}
        if wanted ccm; then
            e2e_run "$name" "$bin" ccm default $r ccm match --subscriptions "$W/ccm-s.jsonl" --events "$W/ccm-e.jsonl"
            e2e_run "$name" "$bin" ccm hybrid $r ccm match --subscriptions "$W/ccm-s.jsonl" --events "$W/ccm-e.jsonl"
        fi
        if wanted xml; then
            e2e_run "$name" "$bin" xml-big gpu-seg $r xml filter --queries "$W/xml-big/queries.txt" "$W"/xml-big/doc-*.xml
            e2e_run "$name" "$bin" xml-big lazy-dfa $r xml filter --threads "$(nproc)" --queries "$W/xml-big/queries.txt" "$W"/xml-big/doc-*.xml
            e2e_run "$name" "$bin" xml-10b gpu $r xml filter --queries "$W/xml-10b/queries.txt" "$W"/xml-10b/doc-*.xml
            e2e_run "$name" "$bin" xml-10b lazy-dfa $r xml filter --threads "$(nproc)" --queries "$W/xml-10b/queries.txt" "$W"/xml-10b/doc-*.xml
            # gpu-dfa, where the binary's `xml filter` offers it (older binaries do not).
            if "$bin" xml filter --help 2>/dev/null | grep -q gpu-dfa; then
                e2e_run "$name" "$bin" xml-big gpu-dfa $r xml filter --queries "$W/xml-big/queries.txt" "$W"/xml-big/doc-*.xml
                e2e_run "$name" "$bin" xml-10b gpu-dfa $r xml filter --queries "$W/xml-10b/queries.txt" "$W"/xml-10b/doc-*.xml
            fi
        fi
        if wanted ddm; then
            e2e_run "$name" "$bin" ddm gpu-bisect $r ddm match --regions "$W/ddm.csv"
            e2e_run "$name" "$bin" ddm sbm $r ddm match --regions "$W/ddm.csv"
            e2e_run "$name" "$bin" ddm-pairs gpu-bisect $r ddm match --pairs --regions "$W/ddm.csv"
            e2e_run "$name" "$bin" ddm-pairs bisect $r ddm match --pairs --regions "$W/ddm.csv"
        fi
    done
done
# CLCB last (the longest runs: a late one is skipped rather than the rest).
for r in $(seq "${ROUNDS:-2}"); do
    wanted clcb || break
    for pair in $BINS; do
        name=${pair%%=*}; bin=${pair#*=}
        e2e_run "$name" "$bin" clcb gpu-cells $r clcb match --subscriptions "$W/clcb-s.jsonl" --events "$W/clcb-e.jsonl"
        e2e_run "$name" "$bin" clcb grid $r clcb match --subscriptions "$W/clcb-s.jsonl" --events "$W/clcb-e.jsonl"
    done
done
say "done: $(date -u +%FT%TZ), $(( $(date +%s) - T0 )) s"
