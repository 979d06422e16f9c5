#!/usr/bin/env bash
# Newcomer command 1: installs missing Debian packages, builds, and runs the main job:
# `ppdeploy plan` on the embedded default deployment (extra args go to `ppdeploy plan`).
# Everything the installer and the build print goes to stderr: stdout carries only the plan, so
# `scripts/plan.sh --format json | python3 -m json.tool` works on a fresh clone.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh -DPPDEPLOY_TESTS=OFF -DPPDEPLOY_BENCH=OFF 1>&2
exec build/ppdeploy plan "$@"
