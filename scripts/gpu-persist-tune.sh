#!/usr/bin/env bash
# Persistent-kernel tuning on the GPU machine (run from the repository root with the
# release binaries in .carry/: harness, persist_latency, persist_probe, persist_tune;
# writes to $OUT): what each part of a persistent round trip costs (persist_probe), the
# protocol's own cost with empty requests over grids (persist_latency: p50/p99/p99.9, 8
# in flight, stage stamps), CCM's grid and block size (persist_tune, every answer
# checked against SFF), then CCM's and CLCB's latency experiments (every answer checked).
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export CUDA_MODULE_LOADING=EAGER
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
PINGS=${PINGS:-10000}
timeout 90 ./.carry/persist_probe "$PINGS" 2>&1 | tee "$OUT/persist_probe.csv"
timeout 90 ./.carry/persist_latency "$PINGS" 2>&1 | tee "$OUT/persist_latency.csv"
timeout 150 ./.carry/persist_tune "${EVENTS:-5000}" 2>&1 | tee "$OUT/persist_tune.csv"
for e in ${EXPS:-ccm/latency clcb/latency}; do
    timeout 150 ./.carry/harness run ${e%/*} ${e#*/} --seeds 1 --out "$OUT/runs" >"$OUT/${e/\//-}.log" 2>&1
    echo "== $e: exit $?"
    grep -v "^ " "$OUT/${e/\//-}.log" | tail -3
    cut -d, -f3-5 "$OUT/runs/$e.csv" 2>/dev/null
done
rm -f "$OUT"/runs/*/*.png "$OUT"/runs/*/*.svg
tar czf "$OUT/runs.tgz" -C "$OUT" runs && rm -rf "$OUT/runs"
