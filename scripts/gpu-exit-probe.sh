#!/usr/bin/env bash
# What a process that opened the GPU pays at exit: scripts/probe/exit.c built with the
# machine's CUDA and run in each exit mode and size, the wall time after its last line
# measured from outside; and, if $BIN/harness is given, `ccm match` with --stats under
# strace (the time of exit_group against the process's end). Writes $OUT/exit.txt.
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
if [ -x "${BIN:-}/harness" ]; then
  H=$BIN/harness; W=$(mktemp -d)
  timeout 60 $H ccm generate --out-subscriptions $W/s.jsonl --out-events $W/e.jsonl --events 1000000 >> "$L" 2>&1
  cat $W/*.jsonl > /dev/null
  for r in 1 2; do
    s=$(ns); timeout 60 $H ccm match --subscriptions $W/s.jsonl --events $W/e.jsonl --stats > $W/out.txt 2> $W/stats.txt; e=$(ns)
    echo "ccm match run $r: whole $(awk "BEGIN{print $e - $s}") s; $(grep 'process so far' $W/stats.txt)" >> "$L"
  done
  if command -v strace > /dev/null; then
    s=$(ns); timeout 60 strace -f -ttt -e trace=exit_group,exit -o $W/strace.txt $H ccm match --subscriptions $W/s.jsonl --events $W/e.jsonl --stats > $W/out.txt 2> $W/stats.txt; e=$(ns)
    echo "under strace: start $s end $e; $(grep 'process so far' $W/stats.txt)" >> "$L"; tail -5 $W/strace.txt >> "$L"
  else echo "no strace" >> "$L"; fi
  if command -v perf > /dev/null; then echo "perf present" >> "$L"; fi
  rm -rf $W
fi
# The same command's output through a pipe: the reader must see its end when the command
# exits, not when the driver's teardown ends (BASE: an older binary to compare with).
if [ -x "${BIN:-}/harness" ]; then
  H=$BIN/harness; W=$(mktemp -d)
  timeout 60 $H ccm generate --out-subscriptions $W/s.jsonl --out-events $W/e.jsonl --events 1000000 > /dev/null 2>&1
  cat $W/*.jsonl > /dev/null
  for b in $H ${BASE:-}; do for r in 1 2 3; do
    s=$(ns); timeout 60 $b ccm match --subscriptions $W/s.jsonl --events $W/e.jsonl --stats 2> $W/stats.txt | md5sum > $W/md5; e=$(ns)
    echo "$b piped run $r: whole $(awk "BEGIN{print $e - $s}") s; md5 $(cut -c1-12 $W/md5); $(grep 'process so far' $W/stats.txt)" >> "$L"
  done; done
  sleep 2; echo "after: $(nvidia-smi --query-compute-apps=pid --format=csv,noheader | wc -l) processes on the GPU" >> "$L"
  rm -rf $W
fi
cat "$L"
