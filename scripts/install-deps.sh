#!/usr/bin/env bash
# Installs the Debian packages ppdeploy builds with, only those that are missing.
# Usage: scripts/install-deps.sh            (build + test dependencies)
#        scripts/install-deps.sh --extra    (also Chromium and the npm client used by some tests)
set -euo pipefail
pkgs=(build-essential cmake ninja-build pkg-config
      libcli11-dev nlohmann-json3-dev libfmt-dev libspdlog-dev
      libcurl4-openssl-dev libtomlplusplus-dev libboost1.81-dev libboost-math1.81-dev
      googletest libgtest-dev libgmock-dev libbenchmark-dev
      clang-14 libclang-rt-14-dev)
if [[ "${1:-}" == "--extra" ]]; then pkgs+=(chromium nodejs npm); fi
missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# node/npm may come from outside Debian (e.g. a preinstalled toolchain): accept them if on PATH.
if [[ "${1:-}" == "--extra" ]] && command -v node >/dev/null && command -v npm >/dev/null; then
  missing=("${missing[@]/nodejs}"); missing=("${missing[@]/npm}")
  read -r -a missing <<<"${missing[*]}"
fi
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}" >&2
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
