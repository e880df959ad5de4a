#!/usr/bin/env bash
# Throughput regression on a machine with an NVIDIA GPU, CUDA driver and rustup (a
# self-hosted CI runner; .github/workflows/gpu-regress.yml calls this as it is).
#
#   scripts/gpu-regress.sh [TARGET [EXPERIMENT]]     e.g. scripts/gpu-regress.sh ccm
#
# Builds the harness, then reruns the experiments at quick sizes, 5 samples (seeds) per
# point, and compares each point's throughput with results/regress, recorded on the same
# GPU model (`scripts/gpu-session.sh regress` records it): a point is slower only when the
# bootstrap 95% interval of its change excludes no change and the change is beyond 2%.
# The table of what moved goes to standard output; this run's CSVs to $OUT
# (default /tmp/regress-now).
#
# Exit codes: 0 nothing slower; 1 a point is slower, or a run failed (the GPU, engines that
# disagree); 2 bad usage. When results/regress holds nothing for this GPU model, the table
# says so and the run exits 0 with nothing compared (`--allow-empty`): record a baseline on
# this runner first, or set REQUIRE_BASELINE=1 to make that an error (exit 1).
set -euo pipefail
cd "$(dirname "$0")/.."
rustup component add rust-src --toolchain nightly
export GPU_MATCH_REQUIRE_PTX=1
cargo build --release -p harness
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
out=${OUT:-/tmp/regress-now}
allow_empty=--allow-empty
if [ "${REQUIRE_BASELINE:-0}" = 1 ]; then
    allow_empty=
fi
exec ./target/release/harness regress --baseline results/regress --out "$out" $allow_empty "$@"
