#!/usr/bin/env bash
# Persistent-kernel and typed-launch check on the GPU machine (release binaries in
# .carry/): self-tests, the persistent protocol's cost (persist_latency), CCM and CLCB
# latency at full size with the stage stamps (GPU_MATCH_PERSIST_STAMPS), every answer
# checked against the CPU. Writes its logs under $OUT.
set -uo pipefail
H=./.carry/harness
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
$H selftest 2>&1 | tail -9 | tee "$OUT/selftest.txt"
./.carry/persist_latency "${PINGS:-5000}" 2>&1 | tee "$OUT/persist_latency.csv"
for e in ${EXPERIMENTS:-ccm/latency clcb/latency}; do
    GPU_MATCH_PERSIST_STAMPS=20000 timeout 200 $H run ${e%/*} ${e#*/} --seeds 1 \
        --out /tmp/check 2>&1 | grep -E "persistent kernel|rror|mismatch|ok in" \
        | sed 's/µs after block 0 saw the request//' | tee -a "$OUT/stages.txt"
    grep -h "persistent" /tmp/check/$e.csv | cut -d, -f3-5 | tee -a "$OUT/stages.txt"
done
