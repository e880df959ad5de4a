#!/usr/bin/env bash
# CLCB on the GPU machine: the published peer FAST (Mahmood, Aly et al., ICDE 2018; the
# authors' LFAST, Java) side by side with the project's grid on one core, then the
# recordings of `clcb table2` and `clcb keywords` (3 seeds, every engine), and
# compute-sanitizer racecheck of gpu-dfa's walk (`dfa_split`).
#
# Carried, from the repository root (nothing here is built on the GPU machine):
#   .carry/bin/{harness,keywords_peer,dfa_split}.gz   stripped release binaries of this tree
#       (cargo build --release -p harness; cargo build --release -p baselines --example
#       keywords_peer; cargo build --release -p xml-twig --example dfa_split);
#   .carry/fast/fastjre.tgz     a Java 17 runtime of the two modules FAST needs (jlink
#       --add-modules java.base,java.management; the machine has no Java);
#   .carry/fast/build, .carry/fast/driver   FAST's classes, compiled outside the project
#       from the authors' sources, and the driver that reads keywords_peer's dump.
# Run:  OUT=/some/dir bash scripts/gpu-peers-clcb.sh     (about 550 s; each step bounded)
#
# FAST and the grid run one after the other, each pinned to a core of its own, on the
# same dumped workload (1M subscriptions, rectangles of 1% and 0.01% of the space, 2000
# events), three rounds at 1% and two at 0.01%; each prints its best time per event of 5
# passes (wall and CPU), its answers and their checksum (equal checksums: equal answers).
# Writes under $OUT: gpu.txt, times.txt, fast.txt, racecheck.txt, clcb-table2.txt,
# clcb-keywords.txt and results.tgz (the recorded clcb/table2 and clcb/keywords CSVs).
set -uo pipefail
R=$(pwd)
OUT=${OUT:-/tmp/out}
B=/tmp/peers-bin
mkdir -p "$OUT" "$B"
for f in "$R"/.carry/bin/*.gz; do gunzip -c "$f" > "$B/$(basename "$f" .gz)"; chmod +x "$B/$(basename "$f" .gz)"; done
tar xzf "$R/.carry/fast/fastjre.tgz" -C /tmp
JAVA=/tmp/fastjre/bin/java
F=$R/.carry/fast
export CUDA_MODULE_LOADING=EAGER
{
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1
    echo "cores $(nproc)"
    grep -m1 "model name" /proc/cpuinfo
    "$JAVA" -version 2>&1 | head -1
} | tee "$OUT/gpu.txt"
. "$(dirname "${BASH_SOURCE[0]}")/step-lib.sh"

fast_rounds() {
    for spec in "1.0 3" "0.01 2"; do
        set -- $spec
        local area=$1 rounds=$2 d=/tmp/w-$1
        mkdir -p "$d"
        for round in $(seq "$rounds"); do
            taskset -c 2 "$B/keywords_peer" "$d" 1000000 2000 "$area" rect 1 5 2>&1 | tail -1 |
                sed "s/^/area $area round $round /"
            taskset -c 4 "$JAVA" -Xmx14g -Xms4g -XX:+UseSerialGC -cp "$F/build:$F/driver" FastDriver \
                "$d" 5 1024 9 2>&1 | tail -1 | sed "s/^/area $area round $round /"
        done
    done
}
export -f fast_rounds
export B JAVA F
step fast 260 bash -c fast_rounds > "$OUT/fast.txt" 2>&1

[ "${ONLY_FAST:-0}" = 1 ] && exit 0
step racecheck 60 compute-sanitizer --tool racecheck --print-limit 20 "$B/dfa_split" 2 50 256 \
    > "$OUT/racecheck.txt" 2>&1

for exp in table2 keywords; do
    step "clcb-$exp" 150 "$B/harness" run clcb "$exp" --seeds 3 --out "$OUT/results" \
        > "$OUT/clcb-$exp.txt" 2>&1
done
tar czf "$OUT/results.tgz" -C "$OUT" results && rm -rf "$OUT/results"
