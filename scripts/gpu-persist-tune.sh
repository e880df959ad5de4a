#!/usr/bin/env bash
# Issue 16 on the GPU machine (run from the repository root with the release binaries
# in .carry/: harness and persist_latency; writes to $OUT): the persistent protocol's own
# cost with empty requests (persist_latency: p50/p99/p99.9, 8 in flight, stage stamps),
# then CCM's latency and in-flight experiments (every answer checked against SFF).
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export CUDA_MODULE_LOADING=EAGER
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 60 ./.carry/persist_latency "${PINGS:-20000}" | tee "$OUT/persist_latency.csv"
for e in latency inflight; do
    timeout 120 ./.carry/harness run ccm $e --seeds 1 --out "$OUT/runs" >"$OUT/ccm-$e.log" 2>&1
    echo "== ccm $e: exit $?"
    grep -v "^ " "$OUT/ccm-$e.log" | tail -2
    cut -d, -f3-5 "$OUT/runs/ccm/$e.csv" 2>/dev/null
done
rm -f "$OUT"/runs/ccm/*.png "$OUT"/runs/ccm/*.svg
