#!/usr/bin/env bash
# Configures and builds ppdeploy into BUILD_DIR (default: build). Extra args go to cmake.
# Usage: scripts/build.sh [cmake -D options...]
set -euo pipefail
cd "$(dirname "$0")/.."
"$(dirname "$0")/install-deps.sh"
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-$(nproc)}
cmake -S . -B "$BUILD_DIR" -G Ninja "$@" >/dev/null
cmake --build "$BUILD_DIR" -j "$JOBS"
