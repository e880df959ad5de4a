#!/usr/bin/env bash
# The machine's floor for a persistent round trip, measured with no Rust in
# the way: builds scripts/probe/ping.cu with nvcc on the GPU machine and prints one CSV
# line per variant (see the file's header). Run from the repository root there:
#   bash scripts/gpu-floor.sh [PINGS]      (writes $OUT/ping.csv when OUT is set)
set -euo pipefail
nvcc -O3 -arch=sm_90 -o /tmp/gpu-match-ping scripts/probe/ping.cu
/tmp/gpu-match-ping "${1:-10000}" | tee "${OUT:-/tmp}/ping.csv"
