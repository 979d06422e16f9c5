#!/usr/bin/env bash
# Newcomer command 1: installs missing Debian packages, builds, and runs the main job:
# `ppdeploy plan` on the embedded default deployment (extra args go to `ppdeploy plan`).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh -DPPDEPLOY_TESTS=OFF -DPPDEPLOY_BENCH=OFF
exec build/ppdeploy plan "$@"
