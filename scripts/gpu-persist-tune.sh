#!/usr/bin/env bash
# Issue 16 tuning on the GPU machine (run from the repository root, binaries in .carry/,
# writes to $OUT): the protocol's own cost (persist_latency), then `ccm inflight` for
# the persistent kernel's block size, blocks per SM and fetch mode.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export CUDA_MODULE_LOADING=EAGER
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 40 ./.carry/persist_latency ${PINGS:-20000} | tee "$OUT/persist_latency.csv"
for v in ${VARIANTS:-"256:1:0" "1024:1:0" "1024:2:0" "1024:2:1"}; do
    IFS=: read -r b p d <<<"$v"
    s=$(date +%s)
    GPU_MATCH_PERSIST_BLOCK=$b GPU_MATCH_PERSIST_PER_SM=$p GPU_MATCH_PERSIST_DIRECT=$d \
        timeout ${EACH_S:-40} ./.carry/harness run ccm ${EXP:-inflight} --seeds 1 --out "$OUT/$b-$p-$d" >"$OUT/$b-$p-$d.log" 2>&1
    echo "== block $b, $p per SM, direct $d: rc $? in $(($(date +%s) - s)) s"
    tail -3 "$OUT/$b-$p-$d.log"
    cat "$OUT/$b-$p-$d"/ccm/*.csv 2>/dev/null | head -40
done
