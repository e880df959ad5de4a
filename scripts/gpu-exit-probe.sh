#!/usr/bin/env bash
# What a process that opened the GPU pays at exit: scripts/probe/exit.c built with the
# machine's CUDA and run in each exit mode and size, the wall time after its last line
# measured from outside (MODES: which exits); and, if $BIN/harness is given,
# scripts/probe/exit-check.sh on it (and on $BASE). Writes $OUT/exit.txt.
set -uo pipefail
OUT=${OUT:-out}; mkdir -p "$OUT"; L="$OUT/exit.txt"
CUDA=${CUDA:-$(dirname "$(dirname "$(command -v nvcc)")")}
D=$(dirname "$0")
cc -O2 "$D/probe/exit.c" -o /tmp/exitprobe -I"$CUDA/include" -L"$CUDA/lib64/stubs" -L"$CUDA/lib64" -lcuda >> "$L" 2>&1 || { echo "build failed" >> "$L"; exit 1; }
ns() { date +%s.%N; }
for sz in "64 1024" "1024 1024" "4096 8192"; do
  for m in ${MODES:-ret _exit destroy ret _exit destroy}; do
    s=$(ns); o=$(/tmp/exitprobe $m $sz 2>&1); e=$(ns)
    leave=$(echo "$o" | sed -n 's/.*leaving at \([0-9.]*\).*/\1/p')
    echo "$sz $m: $(echo "$o" | tr '\n' ' ') | after last line $(awk "BEGIN{print $e - ${leave:-$e}}") s, whole $(awk "BEGIN{print $e - $s}") s" >> "$L"
  done
done
# The harness's own exit after a GPU command (against $BASE when given).
if [ -x "${BIN:-}/harness" ]; then
  H=$BIN/harness B=${BASE:-} bash "$D/probe/exit-check.sh" >> "$L" 2>&1
fi
cat "$L"
