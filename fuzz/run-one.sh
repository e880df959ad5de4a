#!/bin/sh
# Runs one fuzz target for N seconds (default 600) the way fuzz/README.md records runs:
# one job, one worker, niced; generated corpus in /tmp/fuzzcorp/<target>, the committed
# seeds in fuzz/corpus/<target> read only, crashes in fuzz/artifacts/<target>/, libFuzzer's
# log in /tmp/fuzzrun/<target>/fuzz-0.log. Uses the binary `cargo fuzz build` left
# (FUZZ_BIN_DIR=target/nosan/x86_64-unknown-linux-gnu/release for the sanitizer-free
# build of the differential targets; FUZZ_TIMEOUT: seconds per input, default 10).
set -eu
t=$1; secs=${2:-600}
here=$(cd "$(dirname "$0")" && pwd)
bin_dir=${FUZZ_BIN_DIR:-target/x86_64-unknown-linux-gnu/release}
case $bin_dir in /*) ;; *) bin_dir=$here/$bin_dir ;; esac
bin=$bin_dir/$t
mkdir -p /tmp/fuzzcorp/$t /tmp/fuzzrun/$t "$here/artifacts/$t"
cd /tmp/fuzzrun/$t
rm -f fuzz-0.log
exec nice -n 10 "$bin" /tmp/fuzzcorp/$t "$here/corpus/$t" -max_total_time=$secs -timeout=${FUZZ_TIMEOUT:-10} \
    -jobs=1 -workers=1 -artifact_prefix="$here/artifacts/$t/" -print_final_stats=1
