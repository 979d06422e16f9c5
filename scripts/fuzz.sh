#!/usr/bin/env bash
# Builds the libFuzzer targets with clang-14 and runs each for N seconds (default 60) on its
# seed corpus in fuzz/corpus/<target>. Fails on any crash, leak or sanitizer report.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_TARGET=${1:-60}
scripts/install-deps.sh
BUILD_DIR=build-fuzz
CC=clang-14 CXX=clang++-14 cmake -S . -B "$BUILD_DIR" -G Ninja -DPPDEPLOY_FUZZ=ON -DPPDEPLOY_TESTS=OFF \
  -DPPDEPLOY_BENCH=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address,undefined" >/dev/null
cmake --build "$BUILD_DIR" -j "${JOBS:-$(nproc)}" --target fuzz_targets
shopt -s nullglob
for bin in "$BUILD_DIR"/*_fuzz; do
  name=$(basename "$bin")
  corpus=fuzz/corpus/${name%_fuzz}
  work=$(mktemp -d)
  [[ -d $corpus ]] && cp -r "$corpus"/. "$work"/
  echo "fuzz: $name for ${SECONDS_PER_TARGET}s"
  "$bin" -max_total_time="$SECONDS_PER_TARGET" -max_len=65536 -rss_limit_mb=4096 "$work" 2>&1 | tail -n 3
  rm -rf "$work"
done
