#!/usr/bin/env bash
# A session's last GPU runs (run from an empty directory; binaries in $BIN: harness,
# harness-base (main before the session's merges, for scripts/e2e-cut.sh) and, for the
# paired `keywords` step, harness-old (an older main to compare against); results under
# $OUT), within DEADLINE_S (default 540 s), each step while time is left, the steps of
# STEPS in its order (default: every one below but `dense`, which alone takes most of a
# call):
#   e2e       scripts/e2e-cut.sh: the users' commands, harness against harness-base
#             (within E2E_S seconds, default 200; ROUNDS and ONLY as that script reads them);
#   paired    `harness run clcb keywords` at 1M subscriptions, one seed, the engines
#             gpu, gpu-cells, grid and rtree (PAIRED_SEEDS seeds, default 1), harness-old then harness (PAIRED_ORDER="new
#             old" for the other order, "old new new old" for turns; paired-old/,
#             paired-new/, a second turn paired-old-2/ ...: the circles' series
#             compared within minutes on one machine);
#   fig3a     `harness run clcb fig3a`, three seeds, every engine;
#   fig3b .. fig4d  the same for Figs. 3b-4d (FIG_SEEDS seeds, default 3);
#   ccm-fig6 .. ccm-fig11  `harness run ccm fig6` .. `fig11`, three seeds, every engine;
#   table2    `harness run clcb table2`, three seeds, every engine;
#   ccm-table2  `harness run ccm table2`, three seeds, every engine;
#   hem-1m    `harness run ccm hem` at 1M filters only, HEM_SEEDS (2) seeds, the GPU
#             index and the CPU indexes that can be the best (not SFF), into $OUT/hem-1m
#             (not rec: the recorded CSV keeps every engine and both sizes);
#   dense10   `harness run ccm dense10`, three seeds, the GPU index, the hybrid and the
#             content index (the strongest CPU method and the one the hybrid is held to);
#   dense     `harness run ccm dense`, three seeds, the GPU index and the hybrid (with
#             the content index too it would not fit in one call);
#   keywords  `harness run clcb keywords`, three seeds, every engine;
#   keywords-regress  55's "no workload of `keywords` slower than today": harness-old's
#             `keywords` at 1M subscriptions twice (kw-old/ and kw-old/rerun/, the drift of one
#             binary between processes), then `harness regress` of harness against it
#             (kw-new/; PAIRED_SEEDS seeds, default 3; KW_ENGINES, default the paired ones);
#   hem       `harness run ccm hem` at 100k and 1M filters, one seed, every engine (about
#             300 s: most of a call);
#   dense-bench  the hybrid, bit and value indexes on one core and on all cores (`dense_bench`
#             example, in $BIN), the HEM suite's dense model at 1M filters, DENSE_BENCH_ONLY's
#             workloads (default zipf,10,3-5): how each index scales, beside the hybrid;
#   ddmcount  DDM's warm 2-D count of 1M regions in strips and whole (`count_split 20`,
#             in $BIN), every count checked against the CPU's;
#   sanitize  compute-sanitizer memcheck and racecheck on the changed kernels: CCM's value
#             cells (`index_check`, in $BIN when given), the cell index (`cells_split`,
#             in $BIN when given), DDM's sweeps in strips and whole (`sweep_check`, in
#             $BIN when given), XML's `gpu-dfa` kernels on quick `paths` and, unless
#             SAN_PAPER=0, the paper's CLCB kernels on quick `keywords` (GPU answers
#             checked against the CPU's).
# The recorded CSVs under $OUT/rec, the e2e files under $OUT/e2e, each step's output in
# $OUT/<step>.txt and the times in $OUT/times.txt, all packed into $OUT/final.tgz (the
# device tool brings back few files).
#
#     BIN=dir OUT=dir STEPS="e2e paired fig3a" bash scripts/gpu-final-request.sh
#
# With the binaries carried gzipped: scripts/gpu-final-carried.sh.
set -uo pipefail
R=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${BIN:?}; OUT=${OUT:?}; mkdir -p "$OUT/rec" "$OUT/e2e"
START=$(date +%s); DEADLINE_S=${DEADLINE_S:-540}
STEPS=${STEPS:-e2e paired fig3a table2 dense10 keywords}
left() { echo $((DEADLINE_S - ($(date +%s) - START))); }
run_step() { # name seconds command...
    local name=$1 secs=$2 l; l=$(left); shift 2
    [ "$l" -lt "$secs" ] && secs=$l
    if [ "$secs" -lt 20 ]; then echo "$name skipped (no time left)" | tee -a "$OUT/times.txt"; return; fi
    local s; s=$(date +%s)
    timeout "$secs" "$@" > "$OUT/$name.txt" 2>&1
    local rc=$?
    echo "$name $(( $(date +%s) - s )) s, exit $rc" | tee -a "$OUT/times.txt"
}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/gpu.txt" 2>&1
export CUDA_MODULE_LOADING=EAGER
H=$BIN/harness
for step in $STEPS; do
    case $step in
    e2e) run_step e2e "${E2E_S:-200}" env BIN="$BIN" OUT="$OUT/e2e" DEADLINE_S=$(( ${E2E_S:-200} - 10 )) \
            bash "$R/scripts/e2e-cut.sh" ;;
    paired)
        # A binary's second turn (PAIRED_ORDER="old new new old") goes to paired-<v>-2.
        declare -A turns=()
        for v in ${PAIRED_ORDER:-old new}; do
            h=$H; [ "$v" = old ] && h=$BIN/harness-old
            turns[$v]=$(( ${turns[$v]:-0} + 1 ))
            name=paired-$v; [ "${turns[$v]}" -gt 1 ] && name=$name-${turns[$v]}
            run_step "$name" 90 env GPU_MATCH_CLCB_SIZES=1000000 "$h" run clcb keywords --seeds "${PAIRED_SEEDS:-1}" \
                --engines gpu,gpu-cells,grid,rtree --out "$OUT/$name${PAIRED_TAG:-}"
        done ;;
    fig3a) run_step fig3a 120 "$H" run clcb fig3a --seeds 3 --out "$OUT/rec" ;;
    fig3[bcd] | fig4[abcd]) run_step "$step" 160 "$H" run clcb "$step" --seeds "${FIG_SEEDS:-3}" --out "$OUT/rec" ;;
    ccm-fig[6-9] | ccm-fig1[01]) run_step "$step" 160 "$H" run ccm "${step#ccm-}" --seeds 3 --out "$OUT/rec" ;;
    table2) run_step table2 150 "$H" run clcb table2 --seeds 3 --out "$OUT/rec" ;;
    ccm-table2) run_step ccm-table2 120 "$H" run ccm table2 --seeds 3 --out "$OUT/rec" ;;
    dense10) run_step dense10 200 "$H" run ccm dense10 --seeds 3 --engines gpu-index,hybrid,index --out "$OUT/rec" ;;
    dense) run_step dense 580 "$H" run ccm dense --seeds 3 --engines gpu-index,hybrid --out "$OUT/rec" ;;
    hem) run_step hem 420 env GPU_MATCH_HEM_SIZES=100000,1000000 "$H" run ccm hem --seeds 1 --out "$OUT/rec" ;;
    hem-1m) run_step hem-1m 580 env GPU_MATCH_HEM_SIZES=1000000 "$H" run ccm hem --seeds "${HEM_SEEDS:-2}" \
        --engines gpu-index,hybrid,bits,index --out "$OUT/hem-1m" ;;
    ddmcount) run_step ddmcount 45 "$BIN/count_split" 20 ;;
    dense-bench) [ -x "$BIN/dense_bench" ] && run_step dense-bench 300 "$BIN/dense_bench" --filters 1000000 \
        --only "${DENSE_BENCH_ONLY:-zipf,10,3-5}" --matchers hybrid,bit,value ;;
    keywords) run_step keywords 150 "$H" run clcb keywords --seeds 3 --out "$OUT/rec" ;;
    keywords-regress)
        # harness-old twice (the baseline and its rerun, whose gap is the drift between
        # two processes of one binary), then `harness regress` of this binary against it.
        kw_seeds=${PAIRED_SEEDS:-3} kw_engines=${KW_ENGINES:-gpu,gpu-cells,grid,rtree}
        for out in kw-old kw-old/rerun; do
            run_step "${out//\//-}" 200 env GPU_MATCH_CLCB_SIZES=1000000 "$BIN/harness-old" run clcb keywords \
                --seeds "$kw_seeds" --engines "$kw_engines" --out "$OUT/$out"
        done
        run_step kw-regress 300 env GPU_MATCH_CLCB_SIZES=1000000 "$H" regress clcb keywords --baseline "$OUT/kw-old" \
            --size full --samples "$kw_seeds" --all-series --engines "$kw_engines" --out "$OUT/kw-new" ;;
    sanitize)
        CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2> /dev/null | head -1)
        for tool in memcheck racecheck; do
            [ -x "$BIN/index_check" ] && run_step "san-$tool-ccm" 40 "$CS" --tool "$tool" --error-exitcode 9 \
                "$BIN/index_check" 2 small cells
            [ -x "$BIN/cells_split" ] && run_step "san-$tool-cells" 40 env CELLS_ROUND=1024 "$CS" --tool "$tool" \
                --error-exitcode 9 "$BIN/cells_split" uniform 0.001 3000
            [ -x "$BIN/sweep_check" ] && run_step "san-$tool-ddm" 40 "$CS" --tool "$tool" --error-exitcode 9 \
                "$BIN/sweep_check" 0 20000
            run_step "san-$tool-xml" 60 "$CS" --tool "$tool" --error-exitcode 9 "$H" run xml paths --quick \
                --seeds 1 --engines gpu-dfa,lazy-dfa-ahead-mc --out "$OUT/san-xml-$tool"
        done
        [ "${SAN_PAPER:-1}" = 1 ] && run_step san-memcheck-clcb-paper 60 "$CS" --tool memcheck --error-exitcode 9 "$H" run clcb keywords --quick \
            --seeds 1 --engines gpu,gpu-grid,gpu-cells,grid,rtree --out "$OUT/san-quick" ;;
    *) echo "unknown step $step" | tee -a "$OUT/times.txt" ;;
    esac
done
cd "$OUT" && tar czf final.tgz --exclude=final.tgz ./* && find . -mindepth 1 ! -name final.tgz -delete
