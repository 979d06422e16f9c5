#!/usr/bin/env bash
# Newcomer command 2: installs missing Debian packages, builds everything and runs every test
# with ctest. Set SANITIZE=1 for an ASan+UBSan build (in build-asan/).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --extra
if [[ "${SANITIZE:-0}" == 1 ]]; then
  export BUILD_DIR=${BUILD_DIR:-build-asan}
  scripts/build.sh -DPPDEPLOY_TESTS=ON -DPPDEPLOY_SANITIZE=ON -DPPDEPLOY_BENCH=OFF -DCMAKE_BUILD_TYPE=Debug
else
  export BUILD_DIR=${BUILD_DIR:-build}
  # Explicit: scripts/plan.sh configures the same build dir without tests.
  scripts/build.sh -DPPDEPLOY_TESTS=ON -DPPDEPLOY_BENCH=ON -DPPDEPLOY_SANITIZE=OFF
fi
cd "$BUILD_DIR"
ctest --output-on-failure --no-tests=error -j "${JOBS:-$(nproc)}" --timeout 600
