#!/usr/bin/env bash
# Newcomer command 2: installs missing Debian packages, builds everything and runs every test
# with ctest. Set SANITIZE=1 for an ASan+UBSan build (in build-asan/). Warnings are errors here
# (PPDEPLOY_WERROR=ON, the developer/CI option); a plain or Release cmake build does not use it.
# Set CPU_LOAD=1 to run ctest while every core is busy (scripts/with-cpu-load.sh), as CI does, and
# CMAKE_BUILD_TYPE=Release for a Release build (CI; default: the project's RelWithDebInfo).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --extra
if [[ "${SANITIZE:-0}" == 1 ]]; then
  export BUILD_DIR=${BUILD_DIR:-build-asan}
  scripts/build.sh -DPPDEPLOY_TESTS=ON -DPPDEPLOY_SANITIZE=ON -DPPDEPLOY_BENCH=OFF -DCMAKE_BUILD_TYPE=Debug \
    -DPPDEPLOY_WERROR=ON
else
  export BUILD_DIR=${BUILD_DIR:-build}
  # Explicit: scripts/plan.sh configures the same build dir without tests.
  scripts/build.sh -DPPDEPLOY_TESTS=ON -DPPDEPLOY_BENCH=ON -DPPDEPLOY_SANITIZE=OFF -DPPDEPLOY_WERROR=ON \
    ${CMAKE_BUILD_TYPE:+-DCMAKE_BUILD_TYPE=$CMAKE_BUILD_TYPE}
fi
load=()
[[ "${CPU_LOAD:-0}" == 1 ]] && load=("$PWD/scripts/with-cpu-load.sh")
cd "$BUILD_DIR"
"${load[@]}" ctest --output-on-failure --no-tests=error -j "${JOBS:-$(nproc)}" --timeout 600
