#!/usr/bin/env bash
# CCM's CPU yardstick against the HEM suite (Shi & Qian, DASFAA 2022: HEM5DD and
# HEM5DD-avxOR, the authors' C++), on the GPU machine's host, and the `hem` experiment
# recorded there. Run from the repository root with the release binaries carried in
# .carry/ (harness; dense_bench: `cargo build --release -p baselines --example
# dense_bench`) and the suite's sources with the side-by-side driver in .carry/hem
# (its *.h / *.cpp and driver/); builds nothing of the project's, compiles HEM with g++:
#     OUT=$OUT bash scripts/gpu-hem.sh
# Steps (about 400 s on 16 cores; DEADLINE_S, 560 by default, bounds the later steps):
#   1. HEM5DD and HEM5DD-avxOR compiled for SIZES (100000 and 1000000 filters) at once;
#   2. `harness run ccm hem --seeds 1`, one size per run (GPU_MATCH_HEM_SIZES), every
#      engine: SFF, index, hybrid (with the bit index among its choices), bits (the bit
#      index alone), one core and all cores, the GPU kernels and the GPU index, answers
#      checked against SFF's;
#   3. per size, dense_bench on the suite's dense model (2000 events: the hybrid and the
#      bit index, one core and all cores, answers checked equal), dumping each workload;
#   4. per size and workload, HEM5DD and HEM5DD-avxOR at bit exponents 4 and 6 on the
#      same dump, listing the matching ids from their final bitset (HEM_LIST=1, what
#      our engines do), one thread and all threads (events split over them), counts
#      checked against ours (`mismatches=0`).
# Everything goes to $OUT: gpu.txt (machine), times.txt (step, seconds, exit code; 124:
# cut by its timeout, nothing recorded), hem/ (build logs, gpu-match-N.txt: dense_bench,
# hem-N.txt: HEM's lines), harness-N.txt (the run's output) and hem-csv.tgz (ccm/hem.csv
# and its samples per size, under N/; not written into results/: the lead decides).
set -uo pipefail
H=${H:-./.carry/harness}
B=${B:-./.carry/dense_bench}
SRC=${SRC:-.carry/hem}
OUT=${OUT:-/tmp/out}
SIZES=${SIZES:-"100000 1000000"}
DEADLINE_S=${DEADLINE_S:-560}
# The dense model's workloads (dense_bench's --only; `few`: 3-5 of 100 names; `table1`: the same
# with 3-5 predicates a filter) and whether
# the `hem` experiment runs (HARNESS=0: HEM and dense_bench alone).
ONLY=${ONLY:-3-5,10,20,zipf,few,table1}
HARNESS=${HARNESS:-1}
T=$(nproc)
O=$OUT/hem
R=/tmp/gpu-hem
rm -rf "$R"
mkdir -p "$O" "$R"
START=$(date +%s)
export CUDA_MODULE_LOADING=EAGER
{
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1
    git log -1 --format='commit %h %s' 2>/dev/null | cut -c1-100
    echo "cores $T"
    grep -m1 "model name" /proc/cpuinfo
} | tee "$OUT/gpu.txt"
left() { echo $((DEADLINE_S - ($(date +%s) - START))); }
. "$(dirname "${BASH_SOURCE[0]}")/step-lib.sh"

# 1. HEM, both variants for every size, compiled at once.
if command -v g++ >/dev/null && [ -d "$SRC/driver" ]; then
    for N in $SIZES; do
        # A folder per size: the builds of two sizes would share the sources' copies.
        mkdir -p "$R/b-$N"
        sh "$SRC/driver/build.sh" "$SRC" "$N" "$R/b-$N" >"$O/build-$N.txt" 2>&1 &
    done
    s=$(date +%s)
    wait
    echo "hem-build $(($(date +%s) - s)) 0" | tee -a "$OUT/times.txt"
    HAVE_HEM=1
else
    echo "no g++ or no $SRC/driver: HEM not run" | tee "$O/none.txt"
    HAVE_HEM=0
fi

# 2. The `hem` experiment, one size per run, before the rest (its CSV is written at the
#    end of a run: a run cut by its timeout records nothing, while HEM's lines below are
#    kept one by one).
for N in $SIZES; do
    [ "$HARNESS" = 1 ] || break
    cap=150
    [ "$N" -gt 200000 ] && cap=300
    limit=$(left)
    [ "$limit" -lt "$cap" ] || limit=$cap
    [ "$limit" -gt 20 ] || { echo "harness-$N 0 skipped" | tee -a "$OUT/times.txt"; continue; }
    step "harness-$N" "$limit" env GPU_MATCH_HEM_SIZES="$N" \
        "$H" run ccm hem --seeds 1 --out "$R/$N" >"$OUT/harness-$N.txt" 2>&1
done

for N in $SIZES; do
    # 3. Our engines on the dumped workloads (the dump's counts: the first matcher's).
    limit=$(left)
    [ "$limit" -gt 20 ] || { echo "dense_bench-$N 0 skipped" | tee -a "$OUT/times.txt"; continue; }
    [ "$limit" -lt 150 ] || limit=150
    step "dense_bench-$N" "$limit" "$B" --filters "$N" --events 2000 --matchers hybrid,bit \
        --only "$ONLY" --dump "$R/dumps" >"$O/gpu-match-$N.txt" 2>&1
    # 4. HEM on the same workloads, listing its answers (a run only while time is left).
    if [ "$HAVE_HEM" = 1 ]; then
        s=$(date +%s)
        for W in ${ONLY//,/ }; do
            for V in dd avx; do
                for BE in 4 6; do
                    [ -x "$R/b-$N/hem-$V-$N" ] && [ -f "$R/dumps/dense-$W-$N.txt" ] || continue
                    [ "$(left)" -gt 10 ] || continue
                    printf "workload=%s " "$W" >>"$O/hem-$N.txt"
                    HEM_LIST=1 timeout 60 "$R/b-$N/hem-$V-$N" "$R/dumps/dense-$W-$N.txt" "$T" "$BE" \
                        >>"$O/hem-$N.txt" 2>&1
                done
            done
        done
        echo "hem-$N $(($(date +%s) - s)) 0" | tee -a "$OUT/times.txt"
    fi
    rm -rf "$R/dumps"
done
# The build logs beside the results; the builds go (disk).
for N in $SIZES; do cp "$R/b-$N"/build-*.log "$O/" 2>/dev/null; done
rm -rf "$R"/b-*
tar czf "$OUT/hem-csv.tgz" -C "$R" $(cd "$R" && ls -d [0-9]* 2>/dev/null) 2>/dev/null
tail -n 30 "$OUT"/harness-*.txt 2>/dev/null | grep -v "^$" | cut -c1-400
cat "$OUT/times.txt"
