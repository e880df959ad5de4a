#!/usr/bin/env bash
# Runs scripts/gpu-final-request.sh on the GPU machine with the binaries carried there
# gzipped (the device tool carries at most 64 MiB): every *.gz of CARRY (default
# .carry/final: harness.gz, and as the steps want harness-old.gz, harness-base.gz,
# dense_bench.gz, ...) is unpacked into /tmp/final-bin, which becomes the request's BIN.
# Other variables (STEPS, DEADLINE_S, PAIRED_SEEDS, HEM_SEEDS, ...) pass through.
#
#     # here: the binaries, stripped and gzipped
#     cargo build --release -p harness && mkdir -p .carry/final
#     strip -o /tmp/harness target/release/harness && gzip -c /tmp/harness > .carry/final/harness.gz
#     # there (device tool, carry [".carry/final"]), from the repository root:
#     STEPS="hem keywords" OUT=$OUT bash scripts/gpu-final-carried.sh
set -uo pipefail
CARRY=${CARRY:-.carry/final}
OUT=${OUT:?OUT: the directory for the results}
mkdir -p /tmp/final-bin
for g in "$CARRY"/*.gz; do
    f=/tmp/final-bin/$(basename "$g" .gz)
    gunzip -c "$g" > "$f" && chmod +x "$f"
done
BIN=/tmp/final-bin OUT=$OUT bash "$(dirname "${BASH_SOURCE[0]}")/gpu-final-request.sh"
