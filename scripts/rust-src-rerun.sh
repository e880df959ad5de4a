#!/usr/bin/env bash
# Shows that the kernel crates' build scripts rerun when rust-src appears in the nightly
# toolchain: build without rust-src (the GPU engines disabled: empty PTX), then
# `rustup component add rust-src --toolchain nightly` as the build's warning says, then
# build again: the PTX must be there, with no edit to any source.
#
# It works on a private copy of rustup's home (hard links, with the files rustup rewrites
# in place copied), so that the toolchains other builds on this machine use are never
# touched: rust-src is removed from and added to the copy's nightly by rustup itself
# (the add downloads the component; offline, the script puts back the files and the
# components list rustup would have written, and says so). It builds gpu-selftest, the
# smallest crate with kernels, in this checkout's target directory.
set -euo pipefail
cd "$(dirname "$0")/.."

real_home=${RUSTUP_HOME:-$HOME/.rustup}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
home="$work/rustup"
cp -al "$real_home" "$home"
# rustup rewrites these in place: break their links to the real home.
find "$home" "$home/update-hashes" "$home"/toolchains/*/lib/rustlib -maxdepth 1 -type f \
    -exec cp "{}" "{}.tmp" \; -exec mv "{}.tmp" "{}" \;
export RUSTUP_HOME="$home"
# A build without rust-src must warn, not fail.
unset GPU_MATCH_REQUIRE_PTX

# The kernels.ptx of the last build of gpu-selftest (its build script's OUT_DIR).
ptx_of_build() {
    local out
    out=$(cargo build --release -p gpu-selftest --message-format=json 2>"$work/build.log" |
        grep '"reason":"build-script-executed"' | grep -o '"out_dir":"[^"]*gpu-selftest-[^"]*"' |
        sed 's/"out_dir":"\(.*\)"/\1/' | tail -n1)
    if [ -z "$out" ]; then
        cat "$work/build.log" >&2
        echo "rust-src-rerun: no build script output for gpu-selftest" >&2
        exit 1
    fi
    echo "$out/kernels.ptx"
}

echo "== 1. nightly without rust-src (in the private rustup home), build"
rustup component remove rust-src --toolchain nightly 2>&1 | sed 's/^/   /' || true
ptx=$(ptx_of_build)
if [ -s "$ptx" ]; then
    echo "rust-src-rerun: FAILED: PTX built without rust-src ($ptx)" >&2
    exit 1
fi
grep -m1 "no rust-src component" "$work/build.log" | sed 's/^/   /' || true
echo "   $ptx: empty (GPU engines disabled), as expected"

echo "== 2. rustup component add rust-src --toolchain nightly, build again"
if ! rustup component add rust-src --toolchain nightly >"$work/add.log" 2>&1; then
    # Offline: put back what the add would have installed (rust-src's files, from the
    # real home, and the components list rustup rewrites), as rustup would.
    sed 's/^/   /' "$work/add.log"
    echo "   (rustup could not download rust-src: restored from $real_home instead)"
    nightly=$(basename "$(ls -d "$home"/toolchains/nightly-*)")
    cp -al "$real_home/toolchains/$nightly/lib/rustlib/src" "$home/toolchains/$nightly/lib/rustlib/"
    cp "$real_home/toolchains/$nightly/lib/rustlib/components" \
        "$home/toolchains/$nightly/lib/rustlib/components"
    touch "$home/toolchains/$nightly/lib/rustlib/components"
else
    sed 's/^/   /' "$work/add.log"
fi
ptx=$(ptx_of_build)
if [ ! -s "$ptx" ]; then
    cat "$work/build.log" >&2
    echo "rust-src-rerun: FAILED: the PTX is still empty after adding rust-src ($ptx):" \
        "the build script did not rerun" >&2
    exit 1
fi
echo "   $ptx: $(wc -c <"$ptx") bytes of PTX"
echo "rust-src-rerun: OK: adding rust-src enabled the GPU engines at the next build"

# Back to the real rustup home: the build script reruns (RUSTUP_HOME changed) and the
# crate is built as before.
unset RUSTUP_HOME
cargo build --release -p gpu-selftest 2>/dev/null
